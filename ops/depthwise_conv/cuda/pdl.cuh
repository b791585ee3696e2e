// Programmatic dependent launch (sm_90 and newer): a kernel launched with launch_pdl may start
// while the stream's previous kernel is still finishing (its blocks become resident, their
// launch cost overlaps the previous kernel's last blocks); it waits in pdl_wait(), before it
// touches global memory, until that kernel has completed and its writes are visible. So it is
// correct after any kernel; pdl_trigger() in a kernel lets the stream's next kernel start before
// this one's last blocks have begun to exit. Without a programmatic launch both are no-ops.
// Outside nvcc (the CPU harness, cpp_tests/cuda_on_cpu/shim.h) both do nothing.
// Used by the short 1-D rows' weight-grads, whose kernels are ~15-25 us each, so that the launch
// gap after the data-grad (and between the (N, L, C) partials and their sum) is not paid in full.
// H100, session 14 (bench/results/h100/session14/c1d_call1_ab.log, alternating in one process):
// short_k3 bf16 backward (data-grad + weight-grad) NCL 45.5 -> 43.2 and 44.6 -> 44.1 us, (N, L, C)
// 47.5 -> 44.6 and 47.7 -> 44.6 us, same bits.
#pragma once

#if defined(__CUDACC__)
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>
#endif

namespace convx::cuda {

#if defined(__CUDACC__)
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether the current GPU takes programmatic launches (sm_90 and newer; tc_row1d.cu).
bool pdl_supported();

// kernel<<<grid, block, smem, stream>>>(args...), programmatically dependent on the stream's
// previous kernel when `pdl` (the caller checked sm_90 or newer).
template <typename... Params, typename... Args>
void launch_pdl(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}
#else
inline void pdl_wait() {}
inline void pdl_trigger() {}
#endif

}  // namespace convx::cuda
