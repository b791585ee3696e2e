// 16-bit KD x 3 x 3 depthwise forward / stride-1 data-grad streaming along depth with the whole
// filter in registers (issue #9: X3D's 5 x 3 x 3 bf16 rows, NCDHW and NDHWC).
//
// Why: the CUDA-core kernels before it were issue-bound, not memory-bound. nc_depth3d (4 outputs
// per thread, 18 masked scalar loads per input plane, the accumulator window shifted by register
// moves) issued ~478 instructions per 180 FMAs; cl_depth3d (4 channels x 2 outputs) re-reads the
// 45 prepared weight vectors from L1 for every input plane (45 16-byte loads per 360 FMAs), and
// the tensor-core tc_rows_nc wastes 4 of 5 MMA slots on the 3-wide Toeplitz. X3D needs 6.9 GMAC:
// 0.24 ms at the H100's fp32 FMA peak, so the 0.34 ms target needs ~70% of the issue slots to be
// FMAs.
//
// Here a thread owns one channel, R = 8 consecutive outputs of one output row, and a column of
// output depths. It holds the channel's 45 taps in registers as fp32 (read once from the layer's
// own 16-bit filter, rotated for the data-grad: no preparation launch), and the 8 outputs of the
// KD output planes an input plane feeds. Per input plane it loads each of the 3 input row
// segments (10 values: 8 aligned + one each side) once, converts them once and adds each into
// every output plane and tap it meets: 360 FMAs per plane against 30 loads + 30 conversions
// (NDHWC: scalar loads, a warp's lanes are 32 consecutive channels, one 64-byte run) or 9 loads
// (NCDHW: the 8 aligned values as one 16-byte load). The oldest plane is then complete and stored
// with the bias it was started from. The depth loop is unrolled by KD and the plane -> accumulator
// slot map rotates with it (slot = output depth mod KD, all compile-time), so the window never
// moves. Rows outside the input are skipped (a branch, uniform per warp for NDHWC), columns
// outside are zero; products whose output depth is outside the column are skipped (uniform).
// Columns may be cut into depth segments (small batches); a segment re-reads KD - 1 planes.
// Covers: fp16 / bf16, 1 phase, multiplier 1, KD x 3 x 3 at stride 1 with width padding 1 and
// output width = input width, a multiple of R (any depth / height padding); NCDHW also needs
// 16-byte aligned tensors.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kD3rThreads = 256;
constexpr int kD3rR = 8;  // outputs per thread along W

struct D3rItems {
  uint32_t items, C, strips, rows, segs;
  int dl;  // output depths per segment
  bool cl;
};

// false when the plan is not one depth3d_regs covers (see the header) or its item split exceeds
// 32 bits; target: the threads wanted (depth segments only below it).
inline bool depth3d_regs_items(D3rItems& L, const Plan& P, int KD, bool cl, int64_t target) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.k[0] != KD || P.k[1] != 3 || P.k[2] != 3) return false;
  if (P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.pad[2][0] != 1 || P.q[2] != P.in[2] || P.q[2] % kD3rR != 0)
    return false;
  const int64_t strips = P.q[2] / kD3rR, rows = P.q[1];
  const int64_t per_seg = P.N * P.out_c * rows * strips;
  if (per_seg <= 0) return false;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target, segs, dl);
  if (per_seg * segs >= (int64_t(1) << 31)) return false;
  // in-row offsets (NDHWC: up to (R + 2) * C) and depths / rows are ints
  if (P.out_c * (kD3rR + 2) >= (int64_t(1) << 30) || P.in[0] + P.q[0] + KD >= (int64_t(1) << 30) ||
      P.in[1] + P.q[1] + 3 >= (int64_t(1) << 30))
    return false;
  L.items = static_cast<uint32_t>(per_seg * segs);
  L.C = static_cast<uint32_t>(P.out_c);
  L.strips = static_cast<uint32_t>(strips);
  L.rows = static_cast<uint32_t>(rows);
  L.segs = static_cast<uint32_t>(segs);
  L.dl = static_cast<int>(dl);
  L.cl = cl;
  return true;
}

// One input row segment, columns ix0 - 1 .. ix0 + R (ix0 = the strip's first output column) as
// fp32; the outer two are zero where !lo / !hi. cs: the column stride (NDHWC: C; NCDHW: 1, where
// the R middle values are one 16-byte vector).
template <typename T, bool CL>
__device__ __forceinline__ void d3r_row(const T* p, int cs, bool lo, bool hi, float (&x)[kD3rR + 2]) {
  constexpr int R = kD3rR;
  if constexpr (CL) {
#pragma unroll
    for (int c = 1; c <= R; ++c) x[c] = static_cast<float>(p[(c - 1) * cs]);
  } else {
    const Pack<T, R> v = *reinterpret_cast<const Pack<T, R>*>(p);
#pragma unroll
    for (int c = 0; c < R; ++c) x[c + 1] = static_cast<float>(v.v[c]);
  }
  x[0] = lo ? static_cast<float>(p[-cs]) : 0.f;
  x[R + 1] = hi ? static_cast<float>(p[R * cs]) : 0.f;
}

// out = correlation of in with the KD x 3 x 3 filter w ([C][KD][3][3], T; flip: rotated 180
// degrees, the stride-1 data-grad) plus bias; see the header. ROLL: the unrolled, rotating
// accumulator map (else a window shifted by register moves).
template <typename T, int KD, bool CL, bool ROLL>
__global__ void __launch_bounds__(kD3rThreads, 2)
depth3d_regs(const T* __restrict__ in, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
             T* __restrict__ out, const Plan P, const D3rItems L) {
  constexpr int R = kD3rR, NT = KD * 9;
  const uint32_t item = blockIdx.x * kD3rThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  uint32_t c, strip, row;
  if constexpr (CL) {  // channel fastest: a warp's loads are runs of consecutive channels
    c = t % L.C;
    t /= L.C;
    strip = t % L.strips;
    t /= L.strips;
    row = t % L.rows;
    t /= L.rows;
  } else {  // strip fastest: a warp's 16-byte loads are consecutive
    strip = t % L.strips;
    t /= L.strips;
    row = t % L.rows;
    t /= L.rows;
    c = t % L.C;
    t /= L.C;
  }
  const int seg = static_cast<int>(t % L.segs);
  const int64_t n = t / L.segs;

  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]);
  const int64_t IW = P.in[2], C = L.C;
  const int QD = static_cast<int>(P.q[0]), pd = P.pad[0][0];
  const int qx0 = static_cast<int>(strip) * R, iy0 = static_cast<int>(row) - P.pad[1][0];
  const bool lo = qx0 > 0, hi = qx0 + R < IW;
  uint32_t rows = 0;
#pragma unroll
  for (int r = 0; r < 3; ++r) rows |= uint32_t(iy0 + r >= 0 && iy0 + r < IH) << r;

  float wv[NT];
  {
    const T* wc = w + int64_t(c) * NT;
#pragma unroll
    for (int i = 0; i < NT; ++i) wv[i] = static_cast<float>(wc[flip ? NT - 1 - i : i]);
  }
  const float b0 = bias ? static_cast<float>(bias[c]) : 0.f;

  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int start = qd0 - pd, stop = qd1 - pd + KD - 1;  // input planes walked
  // strides (elements) of a column, row and depth plane, input and output
  const int cs = CL ? static_cast<int>(C) : 1;  // (R + 2) * C < 2^30 (depth3d_regs_items)
  const int64_t irs = IW * cs, ips = int64_t(IH) * irs;
  const int64_t OW = P.out[2], ors = OW * cs, ops = P.out[1] * ors;
  // input plane `start`, row iy0, column qx0 (maybe outside the tensor: only pointed at)
  const T* src = CL ? in + ((n * ID + start) * IH + iy0) * irs + int64_t(qx0) * C + c
                    : in + ((n * C + c) * ID + start) * ips + int64_t(iy0) * irs + qx0;
  T* dst = CL ? out + (n * P.out[0] * P.out[1] + row) * ors + int64_t(qx0) * C + c
              : out + (n * C + c) * P.out[0] * ops + int64_t(row) * ors + qx0;

  float acc[KD][R];
#pragma unroll
  for (int j = 0; j < KD; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = b0;
  }
  // Adds input plane id into the output planes it feeds: tap kd goes to slot slot_of(kd).
  auto plane = [&](int id, const T* p, auto slot_of) {
    if (id < 0 || id >= ID) return;
    bool live[KD];  // output depth id + pd - kd is in the column
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) live[kd] = id + pd - kd >= qd0 && id + pd - kd < qd1;
#pragma unroll
    for (int kh = 0; kh < 3; ++kh) {
      if (!((rows >> kh) & 1u)) continue;
      float x[R + 2];
      d3r_row<T, CL>(p + kh * irs, cs, lo, hi, x);
#pragma unroll
      for (int kd = 0; kd < KD; ++kd) {
        if (!live[kd]) continue;
        float(&a)[R] = acc[slot_of(kd)];
#pragma unroll
        for (int kw = 0; kw < 3; ++kw) {
          const float wt = wv[(kd * 3 + kh) * 3 + kw];
#pragma unroll
          for (int r = 0; r < R; ++r) a[r] += wt * x[r + kw];
        }
      }
    }
  };
  // Stores the finished output plane od from a (if od is in the column) and restarts a at the bias.
  auto finish = [&](int od, float (&a)[R]) {
    if (od >= qd0) {
      T* o = dst + int64_t(od) * ops;
      if constexpr (CL) {
#pragma unroll
        for (int r = 0; r < R; ++r) o[r * cs] = static_cast<T>(a[r]);
      } else {
        Pack<T, R> v;
#pragma unroll
        for (int r = 0; r < R; ++r) v.v[r] = static_cast<T>(a[r]);
        *reinterpret_cast<Pack<T, R>*>(o) = v;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) a[r] = b0;
  };

  if constexpr (ROLL) {
    // Step u of each group of KD planes: tap kd feeds output depth id + pd - kd, held in slot
    // (u - kd) mod KD; the plane finished at step u (kd = KD - 1) is slot (u + 1) mod KD, which
    // then starts the output depth that step u + 1 meets with kd = 0.
    for (int id0 = start; id0 < stop; id0 += KD, src += KD * ips) {
#pragma unroll
      for (int u = 0; u < KD; ++u) {
        const int id = id0 + u;
        if (id >= stop) break;
        plane(id, src + u * ips, [u](int kd) { return (u - kd + KD) % KD; });
        finish(id + pd - (KD - 1), acc[(u + 1) % KD]);
      }
    }
  } else {
    // acc[KD - 1 - kd] holds the output depth plane id meets with tap kd; acc[0] finishes.
    for (int id = start; id < stop; ++id, src += ips) {
      plane(id, src, [](int kd) { return KD - 1 - kd; });
      finish(id + pd - (KD - 1), acc[0]);
#pragma unroll
      for (int j = 0; j + 1 < KD; ++j) {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[j][r] = acc[j + 1][r];
      }
#pragma unroll
      for (int r = 0; r < R; ++r) acc[KD - 1][r] = b0;
    }
  }
}

}  // namespace convx::cuda
