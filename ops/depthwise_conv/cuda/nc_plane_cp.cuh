// Whole-plane NCHW depthwise kernel staged by cp.async in the tensor's own type: forward and
// stride-1 data-grad of the phased correlation (plan.cuh) with one phase, multiplier 1, a 2-D plan,
// padding of half the filter (the launcher takes 16-bit 3x3 at stride 1 and 2, fp32 and 16-bit 5x5
// at stride 1).
//
// Why (session 12): nc_plane.cuh holds the next group's span in registers and scatters it into an
// fp32 tile: 16 registers of prefetch cap the output tile at two rows, every input element costs
// a conversion, a scatter store and its address arithmetic, and a 112 x 112 plane does not fit the
// prefetch at all (MobileNetV2 stride 2 ran on nc_stream_vec at 48% of the copy bandwidth). Here
// each input row of a group of PB whole planes is copied by cp.async in 16-byte chunks (no
// registers while in flight) into a zero-haloed tile of T in shared memory, double-buffered: the
// next group's copies are issued before the current group is computed. A thread owns R = one
// 16-byte vector of consecutive outputs (8 in 16 bits, 4 in fp32) of TH rows (no bounds tests: the
// tile has the halo); it reads each staged row of its window as whole 16-byte vectors (a staged row
// starts 16-byte aligned and the padding is the filter's half width, so the window's offset in the
// vectors is a compile-time constant), converts to fp32 in registers, accumulates in fp32 (bias
// first), and stores its rows straight to global memory as 16-byte vectors where the output rows
// are whole vectors (else the outputs are staged in shared memory and the group's contiguous span
// written as 16-byte vectors).
//
// The first version (call 1 of session 12) read the window element by element: 8-output strips put
// the lanes' windows 16 or 32 bytes apart, so a warp's 2-byte loads fell in 4-8 banks (4-8-way
// conflicts); MobileNetV2 stride 2 was bound by shared memory (ncu: L1 90%, SM 23%) at 0.150 ms
// against nc_stream_vec's 0.134. A warp's 16-byte loads are at most 2-way (stride 2) conflicted:
// 0.077 ms, DRAM 71% under ncu (bench/results/h100/session12/nc16_call2_*.log).
//
// fp32 and 5x5 (session 13): the session-12 fp32 version, 8-output strips, lost to nc_plane
// (EfficientNet 5x5 0.050 against 0.048 ms): its lanes' windows were 32 bytes apart, so a quarter
// warp's 16-byte loads met in a few bank groups. nc_plane itself is bound by shared memory (ncu,
// EfficientNet fp32: L1 85%, DRAM 40%; bench/results/h100/session13/eff5_call1_kernels.log): it
// loads each window element and filter tap by a 4-byte load, 8 wavefronts per output and warp.
// Here a strip is one 16-byte vector, so consecutive lanes read consecutive vectors, and staged
// rows go in bands of TH rows `bs` elements apart (bs = TH * pitch + a skew chosen on the host where
// the launcher asks for it), so that the lanes of the next band continue the bank groups where the
// band's last strip ended instead of meeting the band's first ones (measured: the same within 1% on
// fp32 5x5, kept for 5x5; 4% slower on the 16-bit 3x3 rows, which stay unskewed). Copies go in
// CH-byte chunks: 16 for the 16-bit 3x3 rows, 8 for 5x5 (EfficientNet's 28-wide rows are 56 bytes
// in 16 bits; in fp32 8-byte chunks put a row's input at the 2-element padding, so that the windows
// are whole aligned vectors).
//
// Filter: the layer's own weights ([C][KH][KW] in T, rotated 180 degrees for the data-grad).
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

constexpr int kCpThreads = 256;  // at most; the launcher sizes the block to a group's items
// Shared memory per block: four blocks per SM fit the H100's 228 KB (1 KB reserved per block).
constexpr int64_t kCpSmemBytes = 56 * 1024;

struct NcPlaneCp {
  uint32_t planes;       // N * channels (multiplier 1)
  uint32_t groups;       // ceil(planes / pb)
  int pb;                // planes per group
  int ih, iw, oh, ow;    // plane sizes read / written
  int pad_t;             // staged row of input row y: y + pad_t
  int col0;              // staged column of input column 0: pad_l + cp_lead, a multiple of the chunk
  int sh, pitch, tile;   // staged rows, elements per staged row, per staged plane (16-byte multiple)
  int bs;                // elements from a band of TH staged rows to the next (TH * pitch + skew)
  int rows;              // input rows staged per plane (those some output reads)
  int flip;              // data-grad: taps read in reverse order (the filter rotated)
  int direct;            // outputs stored from registers (rows of whole 16-byte vectors, aligned)
  FastDiv items, strips_div;  // items (strips of TH rows) per plane, strips per output row
  FastDiv cpr, rows_div;      // chunks per staged row, staged rows per plane
  FastDiv channels;           // plane g is channel g % channels
  int64_t smem;               // dynamic shared-memory bytes per block
};

// The most distinct 16-byte vectors that the 8 lanes of a quarter warp (the unit a 16-byte shared
// load is served in) read from one group of four banks with the compute phase's first load (item
// = lane), for a staged band step bs (elements of esz bytes; band y's window starts y * s bands down).
inline int cp_bank_conflicts(int64_t bs, int64_t tile, int64_t items, int64_t strips, int s, int esz) {
  int most = 1;
  for (int q = 0; q < 4; ++q) {
    int64_t vec[8];
    for (int i = 0; i < 8; ++i) {
      const int64_t l = 8 * q + i, pl = l / items, r = l % items, y = r / strips, st = r % strips;
      vec[i] = (pl * tile + y * s * bs) * esz / 16 + st * s;  // a strip is one 16-byte vector
    }
    for (int b = 0; b < 8; ++b) {
      int64_t seen[8];
      int n = 0;
      for (int i = 0; i < 8; ++i) {
        if (vec[i] % 8 != b) continue;
        bool dup = false;
        for (int j = 0; j < n; ++j) dup = dup || seen[j] == vec[i];
        if (!dup) seen[n++] = vec[i];
      }
      most = std::max(most, n);
    }
  }
  return most;
}

// Staged column of output column 0's window in its 16-byte vector: the padding is the filter's
// half width and a staged row's input starts at the first CH-byte chunk boundary after it.
template <typename T, int KW, int CH>
constexpr int cp_lead() {
  constexpr int CE = CH / static_cast<int>(sizeof(T));
  return (KW / 2 + CE - 1) / CE * CE - KW / 2;
}

// Staged row y of a plane: bands of th rows bs elements apart.
__host__ __device__ inline int cp_row(int y, int th, int bs, int pitch) { return y / th * bs + y % th * pitch; }

// Fills L for plan P filtered by kh x kw at stride s, th output rows per thread, elements of esz
// bytes copied in chunks of ch bytes, input / output base addresses in / out; flip: the data-grad's
// rotated filter; skew: bands may be skewed (else bs = th * pitch). false when the plan is not a
// one-phase 2-D multiplier-1 correlation with non-negative padding whose column padding is kw / 2
// (the windows' vector offset is compiled in: cp_lead), when input rows are not whole chunks at
// chunk boundaries, or when one plane's two tiles do not fit kCpSmemBytes.
inline bool choose_nc_plane_cp(NcPlaneCp& L, const Plan& P, int kh, int kw, int s, int th, int esz, int ch,
                               const void* in, const void* out, bool flip, bool skew) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.in[0] != 1 || P.k[0] != 1 ||
      P.q[0] != 1 || P.k[1] != kh || P.k[2] != kw || P.S[1] != s || P.S[2] != s)
    return false;
  const int64_t planes = P.N * P.out_c, oh = P.q[1], ow = P.q[2], ih = P.in[1], iw = P.in[2];
  if (planes <= 0 || planes >= (int64_t(1) << 31) || oh <= 0 || ow <= 0) return false;
  if (ih * iw >= (int64_t(1) << 20) || oh * ow >= (int64_t(1) << 20)) return false;
  const int pad_t = P.pad[1][0], pad_l = P.pad[2][0];
  if (pad_t < 0 || pad_l != kw / 2 || (iw * esz) % ch != 0 || reinterpret_cast<uintptr_t>(in) % ch != 0) return false;
  const int V = 16 / esz, CE = ch / esz, R = V;  // a strip: one 16-byte vector of outputs
  const int col0 = static_cast<int>(ceil_div(pad_l, CE) * CE), lead = col0 - pad_l;  // lead: cp_lead
  const int64_t strips = ceil_div(ow, R), bands = ceil_div(oh, th);
  // Staged columns the windows' vectors read (the last strip may run past the row: its extra
  // outputs are not stored) and the staged input row's end; staged rows likewise.
  const int64_t nb = ceil_div(lead + (R - 1) * s + kw, V);
  const int64_t need_w = std::max<int64_t>((strips - 1) * R * s + nb * V, col0 + iw);
  const int64_t sh = std::max<int64_t>((bands * th - 1) * s + kh, pad_t + 1);
  const int64_t rows = std::min<int64_t>(ih, sh - pad_t);
  const int64_t ipp = bands * strips;  // items per plane
  // A plane's tile ends with its last staged row (skew 0: sh * pitch).
  auto tile_of = [&](int64_t pitch, int64_t bs) {
    return ceil_div(((sh - 1) / th * bs + ((sh - 1) % th + 1) * pitch) * esz, 16) * 16 / esz;
  };
  int64_t pb = std::clamp<int64_t>(kCpThreads / ipp, 1, planes);
  const bool direct = ow % V == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  // The pitch (and skew: 0 first) with the fewest conflicts, the first such.
  int64_t pitch = ceil_div(need_w, V) * V, bs = th * pitch, best = 33;
  for (int64_t k = 0; k < (skew ? 8 : 1); ++k) {
    for (int64_t p = ceil_div(need_w, V) * V, end = p + 32 * V; p < end; p += V) {
      const int c = cp_bank_conflicts(th * p + k * V, tile_of(p, th * p + k * V), ipp, strips, s, esz);
      if (c < best) best = c, pitch = p, bs = th * p + k * V;
    }
  }
  const int64_t tile = tile_of(pitch, bs);
  auto smem = [&](int64_t n) { return (2 * n * tile + (direct ? 0 : n * oh * ow + V)) * esz; };
  while (pb > 1 && smem(pb) > kCpSmemBytes) --pb;
  if (smem(pb) > kCpSmemBytes) return false;
  L.planes = static_cast<uint32_t>(planes);
  L.groups = static_cast<uint32_t>(ceil_div(planes, pb));
  L.pb = static_cast<int>(pb);
  L.ih = static_cast<int>(ih), L.iw = static_cast<int>(iw);
  L.oh = static_cast<int>(oh), L.ow = static_cast<int>(ow);
  L.pad_t = pad_t, L.col0 = col0;
  L.sh = static_cast<int>(sh), L.pitch = static_cast<int>(pitch), L.tile = static_cast<int>(tile);
  L.bs = static_cast<int>(bs);
  L.rows = static_cast<int>(rows);
  L.flip = flip ? 1 : 0;
  L.direct = direct ? 1 : 0;
  L.items = fast_div(static_cast<uint32_t>(ipp));
  L.strips_div = fast_div(static_cast<uint32_t>(strips));
  L.cpr = fast_div(static_cast<uint32_t>(iw * esz / ch));
  L.rows_div = fast_div(static_cast<uint32_t>(rows));
  L.channels = fast_div(static_cast<uint32_t>(P.out_c));
  L.smem = smem(pb);
  return true;
}

// Two outputs rounded to T and packed in a 32-bit word (the first in the low half).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  uint32_t r;
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    std::memcpy(&r, &h, 4);
  } else {
    const __half2 h = __floats2half2_rn(a, b);
    std::memcpy(&r, &h, 4);
  }
#else
  const T x(a), y(b);
  r = uint32_t(x.x) | (uint32_t(y.x) << 16);
#endif
  return r;
}

// w: the layer's filter [channel][KH][KW] in T (flip: read rotated); bias per channel or null; CH
// the copies' chunk in bytes (16, or 8: choose_nc_plane_cp's ch).
// Three blocks per SM at most 85 registers (ptxas, sm_90: 71-80, no spills in the launcher's
// specialisations); shared memory allows four.
template <typename T, int KH, int KW, int S, int TH, int CH>
__global__ void __launch_bounds__(kCpThreads, 3)
nc_plane_cp(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
            const NcPlaneCp L) {
  using acc_t = at::opmath_type<T>;
  static_assert(sizeof(acc_t) == 4 && (CH == 16 || CH == 8), "fp32 accumulation; 16- or 8-byte chunks");
  constexpr int V = 16 / sizeof(T);      // elements per 16-byte vector
  constexpr int R = V;                   // outputs per thread along a row: one vector
  constexpr int NX = (R - 1) * S + KW;   // staged columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // staged rows of a strip
  constexpr int TAPS = KH * KW;
  constexpr int LEAD = cp_lead<T, KW, CH>();
  constexpr int CE = CH / sizeof(T);     // elements per copy
  constexpr int NB = (LEAD + NX + V - 1) / V;  // 16-byte vectors of a window row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const tiles = reinterpret_cast<T*>(smem_raw);       // [2][pb][tile]
  T* const ys_raw = tiles + 2 * L.pb * L.tile;           // staged outputs (when !direct)

  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  const int ihw = L.ih * L.iw, ohw = L.oh * L.ow;

  // Group g's input rows into tile buffer b: chunk c of input row y (staged row y + pad_t) of plane
  // pl from the span.
  auto issue = [&](uint32_t g, int b) {
    const uint32_t p0 = g * static_cast<uint32_t>(L.pb);
    const int np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - p0));
    const unsigned char* const src = reinterpret_cast<const unsigned char*>(in + int64_t(p0) * ihw);
    T* const dst = tiles + b * L.pb * L.tile + L.col0;
    const int n = np * L.rows * static_cast<int>(L.cpr.d);
    for (int i = tid; i < n; i += nthreads) {
      uint32_t t = static_cast<uint32_t>(i);
      const int c = static_cast<int>(L.cpr.split(t));
      const int y = static_cast<int>(L.rows_div.split(t));
      const int pl = static_cast<int>(t);
      T* const d = dst + pl * L.tile + cp_row(y + L.pad_t, TH, L.bs, L.pitch) + c * CE;
      const unsigned char* const sp = src + int64_t(pl * ihw + y * L.iw) * sizeof(T) + c * CH;
      if constexpr (CH == 16) {
        cp_async16(d, sp, 16);
      } else {
        cp_async_n(d, sp, CH);
      }
    }
  };

  // Zero both buffers once: the halo and the pitch padding are never written again.
  {
    float4* const z = reinterpret_cast<float4*>(tiles);
    for (int i = tid; i < 2 * L.pb * L.tile * int(sizeof(T)) / 16; i += nthreads) z[i] = float4{0.f, 0.f, 0.f, 0.f};
  }
  __syncthreads();
  uint32_t g = blockIdx.x;
  if (g < L.groups) issue(g, 0);
  cp_async_commit();

  for (int k = 0; g < L.groups; g += gridDim.x, ++k) {
    const int b = k & 1;
    // The next group's copies are in flight while this one computes.
    if (g + gridDim.x < L.groups) issue(g + gridDim.x, b ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    const uint32_t p0 = g * static_cast<uint32_t>(L.pb);
    const int np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - p0));
    T* const dst = out + int64_t(p0) * ohw;
    const int mo = static_cast<int>(reinterpret_cast<uintptr_t>(dst) / sizeof(T) % V);
    const T* const tb = tiles + b * L.pb * L.tile;
    const int nitems = np * static_cast<int>(L.items.d);
    for (int it = tid; it < nitems; it += nthreads) {
      uint32_t t = static_cast<uint32_t>(it);
      const int rest = static_cast<int>(L.items.split(t));
      const int pl = static_cast<int>(t);
      uint32_t yy = static_cast<uint32_t>(rest);
      const int st = static_cast<int>(L.strips_div.split(yy));
      const int y0 = static_cast<int>(yy) * TH, x0 = st * R;
      const uint32_t c = p0 + pl - L.channels.div(p0 + pl) * L.channels.d;
      const T* const wc = w + int64_t(c) * TAPS;
      acc_t wv[TAPS];
#pragma unroll
      for (int i = 0; i < TAPS; ++i) wv[i] = static_cast<acc_t>(wc[L.flip ? TAPS - 1 - i : i]);
      const acc_t b0 = bias ? static_cast<acc_t>(bias[c]) : acc_t(0);
      acc_t acc[TH][R];
#pragma unroll
      for (int r = 0; r < TH; ++r) {
#pragma unroll
        for (int o = 0; o < R; ++o) acc[r][o] = b0;
      }
      // 16-byte aligned: tiles, bands and staged rows are, and x0 * S is a multiple of V. Window row r
      // is staged row y0 * S + r, band y0 * S / TH + r / TH (y0 is a multiple of TH).
      const T* const xb = tb + pl * L.tile + (y0 / TH) * S * L.bs + x0 * S;
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        const T* const xr = xb + (r / TH) * L.bs + (r % TH) * L.pitch;
        Raw16 u[NB];
#pragma unroll
        for (int i = 0; i < NB; ++i) u[i] = reinterpret_cast<const Raw16*>(xr)[i];
        acc_t xv[NX];
#pragma unroll
        for (int cc = 0; cc < NX; ++cc) xv[cc] = raw_get<T>(u[(LEAD + cc) / V], (LEAD + cc) % V);
#pragma unroll
        for (int bb = 0; bb < TH; ++bb) {
          const int kh = r - bb * S;  // output row bb uses staged row r as its filter row kh
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
            for (int o = 0; o < R; ++o) acc[bb][o] += wv[kh * KW + kw] * xv[o * S + kw];
          }
        }
      }
      if (L.direct) {
        // Whole 16-byte vectors of aligned rows (ow a multiple of V = R): the strip is in the row.
#pragma unroll
        for (int bb = 0; bb < TH; ++bb) {
          if (y0 + bb >= L.oh) break;
          T* const yr = dst + pl * ohw + (y0 + bb) * L.ow + x0;
          const acc_t* const a = acc[bb];
          if constexpr (sizeof(T) == 4) {
            *reinterpret_cast<float4*>(yr) = float4{a[0], a[1], a[2], a[3]};
          } else {
            *reinterpret_cast<uint4*>(yr) = make_uint4(pack2<T>(a[0], a[1]), pack2<T>(a[2], a[3]),
                                                       pack2<T>(a[4], a[5]), pack2<T>(a[6], a[7]));
          }
        }
      } else {
        // Staged as T, shifted by the output span's misalignment (store_span moves aligned vectors).
        stage_outputs<T>(ys_raw + mo, acc, acc_t(0), pl, L.oh, L.ow, y0, x0);
      }
    }
    // Every thread is done with buffer b (the next iteration copies into it) and with ys.
    __syncthreads();
    if (!L.direct) store_span<T>(dst, ys_raw, np * ohw, mo, tid, nthreads);
  }
}

}  // namespace convx::cuda
