// Dense convolution through cuDNN 9's graph API: forward, backward-data (which is also the
// transposed convolution) and backward-filter, with the bias fused into the same graph.
//
// One call: describe the problem (sizes, layout, dtype, parameters, flags), look its execution
// plan up in a cache (building it on a miss: operation graph -> heuristics -> the first engine
// config that finalises, or the fastest of them when torch.backends.cudnn.benchmark is set),
// then run it with a workspace from PyTorch's caching allocator on the current stream. Nothing
// synchronises the device except autotuning, which is skipped during CUDA-graph capture.
#include "ops/conv/cuda/cudnn_graph.h"
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace convx::cuda {
namespace {

using cudnn::Desc;
using cudnn::Rejected;
using cudnn::require;

enum class Op : int64_t { Forward, DataGrad, WeightGrad };

// Unique ids of the graph's tensors: the forward convolution's x, w, y, the bias and the
// un-biased (virtual) convolution result.
enum Uid : int64_t { kX = 1, kW = 2, kY = 3, kBias = 4, kConvResult = 5 };

// Everything that decides the execution plan. Sizes are cuDNN's: rank 1 gains a unit height.
struct Problem {
  Op op = Op::Forward;
  at::ScalarType dtype = at::kFloat;
  bool channels_last = false, bias = false;
  std::vector<int64_t> x, w, y;  // dims of the forward convolution's operands
  std::vector<int64_t> stride, padding, dilation;
  int64_t alignment = 16;
  bool deterministic = false, tf32 = false, benchmark = false;

  std::vector<int64_t> key(cudnnHandle_t h) const {
    std::vector<int64_t> k{static_cast<int64_t>(op), static_cast<int64_t>(dtype), channels_last,
                           bias, alignment, deterministic, tf32, benchmark,
                           c10::cuda::current_device(), reinterpret_cast<int64_t>(h)};
    for (const auto* v : {&x, &w, &y, &stride, &padding, &dilation}) {
      k.push_back(static_cast<int64_t>(v->size()));
      k.insert(k.end(), v->begin(), v->end());
    }
    return k;
  }
  // The tensor the operation writes (the bias is added to it).
  const std::vector<int64_t>& result() const {
    return op == Op::Forward ? y : op == Op::DataGrad ? x : w;
  }
};

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims, bool channels_last) {
  const int64_t n = static_cast<int64_t>(dims.size());
  std::vector<int64_t> s(n);
  int64_t acc = 1;
  if (channels_last) {
    s[1] = acc;
    acc *= dims[1];
    for (int64_t i = n - 1; i >= 2; --i) s[i] = acc, acc *= dims[i];
    s[0] = acc;
  } else {
    for (int64_t i = n - 1; i >= 0; --i) s[i] = acc, acc *= dims[i];
  }
  return s;
}

std::vector<int64_t> cudnn_dims(const Tensor& t, int64_t rank) {
  auto d = t.sizes().vec();
  if (rank == 1) d.insert(d.begin() + 2, 1);  // cuDNN convolves 2-D and 3-D only
  return d;
}

cudnnDataType_t data_type(at::ScalarType t) {
  switch (t) {
    case at::kDouble: return CUDNN_DATA_DOUBLE;
    case at::kFloat: return CUDNN_DATA_FLOAT;
    case at::kHalf: return CUDNN_DATA_HALF;
    case at::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: throw Rejected{CUDNN_STATUS_NOT_SUPPORTED, "dtype"};
  }
}

cudnnDataType_t compute_type(at::ScalarType t) {
  return t == at::kDouble ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

Desc tensor(Uid uid, const std::vector<int64_t>& dims, bool channels_last, cudnnDataType_t type,
            int64_t alignment, bool is_virtual = false) {
  Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .set_int(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_int(CUDNN_ATTR_TENSOR_STRIDES, packed_strides(dims, channels_last))
      .set_int(CUDNN_ATTR_TENSOR_UNIQUE_ID, static_cast<int64_t>(uid))
      .set_int(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual)
      .finalize("tensor descriptor");
  return d;
}

// The descriptors of the operation graph, the graph itself last. Kept alive with the plans
// built from it.
std::vector<Desc> build_graph(const Problem& p, cudnnHandle_t h) {
  const auto type = data_type(p.dtype), comp = compute_type(p.dtype);
  const bool cl = p.channels_last;
  std::vector<Desc> parts;
  parts.reserve(16);  // references into it are held below
  const Uid result_uid = p.op == Op::Forward ? kY : p.op == Op::DataGrad ? kX : kW;
  auto uid_of = [&](Uid u) { return p.bias && u == result_uid ? kConvResult : u; };
  // Under a fused bias the convolution writes a virtual float tensor that the ADD reads.
  auto conv_tensor = [&](Uid u, const std::vector<int64_t>& dims) {
    const bool virt = uid_of(u) == kConvResult;
    return tensor(uid_of(u), dims, cl, virt ? comp : type, p.alignment, virt);
  };
  parts.push_back(conv_tensor(kX, p.x));
  parts.push_back(conv_tensor(kW, p.w));
  parts.push_back(conv_tensor(kY, p.y));
  const Desc &x = parts[0], &w = parts[1], &y = parts[2];

  const int64_t spatial = static_cast<int64_t>(p.stride.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, comp)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set_int(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, spatial)
      .set_int(CUDNN_ATTR_CONVOLUTION_DILATIONS, p.dilation)
      .set_int(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, p.stride)
      .set_int(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, p.padding)
      .set_int(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, p.padding)
      .finalize("convolution descriptor");

  // Scaling factors: double for double data, float otherwise.
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const bool dbl = p.dtype == at::kDouble;
  const auto st = dbl ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;

  std::vector<Desc> ops;
  switch (p.op) {
    case Op::Forward:
      ops.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      ops.back()
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, st, 1, alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, st, 1, beta);
      break;
    case Op::DataGrad:
      ops.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      ops.back()
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, st, 1, alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, st, 1, beta);
      break;
    case Op::WeightGrad:
      ops.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      ops.back()
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y)
          .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, st, 1, alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, st, 1, beta);
      break;
  }
  ops.back().finalize("convolution operation");
  parts.push_back(std::move(conv));

  if (p.bias) {
    const Desc& conv_result = p.op == Op::Forward ? y : x;
    std::vector<int64_t> bdims(p.result().size(), 1);
    bdims[1] = p.result()[1];
    parts.push_back(tensor(kBias, bdims, cl, type, p.alignment));
    parts.push_back(tensor(result_uid, p.result(), cl, type, p.alignment));
    const Desc &b = parts[parts.size() - 2], &out = parts.back();
    const cudnnPointwiseMode_t add = CUDNN_POINTWISE_ADD;
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &add)
        .set_type(CUDNN_ATTR_POINTWISE_MATH_PREC, comp)
        .finalize("pointwise descriptor");
    ops.emplace_back(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    ops.back()
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, conv_result)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out)
        .finalize("bias operation");
    parts.push_back(std::move(pw));
  }

  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& o : ops) raw.push_back(o.get());
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  // The graph's handle attribute is deprecated in newer cuDNN 9 releases, required in older ones.
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
            static_cast<int64_t>(raw.size()), raw.data())
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
      .finalize("operation graph");
  for (auto& o : ops) parts.push_back(std::move(o));
  parts.push_back(std::move(graph));
  return parts;
}

// Engine configs the heuristic of `mode` proposes, best first.
std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) return {};
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr) != CUDNN_STATUS_SUCCESS) {
    return {};
  }
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  if (count == 0 ||
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()) != CUDNN_STATUS_SUCCESS) {
    return {};
  }
  cfgs.erase(cfgs.begin() + std::min(got, count), cfgs.end());
  return cfgs;
}

// PyTorch's rules for cuDNN engines: none that down-converts inputs; no nondeterministic one
// under torch.backends.cudnn.deterministic / use_deterministic_algorithms; no tensor cores for
// float32 unless TF32 is allowed; no reduced-precision reductions for float32/float64.
bool acceptable(const Desc& cfg, const Problem& p) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               1, &n, engine.ptr()) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                               CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                               notes) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  const bool wide = p.dtype == at::kFloat || p.dtype == at::kDouble;
  for (int64_t i = 0; i < count; ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return false;
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        if (p.deterministic) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        if (p.dtype == at::kFloat && !p.tf32) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        if (wide) return false;
        break;
      default: break;
    }
  }
  return true;
}

struct Plan {
  std::vector<Desc> graph;  // what the plan was built from
  Desc config;
  Desc plan;
  int64_t workspace = 0;
};

struct Pointers {
  void* x;
  void* w;
  void* y;
  void* bias;  // null when the bias is not fused
};

void execute(const Plan& plan, cudnnHandle_t h, const Pointers& ptr, const at::TensorOptions& opts) {
  Tensor ws;
  void* wsp = nullptr;
  if (plan.workspace > 0) {
    ws = at::empty({plan.workspace}, opts.dtype(at::kByte));
    wsp = ws.data_ptr();
  }
  std::vector<int64_t> uids{kX, kW, kY};
  std::vector<void*> data{ptr.x, ptr.w, ptr.y};
  if (ptr.bias) uids.push_back(kBias), data.push_back(ptr.bias);
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set_int(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
           static_cast<int64_t>(data.size()), data.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp)
      .finalize("variant pack");
  require(cudnnBackendExecute(h, plan.plan.get(), pack.get()), "cudnnBackendExecute");
}

// Milliseconds of one run of `plan` (the first run, untimed, warms it up).
float time_plan(const Plan& plan, cudnnHandle_t h, const Pointers& ptr, const at::TensorOptions& opts) {
  const auto stream = c10::cuda::getCurrentCUDAStream().stream();
  cudaEvent_t start, stop;
  C10_CUDA_CHECK(cudaEventCreate(&start));
  C10_CUDA_CHECK(cudaEventCreate(&stop));
  float best = 0;
  try {
    execute(plan, h, ptr, opts);
    for (int i = 0; i < 2; ++i) {
      C10_CUDA_CHECK(cudaEventRecord(start, stream));
      execute(plan, h, ptr, opts);
      C10_CUDA_CHECK(cudaEventRecord(stop, stream));
      C10_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      C10_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      best = i == 0 ? ms : std::min(best, ms);
    }
  } catch (const Rejected&) {
    best = -1;
  } catch (const c10::OutOfMemoryError&) {
    best = -1;  // this candidate's workspace does not fit: not a candidate
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream().stream(), &status));
  return status != cudaStreamCaptureStatusNone;
}

// The plan for `p`, or null when no engine takes it. Heuristics first (mode A, then the
// fallback engines); under benchmark mode the candidates that finalise are timed once on the
// real operands and the fastest kept.
std::shared_ptr<Plan> build_plan(const Problem& p, cudnnHandle_t h, const Pointers& ptr,
                                 const at::TensorOptions& opts) {
  std::vector<Desc> graph;
  try {
    graph = build_graph(p, h);
  } catch (const Rejected&) {
    return nullptr;
  }
  const bool tune = p.benchmark && !capturing();
  const int limit = at::globalContext().benchmarkLimitCuDNN();
  std::shared_ptr<Plan> best;
  float best_ms = 0;
  int tried = 0;
  for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (auto& cfg : engine_configs(graph.back(), mode)) {
      if (!acceptable(cfg, p)) continue;
      Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
      if (plan.try_finalize() != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                   CUDNN_TYPE_INT64, 1, &n, &ws) != CUDNN_STATUS_SUCCESS) {
        continue;
      }
      auto candidate = std::make_shared<Plan>(Plan{{}, std::move(cfg), std::move(plan), ws});
      if (!tune) {
        candidate->graph = std::move(graph);
        return candidate;
      }
      const float ms = time_plan(*candidate, h, ptr, opts);
      if (ms >= 0 && (!best || ms < best_ms)) best = candidate, best_ms = ms;
      if (limit > 0 && ++tried >= limit) break;
    }
    if (best && limit > 0 && tried >= limit) break;
  }
  if (best) best->graph = std::move(graph);
  return best;
}

struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans;  // null: cuDNN has none
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: plans must not be destroyed after cuDNN unloads
  return *c;
}

// Runs `p` on the pointers; false when cuDNN has no plan for it.
bool run(const Problem& p, const Pointers& ptr, const at::TensorOptions& opts) {
  cudnnHandle_t h = cudnn::current_handle();
  const auto key = p.key(h);
  std::shared_ptr<Plan> plan;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = cache().plans.find(key);
    if (it != cache().plans.end()) known = true, plan = it->second;
  }
  if (!known) {
    // Built outside the lock: the key holds this thread's handle, so no other thread builds it.
    plan = build_plan(p, h, ptr, opts);
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().plans.emplace(key, plan);
  }
  if (!plan) return false;
  try {
    execute(*plan, h, ptr, opts);
  } catch (const Rejected&) {
    return false;
  }
  return true;
}

bool strictly_channels_last(const Tensor& t) { return has_layout(t, true) && !has_layout(t, false); }

// The layout cuDNN sees every operand in: the output's (dense, as ops/front.h allocates it).
// An output that is both (unit channels, or a 1x1 kernel's weight-grad) takes the operands'
// layout, so that a channels-last model's pointwise convolutions copy nothing.
std::optional<bool> layout_of(const Tensor& out, const Tensor& a, const Tensor& b) {
  const bool nchw = has_layout(out, false), cl = has_layout(out, true);
  if (nchw && cl) return strictly_channels_last(a) || strictly_channels_last(b);
  if (nchw || cl) return cl;
  return std::nullopt;
}

int64_t alignment_of(std::initializer_list<const void*> ptrs) {
  int64_t a = 16;
  for (const void* p : ptrs) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    while (a > 1 && v % a != 0) a /= 2;
  }
  return a;
}

bool supported_dtype(at::ScalarType t) {
  return t == at::kDouble || t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

Problem make_problem(Op op, const ConvArgs& a, const Tensor& x, const Tensor& w, const Tensor& y,
                     bool channels_last) {
  Problem p;
  p.op = op;
  p.dtype = x.scalar_type();
  p.channels_last = channels_last;
  p.x = cudnn_dims(x, a.rank);
  p.w = cudnn_dims(w, a.rank);
  p.y = cudnn_dims(y, a.rank);
  p.stride = a.stride, p.padding = a.padding, p.dilation = a.dilation;
  if (a.rank == 1) {
    p.stride.insert(p.stride.begin(), 1);
    p.padding.insert(p.padding.begin(), 0);
    p.dilation.insert(p.dilation.begin(), 1);
  }
  auto& ctx = at::globalContext();
  p.deterministic = ctx.deterministicCuDNN() || ctx.deterministicAlgorithms();
  p.tf32 = p.dtype == at::kFloat && tf32_allowed_for_conv();
  p.benchmark = ctx.benchmarkCuDNN();
  return p;
}

void add_bias(const Tensor& out, const Tensor& bias) {
  std::vector<int64_t> shape(out.dim(), 1);
  shape[1] = out.size(1);
  out.add_(bias.view(shape));
}

// Whether the bias is fused into the cuDNN graph or added after it by one kernel (as aten does).
// Measured on the H100 (bench/gpu_dense_bench.py, "sepbias" column; docs/performance.md): the
// fused graph wins (10-15%) only for 16-bit channels-last convolutions of one group and rank
// <= 2 with more than a few output channels; elsewhere cuDNN's fused engines were as fast or far
// slower (channels-last, 4 groups, fp32/fp16: 5-9x; 3 output channels: 3x). CONVX_CUDNN_BIAS
// (environment, read on every call) = fused | separate | auto (the default) overrides.
bool fuse_bias(const ConvArgs& a, const Tensor& result, bool channels_last) {
  const char* e = std::getenv("CONVX_CUDNN_BIAS");
  if (e != nullptr && std::strcmp(e, "fused") == 0) return true;
  if (e != nullptr && std::strcmp(e, "separate") == 0) return false;
  TORCH_CHECK(e == nullptr || std::strcmp(e, "auto") == 0,
              "convx: CONVX_CUDNN_BIAS must be 'fused', 'separate', 'auto' or unset, got '", e, "'");
  const bool half = result.scalar_type() == at::kHalf || result.scalar_type() == at::kBFloat16;
  return half && channels_last && a.groups == 1 && a.rank <= 2 && result.size(1) >= 8;
}

// The shared body: `result` is the tensor the operation writes; the bias (if any) is fused
// into the graph when fuse_bias says so and cuDNN can, added afterwards otherwise.
bool run_op(Op op, const ConvArgs& a, const Tensor& x_in, const Tensor& w_in, const Tensor& y_in,
            const Tensor& result, const std::optional<Tensor>& bias) {
  if (!supported_dtype(result.scalar_type())) return false;
  // The two operands besides the result.
  const Tensor& in1 = result.is_same(x_in) ? w_in : x_in;
  const Tensor& in2 = result.is_same(y_in) ? w_in : y_in;
  const auto cl = layout_of(result, in1, in2);
  if (!cl) return false;
  // cuDNN reads packed tensors in one layout; the result is one of x, w, y already.
  const Tensor x = to_layout(x_in, *cl), w = to_layout(w_in, *cl), y = to_layout(y_in, *cl);
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(result.scalar_type()).contiguous();
  Problem p = make_problem(op, a, x, w, y, *cl);
  p.alignment = alignment_of({x.const_data_ptr(), w.const_data_ptr(), y.const_data_ptr(),
                              b.defined() ? b.const_data_ptr() : nullptr});
  const Pointers ptr{const_cast<void*>(x.const_data_ptr()), const_cast<void*>(w.const_data_ptr()),
                     const_cast<void*>(y.const_data_ptr()), nullptr};
  const auto opts = result.options();
  if (b.defined() && fuse_bias(a, result, *cl)) {
    p.bias = true;
    Pointers fused = ptr;
    fused.bias = b.data_ptr();
    if (run(p, fused, opts)) return true;
    p.bias = false;
  }
  if (!run(p, ptr, opts)) return false;
  if (b.defined()) add_bias(result, b);
  return true;
}

}  // namespace

bool cudnn_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output) {
  return run_op(Op::Forward, a, input, weight, output, output, bias);
}

bool cudnn_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  return run_op(Op::DataGrad, a, grad_input, weight, grad_output, grad_input, bias);
}

bool cudnn_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight) {
  return run_op(Op::WeightGrad, a, input, grad_weight, grad_output, grad_weight, std::nullopt);
}

}  // namespace convx::cuda
