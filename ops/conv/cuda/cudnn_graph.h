// A thin C++ layer over cuDNN 9's backend (graph) C API: owned descriptors, attribute setters,
// and per-device handles bound to the current stream.
//
// Building a graph can fail for reasons that only mean "cuDNN does not do this configuration"
// (no engine, a finalize that refuses, an unsupported layout). Those failures throw `Rejected`,
// which the convolution entry points catch to fall back to the im2col path.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>
#include <vector>

namespace convx::cuda::cudnn {

struct Rejected {
  cudnnStatus_t status;
  const char* where;
};

// Throws Rejected when `s` is not CUDNN_STATUS_SUCCESS.
void require(cudnnStatus_t s, const char* where);

// One backend descriptor, destroyed with its owner. Move-only.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type);
  ~Desc();
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc& operator=(Desc&& o) noexcept;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* ptr() { return &d_; }

  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
            const void* values);
  Desc& set_int(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
    return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
  }
  Desc& set_int(cudnnBackendAttributeName_t name, int64_t v) { return set(name, CUDNN_TYPE_INT64, 1, &v); }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& d) {
    auto raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  Desc& set_type(cudnnBackendAttributeName_t name, cudnnDataType_t t) {
    return set(name, CUDNN_TYPE_DATA_TYPE, 1, &t);
  }
  // Throws Rejected when cuDNN refuses the descriptor.
  Desc& finalize(const char* where);
  // The status instead of a throw: for execution plans, which are tried one after another.
  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// This thread's handle for the current device, bound to the current stream. Handles come from a
// per-device pool: a thread returns its handles when it ends, and none is destroyed (destroying
// them at process exit would race the CUDA context's own teardown).
cudnnHandle_t current_handle();

}  // namespace convx::cuda::cudnn
