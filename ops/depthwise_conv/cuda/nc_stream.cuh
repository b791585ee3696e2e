// Streaming depthwise kernel for NC(D)HW (and NCL): forward / data-grad of the phased
// correlation (plan.cuh) with no shared memory and no barriers.
//
// One thread owns a work item: R consecutive outputs along W (a strip) in each of TH consecutive
// output rows (a band) of one phase of one (sample, channel, output depth) plane. It walks the
// NR = (TH-1)*S + KH input rows of the band once, loading each row's NX = (R-1)*S + KW values
// into registers (zero outside the tensor), and adds every loaded row into all the output rows
// whose filter touches it. All loops over rows, taps and outputs are unrolled at compile time, so
// the filter, the row and the TH x R accumulators live in registers. Items are numbered phase
// fastest, then strip, band, plane: a warp's loads and stores run along rows, and the W-phases of
// the data-grad write interleaved columns from neighbouring lanes at the same time. Item
// decomposition is 32-bit (the launcher checks the count and the row width), pointer offsets
// 64-bit. Depth (3-D) and the channel multiplier of the data-grad are runtime loops.
//
// Two kernels of this design:
//  - nc_stream (fp32 2-D): 4 outputs per row, one scalar load per value, as first measured;
//  - nc_stream_vec (1-D rows / 1xK filters in every dtype, 16-bit 2-D): strips of 8 or 16
//    outputs, 16-byte row loads, item split by multiply-high (FastDiv). Row loads: 16-byte vectors
//    from the 16-byte boundary at or before the segment's first element, covering the NX values
//    at any misalignment; a vector that lies wholly inside the row is one load, one that crosses
//    the row's ends (or a row outside the tensor) is loaded element by element with bounds tests
//    (so nothing outside the row is read, whatever the row length and base pointer). The values
//    are then moved down by the misalignment m (0..V-1 elements, per thread and row) with a
//    log2(V)-stage select network: register indices stay static.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kStreamThreads = 256;

// The flat item space: items = planes * bands * strips * phases (< 2^31).
struct NcStream {
  uint32_t items, phases, strips, bands, q0, out_c;
};

// Fills L for R outputs per strip and TH rows per band; false when the items do not fit 31 bits.
inline bool stream_items(NcStream& L, const Plan& P, int R, int TH) {
  const int64_t strips = ceil_div(P.q[2], R), bands = ceil_div(P.q[1], TH);
  const int64_t items = P.N * P.out_c * P.q[0] * bands * strips * P.phases;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.phases = static_cast<uint32_t>(P.phases);
  L.strips = static_cast<uint32_t>(strips);
  L.bands = static_cast<uint32_t>(bands);
  L.q0 = static_cast<uint32_t>(P.q[0]);
  L.out_c = static_cast<uint32_t>(P.out_c);
  return true;
}

// fp32 2-D (scalar loads, 4 outputs per row). w: prepared weights [phases][wrows][k0][KH][KW] in
// the opmath type. Two blocks per SM (at most 128 registers): unbounded, the compiler hoists every
// load of the band into registers (up to 255, one block per SM); the cap keeps 16 warps per SM,
// each with many loads in flight. Kept as measured: 7x7 at 8 rows sits at the edge of the cap, and
// the vector kernel's changes (FastDiv, stores) tipped ptxas into 700-byte spills here.
template <typename T, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(kStreamThreads, 2)
nc_stream(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const NcStream L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = (R - 1) * S + KW;  // input columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // input rows of a band
  const uint32_t item = blockIdx.x * kStreamThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  const int ph = static_cast<int>(t % L.phases);
  t /= L.phases;
  const uint32_t strip = t % L.strips;
  t /= L.strips;
  const uint32_t band = t % L.bands;
  t /= L.bands;
  const uint32_t qd = t % L.q0;
  t /= L.q0;
  const uint32_t co32 = t % L.out_c;
  const int64_t co = co32, n = t / L.out_c;
  const int pw = ph % P.os[2], phh = (ph / P.os[2]) % P.os[1], pd = ph / (P.os[2] * P.os[1]);
  const int64_t qy0 = int64_t(band) * TH, qx0 = int64_t(strip) * R;
  // Items past the end of a shorter phase.
  if (qd >= P.qn[0][pd] || qy0 >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) return;

  const int64_t IH = P.in[1], IW = P.in[2];
  const int64_t iy0 = qy0 * S - P.pad[1][phh], ix0 = qx0 * S - P.pad[2][pw];
  bool col_ok[NX];
#pragma unroll
  for (int c = 0; c < NX; ++c) col_ok[c] = ix0 + c >= 0 && ix0 + c < IW;
  acc_t acc[TH][R];
#pragma unroll
  for (int b = 0; b < TH; ++b) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[b][r] = acc_t(0);
  }
  // What the store needs, computed before the loops so that n, co, qd need not stay live.
  const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
  T* const oplane = out + ((n * P.out_c + co) * P.out[0] + int64_t(qd) * P.os[0] + P.r[0][pd]) * P.out[1] * P.out[2];
  const int64_t in_plane = P.in[0] * IH * IW, taps = int64_t(P.k[0]) * KH * KW;
  const T* src = in + (n * P.in_c + int64_t(co32 / static_cast<uint32_t>(P.in_div)) * P.J) * in_plane;
  const acc_t* wj = w + ph * P.wphase + co * P.J * taps;
  const int64_t id0 = int64_t(qd) * P.S[0] - P.pad[0][pd];
  for (int64_t j = 0; j < P.J; ++j, src += in_plane, wj += taps) {
    for (int kd = 0; kd < P.k[0]; ++kd) {
      const int64_t id = id0 + kd;
      if (id < 0 || id >= P.in[0]) continue;
      acc_t wv[KH * KW];
#pragma unroll
      for (int x = 0; x < KH * KW; ++x) wv[x] = wj[kd * KH * KW + x];
      // Rows above the tensor are never dereferenced (row_ok), only pointed at.
      const T* row = src + (id * IH + iy0) * IW + ix0;
#pragma unroll
      for (int r = 0; r < NR; ++r, row += IW) {
        const bool row_ok = iy0 + r >= 0 && iy0 + r < IH;
        acc_t xv[NX];
#pragma unroll
        for (int c = 0; c < NX; ++c) xv[c] = row_ok && col_ok[c] ? static_cast<acc_t>(row[c]) : acc_t(0);
        // Output row b of the band uses this input row as its filter row r - b*S.
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b * S;
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
            for (int o = 0; o < R; ++o) acc[b][o] += wv[kh * KW + kw] * xv[o * S + kw];
          }
        }
      }
    }
  }

  const int64_t qwn = P.qn[2][pw], ow = P.os[2], rw = P.r[2][pw];
  const bool full = ow == 1 && qx0 + R <= qwn;
#pragma unroll
  for (int b = 0; b < TH; ++b) {
    const int64_t qy = qy0 + b;
    if (qy >= P.qn[1][phh]) break;
    T* orow = oplane + (qy * P.os[1] + P.r[1][phh]) * P.out[2];
    if (full && reinterpret_cast<uintptr_t>(orow + qx0) % (sizeof(T) * R) == 0) {
      struct alignas(sizeof(T) * R) V { T v[R]; } o;
#pragma unroll
      for (int r = 0; r < R; ++r) o.v[r] = static_cast<T>(acc[b][r] + b0);
      *reinterpret_cast<V*>(orow + qx0) = o;
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (qx0 + r < qwn) orow[(qx0 + r) * ow + rw] = static_cast<T>(acc[b][r] + b0);
      }
    }
  }
}


// n / d for n < 2^31 and a divisor d fixed per launch, by a multiply-high, an add and a shift
// (Granlund & Montgomery 1994: l = ceil(log2 d), m = floor(2^32 (2^l - d) / d) + 1; the 33-bit
// sum of their proof fits 32 bits because n < 2^31). The item split used 32-bit hardware-less
// divisions (~20 instructions each) for every 4 outputs.
struct FastDiv {
  uint32_t d, m, l;
  __host__ __device__ uint32_t div(uint32_t n) const {
    return (static_cast<uint32_t>((uint64_t(n) * m) >> 32) + n) >> l;
  }
  // Returns n % d and replaces n by n / d.
  __host__ __device__ uint32_t split(uint32_t& n) const {
    const uint32_t q = div(n), r = n - q * d;
    n = q;
    return r;
  }
};

inline FastDiv fast_div(uint32_t d) {  // 1 <= d <= 2^31
  FastDiv f{d, 0, 0};
  while ((uint64_t(1) << f.l) < d) ++f.l;
  f.m = static_cast<uint32_t>((((uint64_t(1) << f.l) - d) << 32) / d + 1);
  return f;
}

// nc_stream_vec's item space (as NcStream) with its divisors as FastDiv; in_div of the plan.
struct NcStreamVec {
  uint32_t items;
  FastDiv phases, strips, bands, q0, out_c, in_div;
};

// Fills L for R outputs per strip and TH rows per band; false when the items do not fit 31 bits
// or a row's offsets not 30 bits (the kernel's column arithmetic is 32-bit).
inline bool stream_vec_items(NcStreamVec& L, const Plan& P, int R, int TH) {
  const int64_t strips = ceil_div(P.q[2], R), bands = ceil_div(P.q[1], TH);
  const int64_t items = P.N * P.out_c * P.q[0] * bands * strips * P.phases;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;  // also bounds out_c, in_div
  if (P.in[2] >= (int64_t(1) << 30) || (strips * R) * P.S[2] + P.k[2] >= (int64_t(1) << 30)) return false;
  L.items = static_cast<uint32_t>(items);
  L.phases = fast_div(static_cast<uint32_t>(P.phases));
  L.strips = fast_div(static_cast<uint32_t>(strips));
  L.bands = fast_div(static_cast<uint32_t>(bands));
  L.q0 = fast_div(static_cast<uint32_t>(P.q[0]));
  L.out_c = fast_div(static_cast<uint32_t>(P.out_c));
  L.in_div = fast_div(static_cast<uint32_t>(P.in_div));
  return true;
}

// The tiles the launcher (nc_stream.cu) uses, shared with the CPU harness. Chosen on the H100
// (docs/performance.md: the CONVX_NC_TILE tuning run of session 4):
//  - one-row filters (1-D rows, 1xK): strips of 8 outputs for k <= 4 (16 measured slower: Mamba
//    k4 bf16 forward 0.52 vs 0.18 ms), 16 for k15, 8 for 31 taps (16 spilled), TH 1; 16-byte
//    row loads;
//  - 16-bit, KH > 1: 8 x 4 (8 x 2 for 5- and 7-wide filters): a strip is one 16-byte vector;
//    16-byte row loads (bands of 2 under an 80-register cap measured within 5%: not kept);
//  - fp32, KH > 1: 4 x 8, or 4 x 4 when 8-row bands give fewer than two waves; scalar loads
//    (nc_stream; the 16-bit 8 x 4 tiles on 7x7 fp32 planes measured slower: 0.058 vs 0.043 ms).
template <typename T, int KH, int KW>
constexpr int stream_strip() {
  return KH == 1 ? (KW <= 4 || KW >= 31 ? 8 : 16) : (sizeof(T) == 2 ? 8 : 4);
}
template <typename T, int KH>
constexpr bool stream_vec() {  // nc_stream_vec (else nc_stream)
  return KH == 1 || sizeof(T) == 2;
}
template <int KW>
constexpr int stream_vec_band() {  // rows of nc_stream_vec's 2-D tiles (8 outputs wide)
  return KW >= 5 ? 2 : 4;
}
template <typename T, int KH, int KW>
constexpr int stream_band_tall() {
  return KH == 1 ? 1 : (sizeof(T) == 2 ? stream_vec_band<KW>() : 8);
}
template <typename T, int KH, int KW>
constexpr int stream_band_short() {
  return KH == 1 ? 1 : (sizeof(T) == 2 ? stream_vec_band<KW>() : 4);
}
// Blocks per SM the register budget of nc_stream_vec is sized for (__launch_bounds__): 3 (80
// registers) for 1-D rows up to 4 taps; else 2 (128: with 3, the 16-bit 8 x 4 tiles spilled
// 44-200 bytes, 7x7 500-1000).
template <typename T, int KH, int KW>
constexpr int stream_min_blocks() {
  return KH == 1 && KW <= 4 ? 3 : 2;
}

template <typename T>
struct alignas(16) Vec16 {
  T v[16 / sizeof(T)];
};

// 16 bytes of a span as four 32-bit words (a 16-bit element in each half word): T arrays of 16-bit
// elements would take a register per element (nc_plane's prefetch, nc_plane_cp's window loads).
struct alignas(16) Raw16 {
  uint32_t w[4];
};

template <typename T>
__device__ __forceinline__ void raw_put(Raw16& r, int e, T v) {
  if constexpr (sizeof(T) == 4) {
    std::memcpy(&r.w[e], &v, 4);
  } else {
    r.w[e / 2] |= uint32_t(v.x) << (16 * (e % 2));
  }
}

template <typename T>
__device__ __forceinline__ at::opmath_type<T> raw_get(const Raw16& r, int e) {
  if constexpr (sizeof(T) == 4) {
    float f;
    std::memcpy(&f, &r.w[e], 4);
    return f;
  } else {
    return static_cast<float>(T(static_cast<uint16_t>(r.w[e / 2] >> (16 * (e % 2))), T::from_bits()));
  }
}

// A block's n staged outputs written to global memory from shared memory: smem[j] is span element
// j - mo (mo = dst's misalignment in elements, so smem is laid out as dst's 16-byte vectors);
// whole vectors go as 16-byte stores, the partial ones at the span's ends element by element
// (nc_plane, nc_small_planes, nc_plane_cp; `threads` the block's).
template <typename T>
__device__ __forceinline__ void store_span(T* dst, const T* smem, int n, int mo, int tid, int threads) {
  constexpr int V = 16 / sizeof(T);
  const int nvec = (n + mo + V - 1) / V;
  for (int i = tid; i < nvec; i += threads) {
    const int e0 = i * V - mo;
    if (e0 >= 0 && e0 + V <= n) {
      *reinterpret_cast<Vec16<T>*>(dst + e0) = *reinterpret_cast<const Vec16<T>*>(smem + i * V);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if (e0 + k >= 0 && e0 + k < n) dst[e0 + k] = smem[i * V + k];
      }
    }
  }
}

// An item's TH x R outputs acc (+ add) staged as T at rows y0 + b, columns x0 + o of plane pl in
// ys ([plane][oh][ow], as store_span reads them); outputs past the plane's edges are dropped
// (nc_plane, nc_plane_cp).
template <typename T, int TH, int R, typename A>
__device__ __forceinline__ void stage_outputs(T* ys, const A (&acc)[TH][R], A add, int pl, int oh, int ow, int y0,
                                              int x0) {
#pragma unroll
  for (int b = 0; b < TH; ++b) {
    if (y0 + b >= oh) break;
    T* const yr = ys + (pl * oh + y0 + b) * ow + x0;
#pragma unroll
    for (int o = 0; o < R; ++o) {
      if (x0 + o < ow) yr[o] = static_cast<T>(acc[b][o] + add);
    }
  }
}

// x[c] = row[ix0 + c] for c < NX, zero outside [0, IW) (see the header: 16-byte vectors + select
// network). `row` points at the row's first element (maybe outside the tensor when !row_ok: it
// is then never dereferenced).
template <typename T, int NX>
__device__ __forceinline__ void load_row_vec(const T* row, int ix0, int IW, bool row_ok,
                                             at::opmath_type<T> (&x)[NX]) {
  using acc_t = at::opmath_type<T>;
  constexpr int V = 16 / sizeof(T);
  constexpr int NB = (NX + 2 * V - 2) / V;  // vectors that cover NX values at any misalignment
  if (!row_ok) {
#pragma unroll
    for (int c = 0; c < NX; ++c) x[c] = acc_t(0);
    return;
  }
  const int m = static_cast<int>(reinterpret_cast<uintptr_t>(row + ix0) / sizeof(T) % V);
  const int rel0 = ix0 - m;  // row index of the first value of the first vector (16-byte aligned)
  acc_t buf[NB * V];
#pragma unroll
  for (int i = 0; i < NB; ++i) {
    const int rel = rel0 + i * V;
    if (rel >= 0 && rel <= IW - V) {
      const Vec16<T> v = *reinterpret_cast<const Vec16<T>*>(row + rel);
#pragma unroll
      for (int e = 0; e < V; ++e) buf[i * V + e] = static_cast<acc_t>(v.v[e]);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        buf[i * V + e] = rel + e >= 0 && rel + e < IW ? static_cast<acc_t>(row[rel + e]) : acc_t(0);
      }
    }
  }
  // buf[c] <- buf[c + m], one bit of m per stage; every index read is < NB*V since c + m does.
#pragma unroll
  for (int b = 1; b < V; b *= 2) {
    const bool sh = (m & b) != 0;
#pragma unroll
    for (int c = 0; c + b < NB * V; ++c) buf[c] = sh ? buf[c + b] : buf[c];
  }
#pragma unroll
  for (int c = 0; c < NX; ++c) x[c] = buf[c];
}

// 1-D rows and 16-bit 2-D with 16-byte row loads. w as nc_stream's. MINB blocks per SM
// (stream_min_blocks): unbounded, the compiler hoists every load of the band into registers (up
// to 255, one block per SM); the cap keeps warps resident, each with many loads in flight.
template <typename T, int KH, int KW, int S, int R, int TH, int MINB>
__global__ void __launch_bounds__(kStreamThreads, MINB)
nc_stream_vec(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w,
              const T* __restrict__ bias, T* __restrict__ out, const Plan P, const NcStreamVec L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = (R - 1) * S + KW;  // input columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // input rows of a band
  const uint32_t item = blockIdx.x * kStreamThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  const int ph = static_cast<int>(L.phases.split(t));
  const uint32_t strip = L.strips.split(t);
  const uint32_t band = L.bands.split(t);
  const uint32_t qd = L.q0.split(t);
  const uint32_t co32 = L.out_c.split(t);
  const int64_t co = co32, n = t;
  // The forward has one phase: no divisions by the phase counts.
  const int pw = L.phases.d == 1 ? 0 : ph % P.os[2];
  const int phh = L.phases.d == 1 ? 0 : (ph / P.os[2]) % P.os[1];
  const int pd = L.phases.d == 1 ? 0 : ph / (P.os[2] * P.os[1]);
  const int64_t qy0 = int64_t(band) * TH;
  const int qx0 = static_cast<int>(strip) * R;  // < 2^30 (stream_items)
  // Items past the end of a shorter phase.
  if (qd >= P.qn[0][pd] || qy0 >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) return;

  const int64_t IH = P.in[1];
  const int IW = static_cast<int>(P.in[2]);
  const int64_t iy0 = qy0 * S - P.pad[1][phh];
  const int ix0 = qx0 * S - P.pad[2][pw];
  acc_t acc[TH][R];
#pragma unroll
  for (int b = 0; b < TH; ++b) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[b][r] = acc_t(0);
  }
  // What the store needs, computed before the loops so that n, co, qd need not stay live.
  const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
  T* const oplane = out + ((n * P.out_c + co) * P.out[0] + int64_t(qd) * P.os[0] + P.r[0][pd]) * P.out[1] * P.out[2];
  const int64_t in_plane = P.in[0] * IH * IW, taps = int64_t(P.k[0]) * KH * KW;
  const T* src = in + (n * P.in_c + int64_t(L.in_div.div(co32)) * P.J) * in_plane;
  const acc_t* wj = w + ph * P.wphase + co * P.J * taps;
  const int64_t id0 = int64_t(qd) * P.S[0] - P.pad[0][pd];
  for (int64_t j = 0; j < P.J; ++j, src += in_plane, wj += taps) {
    for (int kd = 0; kd < P.k[0]; ++kd) {
      const int64_t id = id0 + kd;
      if (id < 0 || id >= P.in[0]) continue;
      acc_t wv[KH * KW];
#pragma unroll
      for (int x = 0; x < KH * KW; ++x) wv[x] = wj[kd * KH * KW + x];
      // Rows above the tensor are never dereferenced (row_ok), only pointed at.
      const T* row = src + (id * IH + iy0) * IW;
#pragma unroll
      for (int r = 0; r < NR; ++r, row += IW) {
        const bool row_ok = iy0 + r >= 0 && iy0 + r < IH;
        acc_t xv[NX];
        load_row_vec<T, NX>(row, ix0, IW, row_ok, xv);
        // Output row b of the band uses this input row as its filter row r - b*S.
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b * S;
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
            for (int o = 0; o < R; ++o) acc[b][o] += wv[kh * KW + kw] * xv[o * S + kw];
          }
        }
      }
    }
  }

  // Stores: 16-byte vectors (or the whole strip when it is shorter) where the strip is whole,
  // the phase dense along W (ow == 1) and the address aligned; else one element at a time
  // (without the phase stride's 64-bit multiply when ow == 1: unaligned rows, e.g. odd L).
  constexpr int SV = R * int(sizeof(T)) < 16 ? R : 16 / int(sizeof(T));
  struct alignas(sizeof(T) * SV) Out { T v[SV]; };
  const int qwn = static_cast<int>(P.qn[2][pw]), ow = P.os[2], rw = P.r[2][pw];
#pragma unroll
  for (int b = 0; b < TH; ++b) {
    const int64_t qy = qy0 + b;
    if (qy >= P.qn[1][phh]) break;
    T* orow = oplane + (qy * P.os[1] + P.r[1][phh]) * P.out[2];
    if (ow == 1) {
      T* o = orow + qx0;
      if (qx0 + R <= qwn && reinterpret_cast<uintptr_t>(o) % (sizeof(T) * SV) == 0) {
#pragma unroll
        for (int s = 0; s < R / SV; ++s) {
          Out v;
#pragma unroll
          for (int e = 0; e < SV; ++e) v.v[e] = static_cast<T>(acc[b][s * SV + e] + b0);
          *reinterpret_cast<Out*>(o + s * SV) = v;
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (qx0 + r < qwn) o[r] = static_cast<T>(acc[b][r] + b0);
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (qx0 + r < qwn) orow[int64_t(qx0 + r) * ow + rw] = static_cast<T>(acc[b][r] + b0);
      }
    }
  }
}

}  // namespace convx::cuda
