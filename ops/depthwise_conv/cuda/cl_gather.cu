// Launchers of the channels-last phased-correlation kernel (forward and data-grad) and its
// compile-time specialisations: launch_cl_gather (fp32 weights; every dtype) and
// launch_cl_gather16 (the 16-bit fast path: 16-bit weights, 16-byte vectors for 2x2 / 3x3;
// 4x4-7x7 only under CONVX_CL_FAST=2 or 3, to be measured).
#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

// V channels per thread, R outputs (cl_outputs), weights of type WT.
template <typename T, typename WT, int KH, int KW, int S, int V, int R = cl_outputs<KH, KW, V, S>()>
bool run(const T* in, const WT* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  const ClTile L = choose_cl_tile(P, V, R);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(L.blocks, int64_t(1) << 30));
  cl_gather<T, WT, KH, KW, S, V, R, cl_min_blocks<KW, R, V>()>
      <<<grid, cl_block_threads(L), 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// The 16-bit fast path's tile for the filter (16-bit weights in every case): 16-byte vectors
// (V = 8) for 2x2 and 3x3 (the default). 4x4-7x7 only with CONVX_CL_FAST=2 (V = 8, R = 4:
// fewer, wider loads, but 2.0-2.5 input vectors per output instead of 1.5-1.75; V = 8 with R = 8
// would not fit 8 x KW weights next to 64 accumulators) or 3 (the previous tile, V = 4 and
// R = 8, with 16-bit weights: half the filter bytes, 6-10% more instructions per row).
template <typename T, int KH, int KW, int S>
bool run16(const T* in, const T* w, const T* bias, T* out, const Plan& P, int choice, cudaStream_t stream) {
  if constexpr (KW <= 3) {
    return run<T, T, KH, KW, S, kClVec16>(in, w, bias, out, P, stream);
  } else {
    if (choice == 2) return run<T, T, KH, KW, S, kClVec16>(in, w, bias, out, P, stream);
    return run<T, T, KH, KW, S, kClVec>(in, w, bias, out, P, stream);
  }
}

}  // namespace

int cl_fast_choice() {
  static const int choice = [] {
    const char* e = std::getenv("CONVX_CL_FAST");
    if (!e || !*e || std::strcmp(e, "1") == 0) return 1;
    if (std::strcmp(e, "0") == 0) return 0;
    if (std::strcmp(e, "2") == 0) return 2;
    if (std::strcmp(e, "3") == 0) return 3;
    TORCH_CHECK(false, "convx: CONVX_CL_FAST must be 0, 1, 2, 3 or unset, got '", e, "'");
  }();
  return choice;
}

bool cl_fast_takes(const Plan& P) {
  const int choice = cl_fast_choice();
  return choice != 0 && cl16_specialised(P) && (P.k[2] <= 3 || choice >= 2) && P.in_c <= kClMaxChannels &&
         P.wrows <= kClMaxChannels;
}

template <typename T>
bool launch_cl_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_c > kClMaxChannels || P.wrows > kClMaxChannels) return false;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, at::opmath_type<T>, KH, KW, S, kClVec>(in, w, bias, out, P, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    CONVX_CASE(1, 31, 1)
    CONVX_CASE(2, 2, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(4, 4, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    if (kw == 31 && s == 1) return run<T, at::opmath_type<T>, 0, 31, 1, kClVec>(in, w, bias, out, P, stream);
    return false;
  }
}

template <typename T>
bool launch_cl_gather16(const T* in, const T* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if (!cl_fast_takes(P)) return false;
  const int k = P.k[2], s = P.S[1], choice = cl_fast_choice();
#define CONVX_CASE(K, S) \
  if (k == K && s == S) return run16<T, K, K, S>(in, w, bias, out, P, choice, stream);
  CONVX_CASE(2, 1)
  CONVX_CASE(3, 1)
  CONVX_CASE(4, 1)
  CONVX_CASE(5, 1)
  CONVX_CASE(7, 1)
  CONVX_CASE(3, 2)
  CONVX_CASE(5, 2)
  CONVX_CASE(7, 2)
#undef CONVX_CASE
  return false;
}

template bool launch_cl_gather<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_gather<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);
template bool launch_cl_gather16<c10::Half>(const c10::Half*, const c10::Half*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_cl_gather16<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
