// Launcher of the channels-last phased-correlation kernel (forward and data-grad) and its
// compile-time specialisations.
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

// CONVX_CL_TILE = 0 | 1 | 2 picks the tile variant of cl_tiled.cuh for the square 2x2-7x7
// filters (stride 1 and 2); unset = 2, the fastest on every row measured on the H100 (session 4:
// MobileNetV2 k3 fp32 forward 0.100 ms vs 0.126 with 0 and 0.143 with 1; docs/performance.md).
// A temporary tuning knob, read once per process.
int cl_tile() {
  static const int tile = [] {
    const char* e = std::getenv("CONVX_CL_TILE");
    if (e == nullptr || *e == '\0') return 2;
    TORCH_CHECK(std::strlen(e) == 1 && e[0] >= '0' && e[0] < '0' + kClTiles,
                "CONVX_CL_TILE: expected 0, 1 or 2, got '", e, "'");
    return e[0] - '0';
  }();
  return tile;
}

template <typename T, int KH, int KW, int S, int TILE>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
         cudaStream_t stream) {
  constexpr int V = cl_tile_vec<T, TILE>(), R = cl_tile_outputs<TILE>();
  const ClTile L = choose_cl_tile(P, V, R);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(L.blocks, int64_t(1) << 30));
  cl_gather<T, KH, KW, S, V, R, cl_min_blocks<T, KW, TILE>()>
      <<<grid, cl_block_threads(L), 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int KH, int KW, int S>
bool run_tiled(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
               cudaStream_t stream) {
  switch (cl_tile()) {
    case 1: return run<T, KH, KW, S, 1>(in, w, bias, out, P, stream);
    case 2: return run<T, KH, KW, S, 2>(in, w, bias, out, P, stream);
    default: return run<T, KH, KW, S, 0>(in, w, bias, out, P, stream);
  }
}

}  // namespace

template <typename T>
bool launch_cl_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_c > kClMaxChannels || P.wrows > kClMaxChannels) return false;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
    // Rows of one tap and the wide filters: the default tile only.
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S, 0>(in, w, bias, out, P, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    CONVX_CASE(1, 31, 1)
#undef CONVX_CASE
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run_tiled<T, KH, KW, S>(in, w, bias, out, P, stream);
    CONVX_CASE(2, 2, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(4, 4, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    if (kw == 31 && s == 1) return run<T, 0, 31, 1, 0>(in, w, bias, out, P, stream);
    return false;
  }
}

template bool launch_cl_gather<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_gather<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
