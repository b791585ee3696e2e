// Channels-last (NDHWC) depthwise forward / data-grad streaming along depth (issue #9: X3D-style
// KD x KH x KW filters at depth stride 1, one depth phase, channel multiplier 1).
//
// cl_gather (cl_tiled.cuh) computes one output depth plane per thread and reads the KD x KH input
// rows feeding it, so each input row is fetched KD times through L1/L2. Here a thread owns V
// channels (one vector) of R consecutive outputs of one output row (one phase) and walks a column
// of output depths with a sliding window in registers, as nc_depth3d does for NCDHW: it keeps the
// R x V outputs of the KD output planes an input plane feeds (acc[j]: output depth
// id + pd - (KD - 1) + j, which input plane id meets with filter depth KD - 1 - j), loads each of
// the plane's KH input row segments ((R - 1) * S + KW vectors) once and adds it into all KD
// planes, with the KW weight vectors of each filter depth from L1 (the filter, [tap][channel] as
// cl_gather reads it, is too large for registers next to the window). The oldest plane is then
// complete and stored (bias fused), and the window moves one plane (register moves; every
// register index is compile-time). A column may be cut into depth segments when one column per
// thread gives too few threads (small batches); a segment re-reads the KD - 1 planes at its start.
// A warp covers cg channel vectors x sp strips (cg the largest power of two up to 32 dividing the
// channel vectors, sp = 32 / cg up to the strips per row): its weight loads then touch cg vectors
// (C 192 fp32: cg = 16, 256 bytes, 2 L1 wavefronts instead of 4 for 32 lanes of different
// channels), while its input and output vectors stay runs of cg lanes of consecutive channels. Threads are numbered
// channel vector within the group fastest, then strip within the group, channel group, strip
// group, row, phase, segment, sample. 32-bit item split (checked on the host), 64-bit pointer
// offsets, accumulation in the opmath type.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace convx::cuda {

constexpr int kClDepthThreads = 256;

// Outputs per thread along W: the KD x R x V window, a row segment of (R - 1) * S + KW vectors and
// KW weight vectors under the 128-register cap of two blocks per SM (V = 4).
template <int KD>
constexpr int cl_depth3d_strip() { return KD <= 3 ? 4 : 2; }

struct ClDepth3d {
  uint32_t items;                 // threads in all
  uint32_t cg, sp, cgroups, sgroups;  // channel vectors x strips of a lane group; groups of each
  uint32_t strips, rows, segs;    // strips per row, rows per phase, depth segments
  int dl;                         // output depths per segment
};

// false when the plan is not one cl_depth3d covers (depth stride, depth phases, filter depth,
// multiplier) or the item split / in-row offsets exceed 32 bits.
inline bool cl_depth3d_items(ClDepth3d& L, const Plan& P, int KD, int R, int V, int64_t target) {
  if (P.k[0] != KD || P.S[0] != 1 || P.os[0] != 1 || P.J != 1 || P.in_div != 1 || P.out_c % V != 0) return false;
  const int64_t cv = P.out_c / V, strips = ceil_div(P.q[2], R), rows = P.q[1];
  int64_t cg = 1;
  while (cg < 32 && cv % (2 * cg) == 0) cg *= 2;
  const int64_t sp = std::min<int64_t>(32 / cg, strips), sgroups = ceil_div(strips, sp);
  const int64_t per_seg = P.N * P.phases * rows * sgroups * sp * cv;
  if (per_seg <= 0) return false;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target, segs, dl);
  const int64_t items = per_seg * segs;
  if (items >= (int64_t(1) << 31)) return false;
  // offsets inside a row segment are 32-bit multiples of C; depths and rows are ints
  constexpr int64_t lim = std::numeric_limits<int32_t>::max() / 4;
  if (P.out_c * (int64_t(R) * 2 + P.k[2]) > lim || P.in[0] + P.q[0] + KD > lim || P.in[1] > lim || P.in[2] > lim ||
      (P.q[1] + 1) * P.S[1] + P.k[1] > lim || (P.q[2] + R) * P.S[2] + P.k[2] > lim) {
    return false;
  }
  L.items = static_cast<uint32_t>(items);
  L.cg = static_cast<uint32_t>(cg);
  L.sp = static_cast<uint32_t>(sp);
  L.cgroups = static_cast<uint32_t>(cv / cg);
  L.sgroups = static_cast<uint32_t>(sgroups);
  L.strips = static_cast<uint32_t>(strips);
  L.rows = static_cast<uint32_t>(rows);
  L.segs = static_cast<uint32_t>(segs);
  L.dl = static_cast<int>(dl);
  return true;
}

// The V values at p in the opmath type (zeros when !ok), loaded as 32-bit words.
template <typename T, int V, typename acc_t>
__device__ __forceinline__ void cl3_load(const T* p, bool ok, acc_t (&out)[V]) {
  Pack<uint32_t, sizeof(T) * V / 4> raw{};
  if (ok) raw = *reinterpret_cast<const Pack<uint32_t, sizeof(T) * V / 4>*>(p);
  Pack<T, V> v;
  memcpy(&v, &raw, sizeof(v));
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = static_cast<acc_t>(v.v[i]);
}

// out = phased correlation of in with w ([phases][taps][wrows], opmath) plus bias, for plans of
// one depth phase at depth stride 1 (forward, or the data-grad); see the header.
template <typename T, int KD, int KH, int KW, int S, int V, int R>
__global__ void __launch_bounds__(kClDepthThreads, 2)
cl_depth3d(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w, const T* __restrict__ bias,
           T* __restrict__ out, const Plan P, const ClDepth3d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int SEG = (R - 1) * S + KW;  // input vectors of a row segment
  static_assert(SEG < 32 && KH < 32, "column / row masks");
  const uint32_t item = blockIdx.x * kClDepthThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  const uint32_t cl = t % L.cg;
  t /= L.cg;
  const uint32_t sl = t % L.sp;
  t /= L.sp;
  const int cv = static_cast<int>((t % L.cgroups) * L.cg + cl);
  t /= L.cgroups;
  const uint32_t strip = (t % L.sgroups) * L.sp + sl;
  t /= L.sgroups;
  if (strip >= L.strips) return;  // the last strip group's lanes past the row
  const int qy = static_cast<int>(t % L.rows);
  t /= L.rows;
  const int ph = static_cast<int>(t % uint32_t(P.phases));
  t /= uint32_t(P.phases);
  const int seg = static_cast<int>(t % L.segs);
  const int64_t n = t / L.segs;
  const int pw = ph % P.os[2], phh = ph / P.os[2];
  const int qx0 = static_cast<int>(strip) * R;
  if (qy >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) return;  // past the end of a shorter phase

  const int C = static_cast<int>(P.out_c);  // < 2^29 (cl_depth3d_items)
  const int c0 = cv * V;
  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]);
  const int QD = static_cast<int>(P.q[0]), pd = P.pad[0][0];
  const int iy0 = qy * S - P.pad[1][phh], ix0 = qx0 * S - P.pad[2][pw];
  uint32_t cols = 0, rows = 0;
#pragma unroll
  for (int c = 0; c < SEG; ++c) cols |= uint32_t(ix0 + c >= 0 && ix0 + c < IW) << c;
#pragma unroll
  for (int r = 0; r < KH; ++r) rows |= uint32_t(iy0 + r >= 0 && iy0 + r < IH) << r;
  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int64_t row_stride = int64_t(IW) * C, in_plane = int64_t(IH) * row_stride;
  // Input depth qd0 - pd, row iy0, column ix0 (maybe outside the tensor: only pointed at).
  const T* src = in + ((n * ID + (qd0 - pd)) * IH + iy0) * row_stride + int64_t(ix0) * C + c0;
  const acc_t* wc = w + ph * P.wphase + c0;
  const int64_t wrows = P.wrows;
  acc_t b0[V];
#pragma unroll
  for (int v = 0; v < V; ++v) b0[v] = acc_t(0);
  if (bias) cl3_load<T, V>(bias + c0, true, b0);
  // Output (depth 0 of the sample, row of qy, column of qx0) and the output plane's size.
  const int64_t OH = P.out[1], OW = P.out[2];
  const int64_t oy = int64_t(qy) * P.os[1] + P.r[1][phh];
  T* dst = out + ((n * P.out[0] + P.r[0][0]) * OH + oy) * OW * C + (int64_t(qx0) * P.os[2] + P.r[2][pw]) * C + c0;
  const int64_t out_plane = OH * OW * C, ostep = int64_t(P.os[2]) * C;
  const int nout = static_cast<int>(P.qn[2][pw] - qx0 < R ? P.qn[2][pw] - qx0 : R);

  acc_t acc[KD][R][V];
#pragma unroll
  for (int j = 0; j < KD; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[j][r][v] = acc_t(0);
    }
  }
  for (int id = qd0 - pd; id < qd1 - pd + KD - 1; ++id, src += in_plane) {
    if (id >= 0 && id < ID) {
#pragma unroll
      for (int kh = 0; kh < KH; ++kh) {
        if (!((rows >> kh) & 1u)) continue;
        const T* row = src + kh * row_stride;
        acc_t xv[SEG][V];
#pragma unroll
        for (int c = 0; c < SEG; ++c) cl3_load<T, V>(row + c * C, (cols >> c) & 1u, xv[c]);
#pragma unroll
        for (int kd = 0; kd < KD; ++kd) {
          const acc_t* wr = wc + int64_t((kd * KH + kh) * KW) * wrows;
          acc_t wv[KW][V];
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
            const Pack<acc_t, V> p = *reinterpret_cast<const Pack<acc_t, V>*>(wr + kw * wrows);
#pragma unroll
            for (int v = 0; v < V; ++v) wv[kw][v] = p.v[v];
          }
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
#pragma unroll
              for (int v = 0; v < V; ++v) acc[KD - 1 - kd][r][v] += wv[kw][v] * xv[r * S + kw][v];
            }
          }
        }
      }
    }
    // acc[0] has met its last input plane.
    const int od = id + pd - (KD - 1);
    if (od >= qd0) {
      T* o = dst + int64_t(od) * out_plane;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r >= nout) break;
        Pack<T, V> pk;
#pragma unroll
        for (int v = 0; v < V; ++v) pk.v[v] = static_cast<T>(acc[0][r][v] + b0[v]);
        *reinterpret_cast<Pack<T, V>*>(o + r * ostep) = pk;
      }
    }
#pragma unroll
    for (int j = 0; j + 1 < KD; ++j) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int v = 0; v < V; ++v) acc[j][r][v] = acc[j + 1][r][v];
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[KD - 1][r][v] = acc_t(0);
    }
  }
}

}  // namespace convx::cuda
