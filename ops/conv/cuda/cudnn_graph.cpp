#include "ops/conv/cuda/cudnn_graph.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>

namespace convx::cuda::cudnn {

void require(cudnnStatus_t s, const char* where) {
  if (s != CUDNN_STATUS_SUCCESS) throw Rejected{s, where};
}

Desc::Desc(cudnnBackendDescriptorType_t type) {
  require(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
}

Desc::~Desc() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Desc& Desc::operator=(Desc&& o) noexcept {
  if (this != &o) {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

Desc& Desc::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                const void* values) {
  require(cudnnBackendSetAttribute(d_, name, type, count, values), "cudnnBackendSetAttribute");
  return *this;
}

Desc& Desc::finalize(const char* where) {
  require(cudnnBackendFinalize(d_), where);
  return *this;
}

namespace {

// Free handles per device. Leaked on purpose (see the header).
struct Pool {
  std::mutex mutex;
  std::unordered_map<int, std::vector<cudnnHandle_t>> free;
};

Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

// The handles one thread holds, one per device, returned to the pool when the thread ends.
struct Lease {
  std::unordered_map<int, cudnnHandle_t> held;
  ~Lease() {
    auto& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (auto& [dev, h] : held) p.free[dev].push_back(h);
  }
};

}  // namespace

cudnnHandle_t current_handle() {
  thread_local Lease lease;
  const int dev = c10::cuda::current_device();
  auto it = lease.held.find(dev);
  cudnnHandle_t h = nullptr;
  if (it != lease.held.end()) {
    h = it->second;
  } else {
    {
      auto& p = pool();
      std::lock_guard<std::mutex> lock(p.mutex);
      auto& v = p.free[dev];
      if (!v.empty()) {
        h = v.back();
        v.pop_back();
      }
    }
    if (!h) {
      const auto s = cudnnCreate(&h);
      TORCH_CHECK(s == CUDNN_STATUS_SUCCESS, "convx: cudnnCreate failed on cuda:", dev, ": ",
                  cudnnGetErrorString(s));
    }
    lease.held.emplace(dev, h);
  }
  const auto s = cudnnSetStream(h, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(s == CUDNN_STATUS_SUCCESS, "convx: cudnnSetStream failed: ", cudnnGetErrorString(s));
  return h;
}

}  // namespace convx::cuda::cudnn
