// NCDHW depthwise kernels that stream along depth (issue #9: X3D-style KD x 3 x 3 filters).
//
// nc_stream (forward / data-grad) and nc_wgrad_stream (weight-grad) treat depth as a run-time
// loop over filter depth slices: a thread owns one output depth plane and reads the KD input
// planes that feed it, so every input plane is fetched KD times (the forward from L1/L2, the
// weight-grad, which makes one pass over all planes per filter slice, from DRAM: x and dy are
// read KD times each). Here a thread owns a column of output depths instead, with a sliding
// window along depth held in registers:
//  - nc_depth3d (forward / data-grad, depth stride 1 and one depth phase): a thread keeps the
//    TH x R outputs of KD consecutive output planes. It loads each input plane of its column
//    once (its band's rows, as nc_stream does) and adds it into all KD output planes it feeds;
//    the oldest plane is then complete, stored, and the window moves one plane on (register
//    moves, so every register index stays compile-time).
//  - nc_wgrad_depth3d (weight-grad, depth stride 1): a thread keeps the dy values of its micro-tile
//    in the KD output planes an input plane meets, loads each dy and each input plane of its
//    column once, and adds every product into its KD x KH x KW tap sums. Blocks (one channel,
//    a fixed chunk of (sample, depth segment) columns) sum in fixed order like nc_wgrad_stream;
//    sum_slots (wgrad_sum.cuh) adds the chunks in order: bitwise repeatable.
// A column may be cut into depth segments (more threads for small batches); a segment re-reads
// the KD - 1 input planes at its start. Rows are read one element at a time under column masks
// made once per thread, in every dtype: for 16-bit rows nc_stream's 16-byte loads with their
// shift-and-select network cost more instructions than they save here (bf16 5x3x3 forward: 858
// -> 478 instructions per input plane for 180 FMAs; H100, session 6: 1.494 -> 0.743 ms forward,
// 2.982 -> 1.837 ms backward, bench/results/h100/session6/x3d_scalar_ab.log).
// Pointer offsets are 64-bit; the item split and in-row offsets 32-bit (checked on the host).
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace convx::cuda {

constexpr int kDepthThreads = 256;

// Tiles (R outputs along W x TH rows per thread), sized so that the KD x TH x R accumulators
// (forward) or dy values (weight-grad), the KD x KH x KW filter taps (tap sums) and a row fit
// under the 128-register cap of two blocks per SM without spilling (ptxas, sm_90; larger tiles
// spilled 8-92 bytes). 16-bit rows of 8 are one 16-byte vector.
//  - forward / data-grad: fp32 4 x 2 (KD 3), 4 x 1 (KD 5); 16-bit 8 x 1 (KD 3), 4 x 1 (KD 5);
//  - weight-grad: fp32 4 x 4 (KD 3, stride 1), 4 x 2 (KD 3, stride 2), 4 x 1 (KD 5); 16-bit
//    8 x 2 (KD 3) and 8 x 1 (KD 5) at stride 1, 4 x 2 / 4 x 1 at stride 2.
template <typename T, int KD>
constexpr int depth3d_strip() { return sizeof(T) == 2 && KD <= 3 ? 8 : 4; }
template <typename T, int KD>
constexpr int depth3d_band() { return sizeof(T) == 2 || KD > 3 ? 1 : 2; }
template <typename T, int S>
constexpr int wgrad3d_strip() { return sizeof(T) == 2 && S == 1 ? 8 : 4; }
template <typename T, int KD, int S>
constexpr int wgrad3d_band() { return KD > 3 ? 1 : (sizeof(T) == 4 && S == 1 ? 4 : 2); }

// nc_depth3d's item space: items = N * out_c * segs * bands * strips * phases, phase fastest.
struct NcDepth3d {
  uint32_t items;
  int dl;  // output depths per segment
  FastDiv phases, strips, bands, segs, out_c, in_div;
};

// false when the plan is not one nc_depth3d covers (depth stride or phases, channel multiplier
// of the data-grad, filter depth other than KD) or its item split / row offsets exceed 32 bits.
inline bool depth3d_items(NcDepth3d& L, const Plan& P, int KD, int R, int TH, int64_t target) {
  if (P.k[0] != KD || P.S[0] != 1 || P.os[0] != 1 || P.J != 1) return false;
  const int64_t strips = ceil_div(P.q[2], R), bands = ceil_div(P.q[1], TH);
  const int64_t per_seg = P.N * P.out_c * bands * strips * P.phases;
  if (per_seg <= 0) return false;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target, segs, dl);
  const int64_t items = per_seg * segs;
  if (items >= (int64_t(1) << 31)) return false;  // also bounds out_c, in_div
  if (P.in[2] >= (int64_t(1) << 30) || (strips * R) * P.S[2] + P.k[2] >= (int64_t(1) << 30)) return false;
  L.items = static_cast<uint32_t>(items);
  L.dl = static_cast<int>(dl);
  L.phases = fast_div(static_cast<uint32_t>(P.phases));
  L.strips = fast_div(static_cast<uint32_t>(strips));
  L.bands = fast_div(static_cast<uint32_t>(bands));
  L.segs = fast_div(static_cast<uint32_t>(segs));
  L.out_c = fast_div(static_cast<uint32_t>(P.out_c));
  L.in_div = fast_div(static_cast<uint32_t>(P.in_div));
  return true;
}

// out = phased correlation of in with w ([phases][out_c][KD][KH][KW], opmath) plus bias, for
// plans of one depth phase at depth stride 1 (forward or data-grad); see the header.
template <typename T, int KD, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(kDepthThreads, 2)
nc_depth3d(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w, const T* __restrict__ bias,
           T* __restrict__ out, const Plan P, const NcDepth3d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = (R - 1) * S + KW;  // input columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // input rows of a band
  static_assert(NX <= 32 && NR <= 32, "column / row masks");
  const uint32_t item = blockIdx.x * kDepthThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  const int ph = static_cast<int>(L.phases.split(t));
  const uint32_t strip = L.strips.split(t);
  const uint32_t band = L.bands.split(t);
  const uint32_t seg = L.segs.split(t);
  const uint32_t co32 = L.out_c.split(t);
  const int64_t co = co32, n = t;
  // One depth phase: the phase is (row phase, column phase).
  const int pw = L.phases.d == 1 ? 0 : ph % P.os[2];
  const int phh = L.phases.d == 1 ? 0 : ph / P.os[2];
  const int64_t qy0 = int64_t(band) * TH;
  const int qx0 = static_cast<int>(strip) * R;  // < 2^30 (depth3d_items)
  if (qy0 >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) return;  // past the end of a shorter phase

  const int64_t IH = P.in[1], ID = P.in[0], QD = P.q[0];
  const int IW = static_cast<int>(P.in[2]);
  const int64_t iy0 = qy0 * S - P.pad[1][phh];
  const int ix0 = qx0 * S - P.pad[2][pw];
  uint32_t cols = 0, rows = 0;
#pragma unroll
  for (int c = 0; c < NX; ++c) cols |= uint32_t(ix0 + c >= 0 && ix0 + c < IW) << c;
#pragma unroll
  for (int r = 0; r < NR; ++r) rows |= uint32_t(iy0 + r >= 0 && iy0 + r < IH) << r;
  acc_t wv[KD * KH * KW];
  const acc_t* wc = w + ph * P.wphase + co * (KD * KH * KW);
#pragma unroll
  for (int i = 0; i < KD * KH * KW; ++i) wv[i] = wc[i];
  const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
  const int64_t in_plane = IH * IW, out_plane = P.out[1] * P.out[2];
  // Row iy0 of depth 0 of the input channel (maybe outside the tensor: only pointed at).
  const T* src = in + (n * P.in_c + int64_t(L.in_div.div(co32))) * ID * in_plane + iy0 * IW;
  T* const dst = out + ((n * P.out_c + co) * P.out[0] + P.r[0][0]) * out_plane;
  const int64_t qd0 = int64_t(seg) * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int64_t pd = P.pad[0][0];

  // Stores one finished output plane's TH x R outputs (as nc_stream_vec: 16-byte vectors where
  // the strip is whole, the phase dense along W and the address aligned).
  constexpr int SV = R * int(sizeof(T)) < 16 ? R : 16 / int(sizeof(T));
  struct alignas(sizeof(T) * SV) Out { T v[SV]; };
  const int qwn = static_cast<int>(P.qn[2][pw]), ow = P.os[2], rw = P.r[2][pw];
  const int64_t qhn = P.qn[1][phh], oy = P.os[1], ry = P.r[1][phh], OW = P.out[2];
  auto store = [&](T* plane, const acc_t (&a)[TH][R]) {
#pragma unroll
    for (int b = 0; b < TH; ++b) {
      const int64_t qy = qy0 + b;
      if (qy >= qhn) break;
      T* orow = plane + (qy * oy + ry) * OW;
      if (ow == 1) {
        T* o = orow + qx0;
        if (qx0 + R <= qwn && reinterpret_cast<uintptr_t>(o) % (sizeof(T) * SV) == 0) {
#pragma unroll
          for (int s = 0; s < R / SV; ++s) {
            Out v;
#pragma unroll
            for (int e = 0; e < SV; ++e) v.v[e] = static_cast<T>(a[b][s * SV + e] + b0);
            *reinterpret_cast<Out*>(o + s * SV) = v;
          }
        } else {
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (qx0 + r < qwn) o[r] = static_cast<T>(a[b][r] + b0);
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (qx0 + r < qwn) orow[int64_t(qx0 + r) * ow + rw] = static_cast<T>(a[b][r] + b0);
        }
      }
    }
  };

  // acc[j]: output depth id + pd - (KD - 1) + j, which input plane id meets with filter depth
  // KD - 1 - j.
  acc_t acc[KD][TH][R];
#pragma unroll
  for (int j = 0; j < KD; ++j) {
#pragma unroll
    for (int b = 0; b < TH; ++b) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[j][b][r] = acc_t(0);
    }
  }
  for (int64_t id = qd0 - pd; id < qd1 - pd + KD - 1; ++id) {
    if (id >= 0 && id < ID) {
      const T* row = src + id * in_plane;
#pragma unroll
      for (int r = 0; r < NR; ++r, row += IW) {
        const bool row_ok = (rows >> r) & 1u;
        acc_t xv[NX];
#pragma unroll
        for (int c = 0; c < NX; ++c) xv[c] = row_ok && ((cols >> c) & 1u) ? static_cast<acc_t>(row[ix0 + c]) : acc_t(0);
        // Output row b uses this input row as its filter row r - b*S.
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b * S;
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kd = 0; kd < KD; ++kd) {
#pragma unroll
            for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
              for (int o = 0; o < R; ++o) acc[KD - 1 - kd][b][o] += wv[(kd * KH + kh) * KW + kw] * xv[o * S + kw];
            }
          }
        }
      }
    }
    // acc[0] has met its last input plane.
    const int64_t od = id + pd - (KD - 1);
    if (od >= qd0) store(dst + od * out_plane, acc[0]);
#pragma unroll
    for (int j = 0; j + 1 < KD; ++j) {
#pragma unroll
      for (int b = 0; b < TH; ++b) {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[j][b][r] = acc[j + 1][b][r];
      }
    }
#pragma unroll
    for (int b = 0; b < TH; ++b) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[KD - 1][b][r] = acc_t(0);
    }
  }
}

// nc_wgrad_depth3d's launch layout: micro-tiles per plane `items` (bands x column groups); thread
// t < IS * SP takes tiles t % IS (+ k * IS) of columns t / IS (+ k * SP); a column ("unit") is
// one sample's depth segment; a block is one channel x one chunk of units.
struct NcWgrad3d {
  int items, cgroups, IS, SP, threads;
  int units, segs, dl, chunk, chunks;
};

// From the shapes alone (so the summation order is too); false when the plan is not one the
// kernel covers (depth stride, filter depth) or a plane's 32-bit offsets could overflow.
inline bool choose_wgrad3d(NcWgrad3d& L, const Plan& P, int KD, int R, int TH, int S, int KH, int KW) {
  if (P.k[0] != KD || P.S[0] != 1) return false;
  constexpr int64_t lim = std::numeric_limits<int32_t>::max() / 2;
  const int64_t bh = P.in[1] + (P.q[1] + TH) * S + KH + P.pad[1][0];
  const int64_t bw = P.in[2] + (P.q[2] + R) * S + KW + P.pad[2][0];
  if (bh * bw > lim || (P.q[1] + TH) * (P.q[2] + R) > lim || P.N <= 0 || P.q[0] <= 0 ||
      P.in[0] + P.q[0] + KD + std::abs(P.pad[0][0]) > lim) {
    return false;
  }
  const int64_t cg = ceil_div(P.q[2], R), items = cg * ceil_div(P.q[1], TH);
  L.cgroups = static_cast<int>(cg);
  L.items = static_cast<int>(items);
  const int64_t sp = items >= kWgradThreads ? 1 : kWgradThreads / items;
  // Enough blocks to fill the GPU several times over (as nc_wgrad_stream).
  const int64_t per_channel = ceil_div(2048, P.out_c);
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, P.N, per_channel * sp, segs, dl);
  const int64_t units = P.N * segs;
  if (units > lim) return false;
  L.SP = static_cast<int>(std::min<int64_t>(sp, units));
  L.IS = items >= kWgradThreads ? kWgradThreads : static_cast<int>(items);
  L.threads = static_cast<int>(ceil_div(int64_t(L.IS) * L.SP, 32) * 32);
  L.units = static_cast<int>(units);
  L.segs = static_cast<int>(segs);
  L.dl = static_cast<int>(dl);
  const int64_t chunks = std::clamp<int64_t>(per_channel, 1, std::max<int64_t>(1, units / L.SP));
  L.chunk = static_cast<int>(ceil_div(units, chunks));
  L.chunks = static_cast<int>(ceil_div(units, L.chunk));
  return true;
}

// part[co][chunk][(kd * KH + kh) * KW + kw]: the block's sum over its chunk of columns.
template <typename T, int KD, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(kWgradThreads, 2)
nc_wgrad_depth3d(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
                 const Plan P, const NcWgrad3d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NV = KD * KH * KW, NX = (R - 1) * S + KW, NR = (TH - 1) * S + KH;
  static_assert(NX <= 32 && NR <= 32 && R <= 32, "micro-tile masks");
  __shared__ acc_t red[(kWgradThreads / 32) * NV];
  const int tid = threadIdx.x;
  const bool active = tid < L.IS * L.SP;
  const int sg = tid / L.IS, i0 = tid - sg * L.IS;
  // 32-bit within a plane and for depth counters (choose_wgrad3d proved it fits).
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]), ID = static_cast<int>(P.in[0]);
  const int QH = static_cast<int>(P.q[1]), QW = static_cast<int>(P.q[2]), QD = static_cast<int>(P.q[0]);
  const int pd = P.pad[0][0];
  const int64_t in_plane = int64_t(IH) * IW, out_plane = int64_t(QH) * QW;
  const int64_t blocks = P.out_c * L.chunks;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t co = b / L.chunks;
    const int ck = static_cast<int>(b - co * L.chunks);
    const int u1 = (ck + 1) * L.chunk < L.units ? (ck + 1) * L.chunk : L.units;
    const T* xc = x + (co / P.in_div) * P.in[0] * in_plane;  // sample 0 of the channel
    const T* gc = gy + co * QD * out_plane;
    acc_t v[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] = acc_t(0);
    for (int it = i0; active && it < L.items; it += L.IS) {
      const int band = it / L.cgroups, cg = it - band * L.cgroups;
      const int qy0 = band * TH, qx0 = cg * R;
      const int iy0 = qy0 * S - P.pad[1][0], ix0 = qx0 * S - P.pad[2][0];
      uint32_t xcols = 0, xrows = 0, gcols = 0, grows = 0;
#pragma unroll
      for (int c = 0; c < NX; ++c) xcols |= uint32_t(ix0 + c >= 0 && ix0 + c < IW) << c;
#pragma unroll
      for (int j = 0; j < NR; ++j) xrows |= uint32_t(iy0 + j >= 0 && iy0 + j < IH) << j;
#pragma unroll
      for (int r = 0; r < R; ++r) gcols |= uint32_t(qx0 + r < QW) << r;
#pragma unroll
      for (int tt = 0; tt < TH; ++tt) grows |= uint32_t(qy0 + tt < QH) << tt;
      for (int u = ck * L.chunk + sg; u < u1; u += L.SP) {
        const int n = u / L.segs, seg = u - n * L.segs;
        const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
        // Row iy0 / qy0 of depth 0 of the sample (the input row maybe outside: only pointed at).
        const T* xs = xc + int64_t(n) * P.in_c * P.in[0] * in_plane + iy0 * IW;
        const T* gs = gc + int64_t(n) * P.out_c * QD * out_plane + qy0 * QW;
        // g[j]: dy of output depth id + pd - (KD - 1) + j, which input plane id meets with
        // filter depth KD - 1 - j (zero outside the segment).
        acc_t g[KD][TH][R];
#pragma unroll
        for (int j = 0; j < KD; ++j) {
#pragma unroll
          for (int tt = 0; tt < TH; ++tt) {
#pragma unroll
            for (int r = 0; r < R; ++r) g[j][tt][r] = acc_t(0);
          }
        }
        for (int id = qd0 - pd; id < qd1 - pd + KD - 1; ++id) {
#pragma unroll
          for (int j = 0; j + 1 < KD; ++j) {
#pragma unroll
            for (int tt = 0; tt < TH; ++tt) {
#pragma unroll
              for (int r = 0; r < R; ++r) g[j][tt][r] = g[j + 1][tt][r];
            }
          }
          const int od = id + pd;  // >= qd0
          const T* grow = gs + int64_t(od) * out_plane;
#pragma unroll
          for (int tt = 0; tt < TH; ++tt, grow += QW) {
            const bool ok = od < qd1 && ((grows >> tt) & 1u);
#pragma unroll
            for (int r = 0; r < R; ++r) {
              g[KD - 1][tt][r] = ok && ((gcols >> r) & 1u) ? static_cast<acc_t>(grow[qx0 + r]) : acc_t(0);
            }
          }
          if (id < 0 || id >= ID) continue;
          const T* row = xs + int64_t(id) * in_plane;
#pragma unroll
          for (int j = 0; j < NR; ++j, row += IW) {
            const bool row_ok = (xrows >> j) & 1u;
            acc_t xv[NX];
#pragma unroll
            for (int c = 0; c < NX; ++c) {
              xv[c] = row_ok && ((xcols >> c) & 1u) ? static_cast<acc_t>(row[ix0 + c]) : acc_t(0);
            }
            // Input row j meets filter row kh = j - tt*S of output row tt.
#pragma unroll
            for (int tt = 0; tt < TH; ++tt) {
              const int kh = j - tt * S;
              if (kh < 0 || kh >= KH) continue;
#pragma unroll
              for (int kd = 0; kd < KD; ++kd) {
#pragma unroll
                for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
                  for (int r = 0; r < R; ++r) v[(kd * KH + kh) * KW + kw] += g[KD - 1 - kd][tt][r] * xv[r * S + kw];
                }
              }
            }
          }
        }
      }
    }
    wgrad_block_sum<NV>(v, red, part + (co * L.chunks + ck) * NV);
  }
}

}  // namespace convx::cuda
