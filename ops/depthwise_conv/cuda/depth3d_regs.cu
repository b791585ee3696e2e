// Launcher of the 16-bit KD x 3 x 3 depth-streaming kernels with the filter in registers
// (depth3d_regs.cuh): fp16 / bf16 5 x 3 x 3 forward and stride-1 data-grad, NCDHW
// (depth3d_nc_units) and NDHWC (depth3d_cl_smem), from the layer's own filter (no preparation
// launch). Tried before tc_rows_nc / cl_depth3d, which they replaced on the row they were measured
// on (H100, X3D N16 C192 16x56x56 bf16, forward, same process): session 11
// (bench/results/h100/session11/x3d5_call2_bench.log) NCDHW 0.77 -> 0.60 ms, NDHWC 0.92 -> 0.52 ms;
// session 12 (bench/results/h100/session12/x3d_call*_test.log) NCDHW 0.575-0.587 -> 0.515-0.529
// (whole-warp units), then both 5-8% less with the leaner walk (kernels 503 -> 473 us, 488 -> 448
// us). Everything else returns false.
#include "ops/depthwise_conv/cuda/depth3d_regs.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace convx::cuda {

template <typename T>
bool launch_depth3d_regs(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool cl,
                         cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "fp16 / bf16");
  // cp.async: sm_80 and newer
  if (P.k[0] != 5 || reinterpret_cast<uintptr_t>(in) % 16 != 0 || !mma16_supported()) return false;
  // Depth segments only when the blocks would not fill every SM 4 times over (2 per SM at a time).
  const int64_t target = sm_count() * 8;
  if (cl) {
    D3sBlocks B{};
    if (!depth3d_cl_smem_blocks(B, P, 5, target)) return false;
    depth3d_cl_smem<T, 5><<<B.blocks, kD3rThreads, 0, stream>>>(in, w, flip, bias, out, P, B);
  } else {
    D3uBlocks B{};
    if (reinterpret_cast<uintptr_t>(out) % 16 != 0 || !depth3d_nc_units_blocks(B, P, 5, target)) return false;
    const size_t bytes = d3u_smem_bytes(B.strips * kD3rR, B.U, B.nr, sizeof(T));  // at most 48 KB
    depth3d_nc_units<T, 5><<<B.blocks, B.U * B.nr * B.strips, bytes, stream>>>(in, w, flip, bias, out, P, B);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

#define CONVX_INST(T) \
  template bool launch_depth3d_regs<T>(const T*, const T*, bool, const T*, T*, const Plan&, bool, cudaStream_t);
CONVX_INST(c10::Half)
CONVX_INST(c10::BFloat16)
#undef CONVX_INST

}  // namespace convx::cuda
