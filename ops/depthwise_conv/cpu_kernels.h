// The depthwise CPU inner loops, compiled once per x86 ISA (cpu_kernels.cpp built with the
// baseline, AVX2 and AVX-512 flags; CMakeLists.txt) and picked at run time by cpu.cpp from
// at::get_cpu_capability() (so ATEN_CPU_CAPABILITY=default|avx2|avx512 selects them as it does
// ATen's kernels). The loops see only raw pointers to float or double: cpu.cpp does layouts,
// half/bfloat16 conversion, buffers and threading in baseline code, so nothing compiled with
// wider instructions can leak into code that runs on an older CPU.
//
// Plain structs only: an inline function here would be compiled once per ISA and the linker
// could keep the AVX-512 copy for every caller.
#pragma once

#include <cstdint>

namespace convx::cpu::depthwise_isa {

// A padded input plane is stored [phase][row][col] with `phases` = the stride along W: column j
// of the padded row is at phase j % stride, col j / stride, so that every tap reads a contiguous
// run of columns even at stride 2. Every read position exists (cpu.cpp sizes the buffer for whole
// vectors and whole row tiles), so the loops need no bounds checks.
constexpr int64_t kMaxLanes = 16;  // the widest vector (AVX-512 float): buffers round up to it
constexpr int64_t kRowTile = 4;    // output rows computed together (one accumulator each)

// out[oh][ow] = bias (or out[oh][ow] when accumulate) + sum over taps (kh, kw) of
//   w[kh*KW + kw] * in[(oh*sh + kh*dh)*ld + col_off[kw] + ow].
template <typename T>
struct PlaneArgs {
  const T* in;
  int64_t ld, sh, dh;              // buffer row length; stride and dilation along H
  const int64_t* col_off;          // [KW]: phase offset + column of tap kw
  const T* w;                      // [KH * KW]
  int64_t KH, KW, OH, OW;
  T* out;
  int64_t out_ld;
  T bias;
  bool accumulate;
};

// dw[kh*KW + kw] += sum over (oh, ow) of gy[oh*OW + ow] * in[oh*row_step + kh*tap_row_step
//   + col_off[kw] + ow], each tap's sum formed in a fixed order.
template <typename T>
struct PlaneWeightGradArgs {
  const T* in;
  int64_t row_step, tap_row_step;
  const int64_t* col_off;
  const T* gy;  // [OH, OW]
  int64_t KH, KW, OH, OW;
  T* dw;  // [KH * KW]
};

// Channels-last, multiplier 1, one row of pixels, vectorised across the C channels.
// src [SH, SW, C] is one sample; dst (gy for the weight grad) is one row [DW, C] of the other
// tensor; the tap geometry
// (stride, padding, dilation) is the forward convolution's:
//  - forward:   dst[ow] = bias + sum w[k] * src[oh*sh - ph + kh*dh][ow*sw - pw + kw*dw]
//  - data grad: dst[iw] = bias + sum w[k] * src[oh][ow] over (oh, ow, k) with
//               oh*sh - ph + kh*dh = row and ow*sw - pw + kw*dw = iw
//  - weight grad (src the input): acc[k] += gy[ow] * src[...] as in
//    the forward, summed over ow in a fixed order.
template <typename T>
struct RowArgs {
  const T* src;
  int64_t SH, SW, C;
  T* dst;
  const T* gy;  // weight grad: the grad_output row [DW, C]
  int64_t DW, row;
  const T* w;     // [KH * KW, C]
  const T* bias;  // [C]
  T* acc;         // weight grad: [KH * KW, C]
  int64_t KH, KW, sh, sw, ph, pw, dh, dw;
  // The task that runs next on this thread (next_src null: none), whose data the loops prefetch
  // while they work on this one: its source rows (those this row does not read) and its dst
  // row (the weight grad: its gy row).
  const T* next_src;
  const T* next_dst;
  int64_t next_row;
};

template <typename T>
struct Kernels {
  void (*plane)(const PlaneArgs<T>&);
  void (*plane_weight_grad)(const PlaneWeightGradArgs<T>&);
  void (*row_forward)(const RowArgs<T>&);
  void (*row_data_grad)(const RowArgs<T>&);
  void (*row_weight_grad)(const RowArgs<T>&);
};

// One definition per ISA namespace (DEFAULT, AVX2, AVX512).
#define CONVX_DEPTHWISE_ISA(isa)          \
  namespace isa {                         \
  const Kernels<float>& kernels_float();  \
  const Kernels<double>& kernels_double(); \
  }
CONVX_DEPTHWISE_ISA(DEFAULT)
CONVX_DEPTHWISE_ISA(AVX2)
CONVX_DEPTHWISE_ISA(AVX512)
#undef CONVX_DEPTHWISE_ISA

}  // namespace convx::cpu::depthwise_isa
