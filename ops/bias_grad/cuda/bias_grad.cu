// The bias gradient on CUDA (bias_grad.h): a per-channel sum of grad_output in two launches,
// partial sums of fixed slices of the reduced elements (float32 accumulation), then the slices
// summed in order per channel, so the result does not depend on scheduling.
//
// Two layouts are read in place, in 16-byte vectors where sizes and alignment allow:
// - channel dim innermost (channels-last, (N, L, C) sequences): a matrix [M, C] summed over its
//   rows; a thread keeps V adjacent channels, a block's thread rows walk a slice of rows;
// - contiguous NC*: [outer, C, inner]; a block sums one channel's slice of its outer x inner
//   elements (runs of `inner` contiguous values).
// Anything else (other strides, float64) goes to at::sum.
//
// bias_grad_beside runs the sum on a side stream while the caller's GEMMs run on the current
// stream (the transposed convolution's joint backward, ops/front.h): the sum is memory-bound,
// the GEMMs compute-bound, so the sum costs little time beside them.
#include "ops/bias_grad/bias_grad.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/core/Event.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace convx::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// [M, C] rows summed: block (tx, ty), tx threads of V channels, ty thread rows; blockIdx.x the
// channel tile, blockIdx.y the slice of rows [y * rows_per, (y + 1) * rows_per).
template <typename T, int V>
__global__ void __launch_bounds__(kThreads) rows_partial(const T* __restrict__ g, float* __restrict__ partial,
                                                         int64_t M, int64_t C, int64_t rows_per) {
  __shared__ float red[kThreads * V];
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * rows_per;
  const int64_t m1 = std::min(M, m0 + rows_per);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.f;
  if (c0 < C) {  // V divides C (the launcher's choice), so the vector is whole
#pragma unroll 4
    for (int64_t m = m0 + threadIdx.y; m < m1; m += blockDim.y) {
      const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(g + m * C + c0);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += static_cast<float>(x.v[j]);
    }
  }
  // Thread rows summed in order: row y's V values at red[(y * blockDim.x + x) * V + j].
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < V; ++j) red[t * V + j] = acc[j];
  __syncthreads();
  if (threadIdx.y == 0 && c0 < C) {
    for (int y = 1; y < static_cast<int>(blockDim.y); ++y) {
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += red[(y * blockDim.x + threadIdx.x) * V + j];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) partial[blockIdx.y * C + c0 + j] = acc[j];
  }
}

// [outer, C, inner] summed over outer and inner per channel: blockIdx.x the channel, blockIdx.y
// the slice [y * per, (y + 1) * per) of the channel's outer * inner / V vectors.
template <typename T, int V, typename I>
__global__ void __launch_bounds__(kThreads) planes_partial(const T* __restrict__ g, float* __restrict__ partial,
                                                           I outer, I inner_v, int64_t C, I per) {
  __shared__ float red[kThreads / 32];
  const int64_t c = blockIdx.x;
  const I e0 = static_cast<I>(blockIdx.y) * per;
  const I e1 = std::min(outer * inner_v, e0 + per);
  const int64_t plane = C * inner_v * V;  // elements per outer index
  const T* base = g + c * inner_v * V;
  float acc = 0.f;
#pragma unroll 4
  for (I e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
    const I o = e / inner_v, i = e - o * inner_v;
    const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(base + o * plane + i * V);
#pragma unroll
    for (int j = 0; j < V; ++j) acc += static_cast<float>(x.v[j]);
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) s += red[w];
    partial[c * gridDim.y + blockIdx.y] = s;
  }
}

// out[c] = the sum of the channel's slices; partial is [slices][C] (stride_s = C, stride_c = 1)
// or [C][slices] (stride_s = 1, stride_c = slices). A warp per channel: lane l sums slices
// l, l + 32, ... in order, then a fixed shuffle tree (deterministic). One thread walking up to
// a thousand slices serially was latency-bound: 60 us for a 3-channel gradient.
template <typename T>
__global__ void finish(const float* __restrict__ partial, T* __restrict__ out, int64_t C, int64_t slices,
                       int64_t stride_s, int64_t stride_c) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (c >= C) return;  // whole warps leave together
  float s = 0.f;
  for (int64_t i = lane; i < slices; i += 32) s += partial[i * stride_s + c * stride_c];
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
  if (lane == 0) out[c] = static_cast<T>(s);
}

// One finishing launch: 8 channels (warps) per block.
template <typename T>
void launch_finish(const float* partial, T* out, int64_t C, int64_t slices, int64_t stride_s,
                   int64_t stride_c, cudaStream_t stream) {
  finish<T><<<static_cast<unsigned>((C + 7) / 8), kThreads, 0, stream>>>(partial, out, C, slices, stride_s,
                                                                       stride_c);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks to keep every SM busy with several loads in flight.
constexpr int64_t kTargetBlocks = 1024;

template <typename T>
void sum_rows(const T* g, T* out, int64_t M, int64_t C, const at::TensorOptions& fopt, cudaStream_t stream) {
  constexpr int V16 = 16 / sizeof(T);
  const bool vec = C % V16 == 0 && aligned16(g);
  const int V = vec ? V16 : 1;
  const int64_t cv = ceil_div(C, V);
  int tx = 1;
  while (tx < 32 && tx < cv) tx *= 2;
  const int ty = kThreads / tx;
  const int64_t tiles = ceil_div(cv, tx);
  // Slices of at least 4 rows per thread row, as many as fill the GPU.
  const int64_t slices = std::clamp<int64_t>(ceil_div(kTargetBlocks, tiles), 1, std::max<int64_t>(1, M / (4 * ty)));
  const int64_t rows_per = ceil_div(M, slices);
  const int64_t used = ceil_div(M, rows_per);
  at::Tensor partial = at::empty({used, C}, fopt);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(used)), block(tx, ty);
  if (vec) {
    rows_partial<T, V16><<<grid, block, 0, stream>>>(g, partial.data_ptr<float>(), M, C, rows_per);
  } else {
    rows_partial<T, 1><<<grid, block, 0, stream>>>(g, partial.data_ptr<float>(), M, C, rows_per);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_finish<T>(partial.data_ptr<float>(), out, C, used, C, 1, stream);
}

template <typename T, int V, typename I>
void planes_launch(const T* g, float* partial, int64_t outer, int64_t inner_v, int64_t C, int64_t per,
                   int64_t slices, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(C), static_cast<unsigned>(slices));
  planes_partial<T, V, I><<<grid, kThreads, 0, stream>>>(g, partial, static_cast<I>(outer), static_cast<I>(inner_v),
                                                         C, static_cast<I>(per));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void sum_planes(const T* g, T* out, int64_t outer, int64_t C, int64_t inner, const at::TensorOptions& fopt,
                cudaStream_t stream) {
  constexpr int V16 = 16 / sizeof(T);
  const bool vec = inner % V16 == 0 && aligned16(g);
  const int64_t inner_v = inner / (vec ? V16 : 1);
  const int64_t per_channel = outer * inner_v;
  const int64_t slices = std::clamp<int64_t>(ceil_div(kTargetBlocks, C), 1, std::max<int64_t>(1, per_channel / (4 * kThreads)));
  const int64_t per = ceil_div(per_channel, slices);
  const int64_t used = ceil_div(per_channel, per);
  at::Tensor partial = at::empty({C, used}, fopt);
  float* p = partial.data_ptr<float>();
  // 32-bit element indices (division by inner_v is the hot operation) when every index a block
  // forms, up to twice the channel's count, fits.
  const bool i32 = 2 * per_channel + kThreads < (int64_t(1) << 31);
  if (vec) {
    if (i32) planes_launch<T, V16, int32_t>(g, p, outer, inner_v, C, per, used, stream);
    else planes_launch<T, V16, int64_t>(g, p, outer, inner_v, C, per, used, stream);
  } else {
    if (i32) planes_launch<T, 1, int32_t>(g, p, outer, inner_v, C, per, used, stream);
    else planes_launch<T, 1, int64_t>(g, p, outer, inner_v, C, per, used, stream);
  }
  launch_finish<T>(p, out, C, used, 1, used, stream);
}

// Whether every dim but the channel dim collapses into one dim of stride C with the channel dim
// innermost (stride 1): grad_output is then the matrix [M, C] in memory.
bool channel_innermost(const Tensor& g, int64_t channel) {
  if (g.stride(channel) != 1 && g.size(channel) != 1) return false;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < g.dim(); ++i) {
    if (i != channel) perm.push_back(i);
  }
  perm.push_back(channel);
  return g.permute(perm).is_contiguous();
}

template <typename T>
void dispatch(const Tensor& g, const Tensor& out, int64_t channel) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto fopt = g.options().dtype(at::kFloat);
  const int64_t C = g.size(channel);
  if (channel_innermost(g, channel)) {
    sum_rows<T>(g.const_data_ptr<T>(), out.mutable_data_ptr<T>(), g.numel() / C, C, fopt, stream);
  } else {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < channel; ++i) outer *= g.size(i);
    for (int64_t i = channel + 1; i < g.dim(); ++i) inner *= g.size(i);
    sum_planes<T>(g.const_data_ptr<T>(), out.mutable_data_ptr<T>(), outer, C, inner, fopt, stream);
  }
}

// Whether the kernels here read grad_output in place (else at::sum).
bool ours(const Tensor& g, int64_t channel) {
  const auto t = g.scalar_type();
  return (t == at::kFloat || t == at::kHalf || t == at::kBFloat16) && g.numel() > 0 &&
         (channel_innermost(g, channel) || g.is_contiguous());
}

void sum_into(const Tensor& g, const Tensor& out, int64_t channel) {
  switch (g.scalar_type()) {
    case at::kFloat: dispatch<float>(g, out, channel); break;
    case at::kHalf: dispatch<c10::Half>(g, out, channel); break;
    default: dispatch<c10::BFloat16>(g, out, channel); break;
  }
}

// Makes `waiter` wait for everything queued on `side` so far: join() on the normal path (errors
// propagate), the destructor when the scope is left by an exception (the side kernel may still be
// writing memory the current stream owns; an error there cannot be reported any more).
struct Join {
  c10::cuda::CUDAStream side, waiter;
  bool joined = false;
  void join() {
    c10::Event done(c10::DeviceType::CUDA);
    done.record(side);
    done.block(waiter);
    joined = true;
  }
  ~Join() {
    if (joined) return;
    try {
      join();
    } catch (...) {
    }
  }
};

// The side stream of a device: one pool stream, taken once. The caching allocator keeps freed
// blocks per stream, so a fixed stream finds the reduction's scratch cached from the last call
// (a fresh pool stream per call would allocate anew on each of the pool's streams in turn).
// Callers on other threads share it, which orders their sums but keeps each one correct.
c10::cuda::CUDAStream side_stream(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::vector<std::optional<c10::cuda::CUDAStream>> streams(c10::cuda::device_count());
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = streams.at(device);
  if (!s) s = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
  return *s;
}

}  // namespace

Tensor bias_grad(const Tensor& grad_output, int64_t rank) {
  const int64_t channel = bias_grad_channel_dim(grad_output, rank);
  if (!ours(grad_output, channel)) return bias_grad_by_sum(grad_output, rank);
  c10::cuda::CUDAGuard guard(grad_output.device());
  Tensor out = at::empty({grad_output.size(channel)}, grad_output.options());
  sum_into(grad_output, out, channel);
  return out;
}

// The sum on the side stream, `work` on the current one. Stream ordering and the caching
// allocator (which hands a freed block again only to work on the stream it was allocated on):
// - the side stream first waits for the current stream (grad_output is complete);
// - `out` is allocated on the current stream before switching, so it belongs to the current
//   stream's pool; the reduction's scratch is allocated and freed on the side stream, so only
//   later side-stream work (queued behind the reduction) can reuse it;
// - before returning (or unwinding) the current stream waits for the side stream. Everything the
//   caller queues afterwards on the current stream, including the reuse of `out`'s or
//   grad_output's blocks once they are freed, is therefore ordered after the reduction, so
//   neither needs record_stream. Work on other streams was never allowed to touch them without
//   waiting for the current stream, which now includes the reduction.
Tensor bias_grad_beside(const Tensor& grad_output, int64_t rank, c10::function_ref<void()> work) {
  const int64_t channel = bias_grad_channel_dim(grad_output, rank);
  if (!ours(grad_output, channel)) {
    work();
    return bias_grad_by_sum(grad_output, rank);
  }
  c10::cuda::CUDAGuard guard(grad_output.device());
  Tensor out = at::empty({grad_output.size(channel)}, grad_output.options());
  const auto current = c10::cuda::getCurrentCUDAStream();
  const auto side = side_stream(current.device_index());
  {
    c10::Event ready(c10::DeviceType::CUDA);
    ready.record(current);
    ready.block(side);
  }
  Join join{side, current};
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    sum_into(grad_output, out, channel);
  }
  work();
  join.join();
  return out;
}

}  // namespace convx::cuda
