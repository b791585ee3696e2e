// Launchers of the tiled depthwise kernels (one translation unit per kernel family, so that the
// compile-time specialisations build in parallel). Each returns false when its fast path does
// not cover the problem (filter / stride not specialised, dtype, shared memory); the caller then
// uses the generic kernels of depthwise_conv.cu.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>
#include <ATen/core/TensorBase.h>
#include <cuda_runtime_api.h>

namespace convx::cuda {

// NC(D)HW forward / data-grad: out = phased correlation of in with w ([phases][wrows][taps],
// opmath type) plus bias.
template <typename T>
bool launch_nc_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream);

// The same, streaming without shared memory (nc_stream.cuh): 1-D rows / 1xK filters of 2, 3, 4,
// 15, 31 taps and square filters up to 7x7; false when not specialised or too large for its
// 32-bit item split (the caller then uses launch_nc_gather).
template <typename T>
bool launch_nc_stream(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream);

// NCDHW forward / data-grad streaming along depth (nc_depth3d.cuh): KD x 3 x 3 filters, KD 3 or
// 5, depth stride 1, data-grad channel multiplier 1; false otherwise or with CONVX_DEPTH3D=0.
template <typename T>
bool launch_nc_depth3d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                       const Plan& P, cudaStream_t stream);

// Channels-last forward / data-grad, channel multiplier 1: w is [phases][taps][wrows].
template <typename T>
bool launch_cl_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream);

// NC(D)HW weight-grad, one pass + ordered sum: gw [out_c][taps] (dense) from x (read) and gy
// (written positions); the plan is the forward's. Workspace from `like`'s allocator.
template <typename T>
bool launch_nc_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream);

// NCDHW weight-grad streaming along depth (nc_depth3d.cuh), the filters of launch_nc_depth3d
// (plan: the forward's); ordered sums as launch_nc_wgrad. false when it does not cover the plan.
template <typename T>
bool launch_nc_wgrad_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                             cudaStream_t stream);

// Channels-last weight-grad, channel multiplier 1, one pass + ordered sum (cl_wgrad.cu).
template <typename T>
bool launch_cl_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream);

}  // namespace convx::cuda
