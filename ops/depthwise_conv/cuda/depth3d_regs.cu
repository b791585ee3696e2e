// Launcher of the 16-bit depth-streaming kernel with the filter in registers (depth3d_regs.cuh):
// fp16 / bf16 5 x 3 x 3 forward and stride-1 data-grad, NCDHW and NDHWC, from the layer's own
// filter (no preparation launch). Everything else returns false.
#include "ops/depthwise_conv/cuda/depth3d_regs.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <cstring>

namespace convx::cuda {

namespace {

template <typename T, int KD, bool CL, bool ROLL>
void run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, const D3rItems& L,
         cudaStream_t stream) {
  depth3d_regs<T, KD, CL, ROLL><<<static_cast<unsigned>(ceil_div(L.items, kD3rThreads)), kD3rThreads, 0, stream>>>(
      in, w, flip, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

template <typename T>
bool launch_depth3d_regs(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool cl,
                         cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "fp16 / bf16");
  // TEMPORARY A/B knob (session 11): CONVX_X3D5_AB=old declines, =glob the global-load kernels
  // (=move: the NCDHW one with the register-move window).
  const char* ab = std::getenv("CONVX_X3D5_AB");
  if (ab && std::strcmp(ab, "old") == 0) return false;
  const bool move = ab && std::strcmp(ab, "move") == 0;
  if (move) ab = "glob";
  const bool roll = !move;
  if (P.k[0] != 5) return false;
  if (!cl && (reinterpret_cast<uintptr_t>(in) % 16 != 0 || reinterpret_cast<uintptr_t>(out) % 16 != 0)) return false;
  // Depth segments only when a column per thread would not fill the GPU twice (2048 threads per SM).
  D3rItems L{};
  if (!depth3d_regs_items(L, P, 5, cl, sm_count() * 2048 * 2)) return false;
  if (cl) {
    if (ab && std::strcmp(ab, "glob") == 0) {
      run<T, 5, true, true>(in, w, flip, bias, out, P, L, stream);
      return true;
    }
    D3sBlocks B{};
    if (reinterpret_cast<uintptr_t>(in) % 16 != 0 || !depth3d_cl_smem_blocks(B, P, 5, sm_count() * 8)) return false;
    depth3d_cl_smem<T, 5><<<B.blocks, kD3rThreads, 0, stream>>>(in, w, flip, bias, out, P, B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {
    if (ab && std::strcmp(ab, "glob") == 0) {
      if (roll) run<T, 5, false, true>(in, w, flip, bias, out, P, L, stream);
      else run<T, 5, false, false>(in, w, flip, bias, out, P, L, stream);
      return true;
    }
    D3nBlocks B{};
    if (!depth3d_nc_smem_blocks(B, P, 5, sm_count() * 8)) return false;
    const size_t bytes = d3n_smem_bytes(B.strips * kD3rR, B.nr, sizeof(T));
    if (bytes > 48 * 1024) return false;  // rows of up to 256 values x 4 rows (256 threads / 32 strips): 21 KB
    depth3d_nc_smem<T, 5><<<B.blocks, B.strips * B.nr, bytes, stream>>>(in, w, flip, bias, out, P, B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return true;
}

#define CONVX_INST(T) \
  template bool launch_depth3d_regs<T>(const T*, const T*, bool, const T*, T*, const Plan&, bool, cudaStream_t);
CONVX_INST(c10::Half)
CONVX_INST(c10::BFloat16)
#undef CONVX_INST

}  // namespace convx::cuda
