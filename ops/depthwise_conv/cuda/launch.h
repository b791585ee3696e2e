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

// SMs of the current GPU, asked of the driver once per device (nc_stream.cu); the launchers size
// their grids and tiles by it.
int64_t sm_count();
// Lets `kernel` launch with `bytes` of dynamic shared memory (the attribute set above the default
// 48 KB); false, setting nothing, when that exceeds the current GPU's opt-in limit per block
// (asked of the driver once per device, nc_stream.cu): the launcher then declines.
bool allow_dynamic_smem(const void* kernel, int64_t bytes);
// Whether the current GPU runs mma16.cuh's tensor-core step (sm_80 and newer; tc_row1d.cu): the
// tensor-core launchers decline otherwise.
bool mma16_supported();

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

// The same for NCHW output planes larger than 14 x 14, a block walking groups of whole planes
// (nc_plane.cuh): one-phase 2-D plans with multiplier 1, square filters 2-7 (stride 1) and 3, 5, 7
// (stride 2); w is the layer's filter [C][KH][KW] in T, read rotated 180 degrees when flip (the
// stride-1 data-grad): no prepared copy. false when not covered (a plane too large for a block's
// prefetch or shared memory, or too small: launch_nc_small_planes).
template <typename T>
bool launch_nc_plane(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);
// The same for fp16 / bf16 3x3 filters (stride 1, 2) padded by one on rows of whole 16-byte
// vectors, whole planes staged by cp.async in T (nc_plane_cp.cuh), sm_80 and newer; false when
// not covered (then launch_nc_plane).
template <typename T>
bool launch_nc_plane_cp(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);
// The same for output planes up to 14 x 14, a block per group of whole planes
// (nc_small_planes.cuh), from the layer's filter as launch_nc_plane; false when not covered.
template <typename T>
bool launch_nc_small_planes(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P,
                            cudaStream_t stream);
// 2-, 3-, 4- and 15-tap NCL 1-D rows at stride 1 (forward, stride-1 data-grad), a warp per
// segment of 16-byte vectors (row_warp.cuh); w is the layer's filter [rows][K], tap t of the
// correlation w[row * K + wbase + wstep * t] (no preparation launch). false when not covered.
template <typename T>
bool launch_row_warp(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out,
                     const Plan& P, cudaStream_t stream);
// The same for 31-tap 1-D rows at stride 1 (forward, stride-1 data-grad) through shared memory
// (row1d.cuh); false when not covered.
template <typename T>
bool launch_row1d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                  const Plan& P, cudaStream_t stream);
// NCHW data-grad of a stride-2 conv (the depthwise transposed conv) writing both column phases of
// whole output rows (nc_stride2_dgrad.cuh): 2x2 sub-filters with pads (1, 0) (k4 s2 p1, k3 s2 p1
// op 1) and 1x1 (k2 s2 p0), even output width twice the input's, multiplier 1, aligned rows;
// false otherwise (then launch_nc_stream).
template <typename T>
bool launch_nc_stride2_dgrad(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                             cudaStream_t stream);
// NCDHW forward / data-grad streaming along depth (nc_depth3d.cuh): KD x 3 x 3 filters, KD 3 or
// 5, depth stride 1, data-grad channel multiplier 1; false otherwise.
template <typename T>
bool launch_nc_depth3d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                       const Plan& P, cudaStream_t stream);

// fp16 / bf16 1-D rows of 8 to 48 taps at stride 1 (forward, stride-1 data-grad), multiplier 1,
// on tensor cores (tc_row1d.cuh), NCL or (cl) channels-last (there: channels a multiple of 8,
// 16-byte aligned tensors, as cl_vector_ok checks). w is the layer's 16-bit filter [rows][K]; tap
// t of the correlation is w[row * K + wbase + wstep * t]. false when not covered (or sm < 80).
template <typename T>
bool launch_tc_row1d(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P, bool cl,
                     cudaStream_t stream);

// fp16 / bf16 NCHW / NCDHW forward and stride-1 data-grad (flip: the filter rotated 180 degrees)
// at stride 1, multiplier 1, on tensor cores (tc_rows_nc.cuh): 5 x 3 x w 3-D filters (w <= 9),
// 31 x 26-41 and (planes of 56 x 56 or more) 7 x w (w <= 9) 2-D filters; w is the layer's 16-bit
// filter [C][KD][KH][KW]. false when not covered (or sm < 80).
// fp32 (TF32; the caller checks torch.backends.cudnn.allow_tf32): 31 x 26-33 2-D filters on
// planes of at least 56 x 56 only, NC(D)HW or (cl) channels-last.
template <typename T>
bool launch_tc_rows_nc(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool cl,
                       cudaStream_t stream);
// The filters launch_tc_rows_nc<float> takes (before its plan's checks).
bool tc_rows_nc_f32_takes(const Plan& P);
// NCHW 7 x 7 forward and stride-1 data-grad (flip: the filter rotated 180 degrees) at padding 3,
// multiplier 1, on tensor cores (tc7_nc.cuh): planes 49-64 high whose width gives 8 N-blocks
// (16-bit: even widths 53-60) or 7 (fp32 as TF32; the caller checks torch.backends.cudnn.allow_tf32:
// even widths 49-56), and 16-bit planes up to 16 high of even widths 13-20; tensors aligned to
// 4 bytes at least, sm >= 80; w is the layer's filter [C][7][7]. false when not covered.
template <typename T>
bool launch_tc7_nc(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);

// fp16 / bf16 5 x 3 x 3 forward and stride-1 data-grad (flip: the filter rotated 180 degrees),
// NCDHW or (cl) NDHWC, multiplier 1, width padding 1 and widths a multiple of 8, 16-byte aligned
// input (NCDHW: and output; NDHWC: channels a multiple of 8), CUDA cores with the filter in
// registers and the input staged in shared memory (depth3d_regs.cuh); w is the layer's 16-bit
// filter [C][5][3][3]. false when not covered.
template <typename T>
bool launch_depth3d_regs(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool cl,
                         cudaStream_t stream);
// Channels-last 1-D rows (the (N, L, C) layout; 1 x K filters on NHWC / NDHWC rows): forward and
// stride-1 data-grad with 2, 3, 4, 15 or 31 taps, multiplier 1 (cl_row1d.cuh); w, wbase, wstep as
// launch_row_warp's (wstep 1 or -1). false otherwise (then launch_cl_gather).
template <typename T>
bool launch_cl_row1d(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P,
                     cudaStream_t stream);

// Channels-last 2-D forward and stride-1 data-grad (flip: the filter rotated 180 degrees) of
// square 3x3 (stride 1, 2), 5x5, 7x7 (stride 1) filters, multiplier 1, through a shared-memory
// ring of input rows (cl_ring.cuh); w is the layer's filter [C][KH][KW] in T. false otherwise.
template <typename T>
bool launch_cl_ring(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);

// Channels-last forward / data-grad, channel multiplier 1: w is [phases][taps][wrows].
template <typename T>
bool launch_cl_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream);

// Channels-last 2-D data-grad of a stride-2 conv (the depthwise transposed conv) writing both
// column phases of an output row (cl_stride2_dgrad.cuh): 2x2 sub-filters with pads (1, 0) (k4 s2
// p1, k3 s2 p1), multiplier 1, channels a multiple of 4; w is [phases][taps][wrows]. false
// otherwise (then launch_cl_gather).
template <typename T>
bool launch_cl_stride2_dgrad(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                             cudaStream_t stream);

// Channels-last (NDHWC) forward / data-grad streaming along depth (cl_depth3d.cuh): the plans of
// launch_nc_depth3d with channels a multiple of 4; false otherwise (then launch_cl_gather).
template <typename T>
bool launch_cl_depth3d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                       cudaStream_t stream);

// Whether launch_cl_gather16 takes the plan of a 16-bit problem (cl16_specialised: 3x3 at
// stride 1); the caller then prepares 16-bit weights.
bool cl_fast_takes(const Plan& P);

// The 16-bit fast path of launch_cl_gather: w is [phases][taps][wrows] in T (cl_tiled.cuh).
template <typename T>
bool launch_cl_gather16(const T* in, const T* w, const T* bias, T* out, const Plan& P, cudaStream_t stream);

// NC(D)HW weight-grad, one pass + ordered sum: gw [out_c][taps] (dense) from x (read) and gy
// (written positions); the plan is the forward's. Workspace from `like`'s allocator.
template <typename T>
bool launch_nc_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream);

// NCL weight-grad of 2-, 3- and 4-tap rows at stride 1 (row_warp.cuh), deterministic; false when
// not covered.
template <typename T>
bool launch_row_warp_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                           cudaStream_t stream);
// NCL weight-grad of 15- and 31-tap rows at stride 1 (row1d.cuh), deterministic; false when not
// covered.
template <typename T>
bool launch_row1d_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                        cudaStream_t stream);
// NCDHW weight-grad streaming along depth (nc_depth3d.cuh), the filters of launch_nc_depth3d
// (plan: the forward's); ordered sums as launch_nc_wgrad. false when it does not cover the plan.
template <typename T>
bool launch_nc_wgrad_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                             cudaStream_t stream);

// Weight-grad of 15- and 31-tap 1-D rows at stride 1, multiplier 1, fp16 / bf16, on tensor cores
// (tc_wgrad1d.cuh), NCL or (channels_last) (N, L, C) memory, deterministic; false when not
// covered (fp32, other filters, sm < 80, (N, L, C) channels not a multiple of 8 or misaligned).
template <typename T>
bool launch_tc_wgrad1d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream);

// NDHWC weight-grad of fp16 / bf16 5 x 3 x 3 filters at stride 1, multiplier 1, width padding 1,
// widths a multiple of 8 (cl_wgrad.cu: cl_wgrad_d3r, one channel x 8 outputs per thread, the
// 45 tap sums in registers); ordered sums as launch_cl_wgrad. false when not covered.
template <typename T>
bool launch_cl_wgrad_d3r(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                         cudaStream_t stream);
// Weight-grad of KD x 3 x 3 filters (KD 3 or 5) at stride 1, multiplier 1, fp16 / bf16, on tensor
// cores (tc_wgrad3d.cuh), NCDHW, deterministic; false when not covered (fp32, channels-last,
// other filters or strides, padding beyond k - 1, sm < 80).
template <typename T>
bool launch_tc_wgrad3d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream);

// Weight-grad of 2-D 7 x 7 filters at stride 1, multiplier 1, fp16 / bf16, on tensor cores
// (tc_wgrad2d.cuh), NCHW rows wider than 32 or (channels_last) NHWC rows at least 14 wide,
// deterministic; false when not covered (fp32, other filters or strides, padding beyond 6, NHWC
// channels not a multiple of 8 or misaligned, sm < 80).
template <typename T>
bool launch_tc_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream);

// Forward / stride-1 data-grad (flip: the filter rotated 180 degrees) of fp32 / fp16 channels-last
// 2-D 7 x 7 filters at stride 1, multiplier 1, one phase, outputs 14 wide and at most 14 high: a
// register-blocked tile staged in shared memory by cp.async (cl_tile2d.cuh), sm_80 and newer; w is
// the layer's filter [C][7][7] in T, channels a multiple of 4 and aligned vectors (the caller
// checks: cl_vector_ok). false otherwise.
template <typename T>
bool launch_cl_tile2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);

// Forward / stride-1 data-grad (flip: the filter rotated) of fp16 / bf16 channels-last 2-D 7 x 7
// filters at stride 1, multiplier 1, outputs at least 14 wide, on tensor cores through a
// shared-memory transpose (tc_cl2d.cuh); w is the layer's filter [C][7][7]. Channels a multiple
// of 8, 16-byte aligned tensors (the caller checks); false otherwise.
template <typename T>
bool launch_tc_cl2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream);

// Forward / stride-1 data-grad (flip: the filter rotated 180 degrees) of 2-D 7 x 7 filters at
// stride 1, multiplier 1, a thread walking down a column strip with a ring of 7 output rows in
// registers (walk2d.cuh): channels-last outputs 14-27 wide, where it measured faster; w is the
// layer's filter [C][7][7] in T. false otherwise.
template <typename T>
bool launch_walk_conv2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool channels_last,
                        cudaStream_t stream);
// Weight-grad of 2-D 7 x 7 filters at stride 1, multiplier 1, a thread walking down a column strip
// with the last 7 dy rows in registers (walk2d.cuh), deterministic: fp32 NCHW / (channels_last)
// NHWC and fp16 / bf16 NCHW rows 14-32 wide, where it measured faster; false otherwise.
template <typename T>
bool launch_walk_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                         cudaStream_t stream);

// NCHW fp32 weight-grad of 5 x 5 filters at stride 1 with padding 2, output rows of whole 16-byte
// vectors, the input planes staged by cp.async (nc_wgrad_cp.cuh), deterministic; false otherwise.
template <typename T>
bool launch_nc_wgrad_cp(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream);

// Channels-last weight-grad of 2-D 7 x 7 filters at stride 1, multiplier 1, padding 0-6, from
// bands staged in shared memory (cl_band_wgrad2d.cuh), deterministic: outputs 14-56 wide, channels
// a multiple of 32 bytes, 16-byte aligned tensors, sm_80+, where it measured faster; false otherwise.
template <typename T>
bool launch_cl_band_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last,
                            const at::TensorBase& like, cudaStream_t stream);

// Channels-last weight-grad, channel multiplier 1, one pass + ordered sum (cl_wgrad.cu).
template <typename T>
bool launch_cl_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream);

// Channels-last weight-grad of KD x 3 x 3 filters (KD 3 or 5) at depth stride 1, streaming along
// depth (cl_wgrad.cu: x and dy read once, not once per filter depth); false otherwise.
template <typename T>
bool launch_cl_wgrad_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                             cudaStream_t stream);

}  // namespace convx::cuda
