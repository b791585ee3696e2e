// Channels-last depthwise weight-grad, one pass over x and grad_output, deterministic.
//
// Work item: a strip of R consecutive outputs along W of one output row. A thread owns VW
// consecutive channels (one vector load) and keeps the sums of RH filter rows of one filter depth
// slice in registers (a pass: taller filters take several passes over the items, 31x31 one row
// per pass). Per item it loads the R grad_output vectors once, then streams each input row
// segment ((R-1)*S + KW vectors) once, applying every input vector to all the taps it meets
// (taps, strip and vector positions are compile-time: static register indices). Inside an item,
// addresses are the row's pointer plus 32-bit multiples of C and the columns outside the input
// are a bit mask made once per item: a load costs about two integer instructions. (The first
// version let nvcc rebuild a 64-bit index per load, about four integer instructions per FMA:
// instruction-bound, so fp16 took as long as fp32 while cuDNN's fp16 kernel takes half.)
// A block is CT channel lanes x G groups (threads t: lane t % CT, group t / CT; a warp spans
// consecutive pixels' channels, which are consecutive in memory); the groups walk the block's
// items in an interleaved order. The G groups' sums are added in group order through shared
// memory and written as the block's partial [chunk][channel][tap]; a second kernel adds the chunks
// in a fixed order. No atomics: the result depends only on the shapes.
#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/pdl.cuh"
#include "ops/depthwise_conv/cuda/words16.cuh"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace convx::cuda {
namespace {

constexpr int kWgradThreads = 256;
constexpr int kWgradBlocksPerSm = 2;  // __launch_bounds__: at most 128 registers
// Blocks of one full wave on an H100 (132 SMs x 2): every block gets the same number of items
// and none waits for a second wave. A constant, so that the chunks (and the bits of the result)
// depend on the shapes only.
constexpr int64_t kWgradWave = 132 * kWgradBlocksPerSm;

// The per-thread tile: VW channels (one vector load), RH filter rows per pass, strips of R
// outputs.
//
// `pairs`: 1-D rows of 15 / 31 taps at 2 channels per lane and 16 / 8 outputs per strip, tried
// first for those rows (the other tile, kept for odd channel counts, gives 31 taps 1 channel x 4
// outputs: 34 input loads per 124 FMAs, 2-byte loads in 16-bit). Measured on the H100 (session 9,
// bench/results/h100/session9/): the (N, L, C) weight-grad alone, conformer_256 fp32 0.208 ->
// 0.144 ms, conformer_512 bf16 0.127 -> 0.101, k15_causal bf16 0.136 -> 0.119. (fp32 31 taps
// take run_k31's one-channel tile instead since session 12.)
template <typename T, int KH, int KW, bool pairs = false>
struct ClwShape {
  static constexpr bool long_row = pairs && KH == 1 && KW >= 15;
  static constexpr int rows = KH > 0 ? KH : 1;  // filter rows of one depth slice held at once
  // 16-bit 2-D filters: at least two channels per lane (a 32-bit load, conversions and
  // addresses shared by two channels) and at most 64 tap sums, splitting the rows into passes.
  static constexpr bool wide = sizeof(T) == 2 && KH > 1;
  static constexpr int VW = [] {
    int v = static_cast<int>(16 / sizeof(T));
    if (wide) {
      while (v > 2 && rows * KW * v > 64) v /= 2;
    } else {
      // at most 64 tap accumulators (32 for the wide rows, whose KW + R - 1 input vectors are
      // loaded together). Beyond that, nvcc spills.
      while (v > 1 && rows * KW * v > (rows * KW >= 15 ? 32 : 64)) v /= 2;
    }
    return long_row ? 2 : v;
  }();
  static constexpr int RH = [] {
    int r = rows;
    while (wide && r > 1 && r * KW * VW > 64) r = (r + 1) / 2;
    return r;
  }();
  // Strip length. Wide: 7, which divides the 112/56/28/14/7 maps of ImageNet networks (no idle
  // strip positions) and keeps R*VW grad_output values + the segment's input vectors next to
  // the tap sums within 128 registers (nvcc -Xptxas -v). Otherwise: R*VW grad_output values stay
  // in registers, next to the tap sums and the strip's input vectors; larger strips spill.
  static constexpr int R = long_row ? (KW >= 31 ? 8 : 16)
                         : wide ? 7
                                : (RH * KW * VW <= 32 && VW <= 4 && RH * KW < 31 ? 8
                                                                                   : (RH * KW * VW > 56 ? 2 : 4));
};

// 16-bit 1-D rows of 2-4 taps (run_short16, tried first): 4 channels per lane (8-byte loads),
// strips of 8, 64 registers: 4 blocks per SM. ClwShape's tile for them (8 channels x strips of 4)
// takes 103 registers: 2 blocks, 16 warps per SM, and the H100 ran short_k3's (N, L, C)
// weight-grad at DRAM 65%, warps waiting on loads 56% of the time (ncu). Measured against it
// (session 11, bench/results/h100/session11/oned_call2_ab.log, alternating in one process): Mamba
// k4 bf16 weight-grad 110.7 -> 103.4 us, backward 209.4 -> 204.9; short_k3 backward 47.1 -> 46.8
// (its weight-grad alone 24.5 -> 27.2 us, the kernels in the profile 25.3 + 2.5 -> 25.2 + 2.6).
constexpr int kShort16Vw = 4, kShort16R = 8, kShort16Blocks = 4;

// fp32 1-D rows of 31 taps (launch_cl_wgrad's 1 x 31 case) on the long tile (kLong32*): one
// channel per lane, strips of 32 outputs: 62 input loads per 32 x 31 FMAs, against 38 8-byte
// loads per 8 x 2 x 31 for ClwShape's pair tile (2 channels x 8 outputs), half the bytes through
// L1 per product. H100, session 12 (bench/results/h100/session12/oned_call1_ab.log, Conformer-256
// fp32 (N, L, C) weight-grad per call, alternating in one process): 145.3 -> 115.6 us (1 x 16:
// 122.4, 2 x 16: 139.8); 128 registers, no spills (ptxas -v). 16-bit rows keep run<>'s tiles.
constexpr int kLong32Vw = 1, kLong32R = 32;

struct ClwTile {
  int CT, G;              // channel lanes per block, pixel groups per block
  int strips;             // work items per output row: ceil(OW / R)
  int segs, dl;           // cl_wgrad_depth3d: depth segments per column, output depths per segment
  bool i32;               // item and spatial indices fit in 32 bits
  int64_t items, chunk;   // work items in all, per block (blockIdx.y; cl_wgrad_depth3d deals
                          // the items to the blocks in turn: there it only sizes the grid)
};

// Bits [lo, hi) of the SEG input columns iw0 .. iw0 + SEG - 1 that lie inside [0, IW).
template <int SEG, typename M>
__device__ __forceinline__ M column_mask(int iw0, int IW) {
  static_assert(SEG < int(8 * sizeof(M)), "mask too narrow");
  const int lo = iw0 < 0 ? -iw0 : 0;
  const int hi = IW - iw0 < SEG ? IW - iw0 : SEG;
  return hi > lo ? ((M(1) << (hi - lo)) - 1) << lo : M(0);
}

// p, as a value nvcc must keep in registers: without it, under the 128-register bound, nvcc
// rebuilds each load's address from the 64-bit item index (about 10 integer instructions a load).
template <typename V>
__device__ __forceinline__ const V* held(const V* p) {
#ifdef __CUDA_ARCH__
  asm volatile("" : "+l"(p));
#endif
  return p;
}

// out = the VW values at p in the opmath type, or zeros when !ok. On the GPU: one load through the
// read-only path (held() hides from nvcc that p is global memory); 16-bit values converted by
// words_to_acc from the loaded words. (Built as load_raw + raw_to_acc instead, nvcc allotted
// different registers to several kernels and spilled 8 bytes in the bf16 1-D 31-tap pair tile.)
template <typename T, int VW>
__device__ __forceinline__ void load_acc(const T* p, bool ok, at::opmath_type<T> (&out)[VW]) {
#ifdef __CUDA_ARCH__
  constexpr int B = int(sizeof(T)) * VW;
  if constexpr (sizeof(T) == 2 && VW == 1) {
    const unsigned short s = ok ? __ldg(reinterpret_cast<const unsigned short*>(p)) : 0;
    const unsigned u[1] = {s};
    words_to_acc<T, 1>(u, out);
  } else {
    constexpr int NW = B / 4;  // 32-bit words
    using W = std::conditional_t<NW == 1, unsigned, std::conditional_t<NW == 2, uint2, uint4>>;
    static_assert(sizeof(W) == B, "vector of 4, 8 or 16 bytes");
    W w{};
    if (ok) w = __ldg(reinterpret_cast<const W*>(p));
    unsigned u[NW];
    memcpy(u, &w, B);
    if constexpr (std::is_same_v<T, float>) {
      memcpy(out, u, B);
    } else {
      words_to_acc<T, VW>(u, out);
    }
  }
#else
  Pack<T, VW> v{};
  if (ok) v = *reinterpret_cast<const Pack<T, VW>*>(p);
  for (int k = 0; k < VW; ++k) out[k] = static_cast<at::opmath_type<T>>(v.v[k]);
#endif
}

// VW 16-bit values as loaded (one vector load: 2, 4, 8 or 16 bytes), converted where used by
// raw_to_acc.
template <typename T, int VW>
__device__ __forceinline__ void load_raw(const T* p, bool ok, Pack<T, VW>& out) {
#ifdef __CUDA_ARCH__
  if constexpr (VW == 1) {
    const unsigned short u = ok ? __ldg(reinterpret_cast<const unsigned short*>(p)) : 0;
    memcpy(&out, &u, 2);
  } else {
    using W = std::conditional_t<VW == 2, unsigned, std::conditional_t<VW == 4, uint2, uint4>>;
    W w{};
    if (ok) w = __ldg(reinterpret_cast<const W*>(p));
    memcpy(&out, &w, sizeof(W));
  }
#else
  Pack<T, VW> v{};
  if (ok) v = *reinterpret_cast<const Pack<T, VW>*>(p);
  out = v;
#endif
}

template <typename T, int VW>
__device__ __forceinline__ void raw_to_acc(const Pack<T, VW>& in, float (&out)[VW]) {
#ifdef __CUDA_ARCH__
  unsigned u[(VW + 1) / 2];
  if constexpr (VW == 1) {
    unsigned short s;
    memcpy(&s, &in, 2);
    u[0] = s;
  } else {
    memcpy(u, &in, 2 * VW);
  }
  words_to_acc<T, VW>(u, out);
#else
  for (int k = 0; k < VW; ++k) out[k] = static_cast<float>(in.v[k]);
#endif
}

// Taps a block adds per shared-memory round (about 24 KB of scratch).
template <int TAPS, int VW, typename acc_t>
constexpr int reduce_taps() {
  constexpr int tb = 24576 / int(kWgradThreads * VW * sizeof(acc_t));
  return tb < 1 ? 1 : (tb > TAPS ? TAPS : tb);
}

// The block's G groups' tap sums acc (taps tap0 .. tap0 + ntaps - 1 of each channel), added in
// group order through the shared scratch red, TB taps per round, written as the block's partial
// part[blockIdx.y][channel][tap] (`taps` per channel). Called by every thread of the block.
template <int TAPS, int VW, int TB, typename acc_t>
__device__ __forceinline__ void block_groups_sum(const acc_t (&acc)[TAPS][VW], acc_t (&red)[TB][kWgradThreads * VW],
                                                 acc_t* __restrict__ part, const ClwTile& L, int C, int64_t taps,
                                                 int64_t tap0, int ntaps) {
  const int t = threadIdx.x;
#pragma unroll
  for (int b = 0; b < TAPS; b += TB) {
#pragma unroll
    for (int i = 0; i < TB; ++i) {
      if (b + i < TAPS) {
#pragma unroll
        for (int v = 0; v < VW; ++v) red[i][t * VW + v] = acc[b + i < TAPS ? b + i : 0][v];
      }
    }
    __syncthreads();
    const int per = L.CT * VW;  // values of one group and tap
    for (int i = t; i < TB * per; i += blockDim.x) {
      const int tb = i / per, e = i % per;
      const int64_t c = static_cast<int64_t>(blockIdx.x) * per + e;
      if (b + tb < ntaps && c < C) {
        acc_t s = acc_t(0);
        for (int w = 0; w < L.G; ++w) s += red[tb][w * per + e];
        part[(static_cast<int64_t>(blockIdx.y) * C + c) * taps + tap0 + b + tb] = s;
      }
    }
    __syncthreads();
  }
}

// KH == 0: tall filters (31x31); one filter row per pass over the items (RH == 1; the inputs are
// read once per filter row, from L2). KH > RH: ceil(KH / RH) passes of RH rows.
template <typename T, int KH, int KW, int S, int VW, int R, int RH, int MINB = kWgradBlocksPerSm>
__global__ void __launch_bounds__(kWgradThreads, MINB)
cl_wgrad_partial(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
                 const Plan P, const ClwTile L) {
  using acc_t = at::opmath_type<T>;
  static_assert(KH > 0 || RH == 1, "runtime filter heights take one row per pass");
  constexpr int TAPS = RH * KW;          // tap sums per pass
  constexpr int SEG = (R - 1) * S + KW;  // input vectors per strip and filter row
  using mask_t = std::conditional_t<(SEG >= 32), uint64_t, uint32_t>;
  constexpr int TB = reduce_taps<TAPS, VW, acc_t>();
  __shared__ acc_t red[TB][kWgradThreads * VW];
  pdl_wait();     // when launched programmatically (run_short16): the previous kernel's writes are visible
  pdl_trigger();  // sum_chunks may start
  const int t = threadIdx.x, lane = t % L.CT, grp = t / L.CT;
  const int kh_n = KH > 0 ? KH : P.k[1];
  const int C = static_cast<int>(P.out_c);  // the host checked that SEG * C fits in 32 bits
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * L.CT + lane) * VW;
  const bool active = grp < L.G && c0 < C;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * L.chunk;
  const int64_t end = begin + L.chunk < L.items ? begin + L.chunk : L.items;
  const int OW = static_cast<int>(P.q[2]), OH = static_cast<int>(P.q[1]), OD = static_cast<int>(P.q[0]);
  const int IW = static_cast<int>(P.in[2]), IH = static_cast<int>(P.in[1]), ID = static_cast<int>(P.in[0]);
  const int64_t row_stride = int64_t(IW) * C;
  const int64_t taps = int64_t(P.k[0]) * kh_n * KW;
  for (int kd = 0; kd < P.k[0]; ++kd) {
    for (int kb = 0; kb < kh_n; kb += RH) {
      const int nrows = kh_n - kb < RH ? kh_n - kb : RH;  // filter rows of this pass
      acc_t acc[TAPS][VW];
#pragma unroll
      for (int i = 0; i < TAPS; ++i) {
#pragma unroll
        for (int v = 0; v < VW; ++v) acc[i][v] = acc_t(0);
      }
      if (active) {
        for (int64_t it = begin + grp; it < end; it += L.G) {
          // item -> (n, od, oh, strip); 32-bit divisions when the host proved they fit
          int ws, oh, od;
          int64_t n;
          if (L.i32) {
            uint32_t u = static_cast<uint32_t>(it);
            ws = static_cast<int>(u % uint32_t(L.strips)), u /= uint32_t(L.strips);
            oh = static_cast<int>(u % uint32_t(OH)), u /= uint32_t(OH);
            od = static_cast<int>(u % uint32_t(OD)), n = u / uint32_t(OD);
          } else {
            int64_t u = it;
            ws = static_cast<int>(u % L.strips), u /= L.strips;
            oh = static_cast<int>(u % OH), u /= OH;
            od = static_cast<int>(u % OD), n = u / OD;
          }
          const int id = od * P.S[0] - P.pad[0][0] + kd;
          if (id < 0 || id >= ID) continue;
          const int ow0 = ws * R;
          const int gn = OW - ow0;  // outputs of the strip inside the row (>= 1)
          const T* gp = held(gy + (((n * OD + od) * OH + oh) * int64_t(OW) + ow0) * C + c0);
          acc_t g[R][VW];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            load_acc<T, VW>(gp + r * C, r < gn, g[r]);
          }
          const int iw0 = ow0 * S - P.pad[2][0];
          const mask_t cols = column_mask<SEG, mask_t>(iw0, IW);
          const T* xs = x + ((n * ID + id) * int64_t(IH) * IW + iw0) * C + c0;
#pragma unroll
          for (int kh = 0; kh < RH; ++kh) {
            const int ih = oh * S - P.pad[1][0] + kb + kh;
            if (kh >= nrows) break;
            if (ih < 0 || ih >= IH) continue;
            const T* xp = xs + ih * row_stride;
#pragma unroll
            for (int j = 0; j < SEG; ++j, xp = held(xp + C)) {
              acc_t xf[VW];
              load_acc<T, VW>(xp, (cols >> j) & 1, xf);
#pragma unroll
              for (int kw = 0; kw < KW; ++kw) {
                // input column j meets tap kw at strip position (j - kw) / S
                if (j >= kw && (j - kw) % S == 0 && (j - kw) / S < R) {
#pragma unroll
                  for (int v = 0; v < VW; ++v) acc[kh * KW + kw][v] += g[(j - kw) / S][v] * xf[v];
                }
              }
            }
          }
        }
      }
      block_groups_sum<TAPS, VW, TB>(acc, red, part, L, C, taps, (int64_t(kd) * kh_n + kb) * KW, nrows * KW);
    }
  }
}

// The tile of the depth-streaming kernel: VW channels (KD*KH*KW*VW <= 64 tap sums) and strips
// of R outputs, the KD x R x VW grad_output values of the window next to the sums.
template <typename T, int KD, int KH, int KW>
struct Clw3Shape {
  static constexpr int VW = KD * KH * KW * 2 <= 64 ? 2 : 1;
  static constexpr int R = 4;
};

// Depth-streaming weight-grad of KD x KH x KW filters at depth stride 1 (X3D, NDHWC). Work item:
// a column of output depths (one depth segment) of a strip of R outputs of one output row of one
// sample; a thread owns VW channels and keeps all KD*KH*KW tap sums in registers. It walks the
// input planes of its column once, keeping the grad_output vectors of the KD output planes an
// input plane meets (g[j]: output depth id + pd - (KD - 1) + j, which meets input plane id with
// filter depth KD - 1 - j; a register window moved one plane per step), loads the plane's KH
// input row segments once and applies each input vector to every tap it meets. So x and dy are
// read once per column (the segment's first KD - 1 input planes again per segment), where
// cl_wgrad_partial reads them once per filter depth. Block layout, item split and the ordered
// sums are cl_wgrad_partial's; items are (strip, row, segment, sample), strip fastest, but dealt
// to the blocks in turn (group g of block b takes items (k * chunks + b) * G + g, k = 0, 1, ...):
// the items in flight at one time are consecutive, so the neighbouring rows and strips that read
// the same input rows walk the depth together and meet them in L2. (In contiguous chunks, as
// cl_wgrad_partial has them, a row's neighbours would be read a whole column walk later, hundreds
// of MB of traffic apart: x would come from DRAM about KH times.)
// cl_wgrad_depth3d's / cl_wgrad_d3r's work item -> (sample n, depth segment, output row oh, strip
// ws); 32-bit divisions when the host proved they fit (L.i32).
__device__ __forceinline__ void depth3d_item(int64_t it, const ClwTile& L, int OH, int& ws, int& oh, int& seg,
                                             int64_t& n) {
  if (L.i32) {
    uint32_t u = static_cast<uint32_t>(it);
    ws = static_cast<int>(u % uint32_t(L.strips)), u /= uint32_t(L.strips);
    oh = static_cast<int>(u % uint32_t(OH)), u /= uint32_t(OH);
    seg = static_cast<int>(u % uint32_t(L.segs)), n = u / uint32_t(L.segs);
  } else {
    int64_t u = it;
    ws = static_cast<int>(u % L.strips), u /= L.strips;
    oh = static_cast<int>(u % OH), u /= OH;
    seg = static_cast<int>(u % L.segs), n = u / L.segs;
  }
}

template <typename T, int KD, int KH, int KW, int S, int VW, int R>
__global__ void __launch_bounds__(kWgradThreads, kWgradBlocksPerSm)
cl_wgrad_depth3d(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
                 const Plan P, const ClwTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int TAPS = KD * KH * KW;
  constexpr int SEG = (R - 1) * S + KW;  // input vectors per strip and input row
  static_assert(SEG < 32 && KH < 32, "column / row masks");
  constexpr int TB = reduce_taps<TAPS, VW, acc_t>();
  __shared__ acc_t red[TB][kWgradThreads * VW];
  const int t = threadIdx.x, lane = t % L.CT, grp = t / L.CT;
  const int C = static_cast<int>(P.out_c);  // the host checked that SEG * C fits in 32 bits
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * L.CT + lane) * VW;
  const bool active = grp < L.G && c0 < C;
  const int64_t step = static_cast<int64_t>(gridDim.y) * L.G;
  const int OW = static_cast<int>(P.q[2]), OH = static_cast<int>(P.q[1]), OD = static_cast<int>(P.q[0]);
  const int IW = static_cast<int>(P.in[2]), IH = static_cast<int>(P.in[1]), ID = static_cast<int>(P.in[0]);
  const int pd = P.pad[0][0];
  const int64_t row_stride = int64_t(IW) * C;
  const int64_t x_plane = int64_t(IH) * row_stride, g_plane = int64_t(OH) * OW * C;
  acc_t acc[TAPS][VW];
#pragma unroll
  for (int i = 0; i < TAPS; ++i) {
#pragma unroll
    for (int v = 0; v < VW; ++v) acc[i][v] = acc_t(0);
  }
  if (active) {
    for (int64_t it = static_cast<int64_t>(blockIdx.y) * L.G + grp; it < L.items; it += step) {
      int ws, oh, seg;
      int64_t n;
      depth3d_item(it, L, OH, ws, oh, seg, n);
      const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < OD ? qd0 + L.dl : OD;
      const int ow0 = ws * R;
      const int gn = OW - ow0;  // outputs of the strip inside the row (>= 1)
      const int iw0 = ow0 * S - P.pad[2][0], ih0 = oh * S - P.pad[1][0];
      const uint32_t cols = column_mask<SEG, uint32_t>(iw0, IW), rows = column_mask<KH, uint32_t>(ih0, IH);
      // Output depth qd0 and input depth qd0 - pd (maybe outside the tensor: only pointed at),
      // stepped one plane per input plane: gp is always output depth id + pd.
      const T* gp = gy + (((n * OD + qd0) * OH + oh) * int64_t(OW) + ow0) * C + c0;
      const T* xp = x + (((n * ID + (qd0 - pd)) * IH + ih0) * int64_t(IW) + iw0) * C + c0;
      acc_t g[KD][R][VW];
#pragma unroll
      for (int j = 0; j < KD; ++j) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
          for (int v = 0; v < VW; ++v) g[j][r][v] = acc_t(0);
        }
      }
      for (int id = qd0 - pd; id < qd1 - pd + KD - 1; ++id, gp += g_plane, xp += x_plane) {
#pragma unroll
        for (int j = 0; j + 1 < KD; ++j) {
#pragma unroll
          for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int v = 0; v < VW; ++v) g[j][r][v] = g[j + 1][r][v];
          }
        }
        const bool g_ok = id + pd < qd1;
        const T* gq = held(gp);
#pragma unroll
        for (int r = 0; r < R; ++r) load_acc<T, VW>(gq + r * C, g_ok && r < gn, g[KD - 1][r]);
        if (id < 0 || id >= ID) continue;
#pragma unroll
        for (int kh = 0; kh < KH; ++kh) {
          if (!((rows >> kh) & 1u)) continue;
          const T* xq = held(xp + kh * row_stride);
#pragma unroll
          for (int j = 0; j < SEG; ++j, xq = held(xq + C)) {
            acc_t xf[VW];
            load_acc<T, VW>(xq, (cols >> j) & 1u, xf);
#pragma unroll
            for (int kw = 0; kw < KW; ++kw) {
              // input column j meets tap kw at strip position (j - kw) / S
              if (j >= kw && (j - kw) % S == 0 && (j - kw) / S < R) {
#pragma unroll
                for (int kd = 0; kd < KD; ++kd) {
#pragma unroll
                  for (int v = 0; v < VW; ++v) acc[(kd * KH + kh) * KW + kw][v] += g[KD - 1 - kd][(j - kw) / S][v] * xf[v];
                }
              }
            }
          }
        }
      }
    }
  }
  block_groups_sum<TAPS, VW, TB>(acc, red, part, L, C, TAPS, 0, TAPS);
}

// cl_wgrad_depth3d for 16-bit KD x 3 x 3 at stride 1 with width padding 1 and output width =
// input width, a multiple of R = 8 (X3D's 5 x 3 x 3 bf16 NDHWC; session 11): the same items,
// block layout, dealing and ordered sums, but a thread owns one channel and R = 8 outputs per
// strip (x: 30 scalar loads per input plane for 360 FMAs, against 18 per 180 with R = 4), and the
// grad_output window is not moved: the depth loop is unrolled by KD and output depth od lives in
// slot od mod KD (compile-time indices), as depth3d_regs.cuh does for the forward. Columns outside
// the input are only the strip's two edge ones; rows outside are skipped; grad_output outside the
// segment is zero.
template <typename T, int KD>
__global__ void __launch_bounds__(kWgradThreads, kWgradBlocksPerSm)
cl_wgrad_d3r(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
             const Plan P, const ClwTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int R = 8, TAPS = KD * 9;
  constexpr int TB = reduce_taps<TAPS, 1, acc_t>();
  __shared__ acc_t red[TB][kWgradThreads];
  const int t = threadIdx.x, lane = t % L.CT, grp = t / L.CT;
  const int C = static_cast<int>(P.out_c);  // the host checked that (R + 2) * C fits in 32 bits
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * L.CT + lane;
  const bool active = grp < L.G && c0 < C;
  const int64_t step = static_cast<int64_t>(gridDim.y) * L.G;
  const int OW = static_cast<int>(P.q[2]), OH = static_cast<int>(P.q[1]), OD = static_cast<int>(P.q[0]);
  const int IH = static_cast<int>(P.in[1]), ID = static_cast<int>(P.in[0]);
  const int pd = P.pad[0][0];
  const int64_t row_stride = int64_t(OW) * C;  // input width = output width
  const int64_t x_plane = int64_t(IH) * row_stride, g_plane = int64_t(OH) * row_stride;
  acc_t acc[TAPS][1];
#pragma unroll
  for (int i = 0; i < TAPS; ++i) acc[i][0] = acc_t(0);
  if (active) {
    for (int64_t it = static_cast<int64_t>(blockIdx.y) * L.G + grp; it < L.items; it += step) {
      int ws, oh, seg;
      int64_t n;
      depth3d_item(it, L, OH, ws, oh, seg, n);
      const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < OD ? qd0 + L.dl : OD;
      const int ow0 = ws * R, ih0 = oh - P.pad[1][0];
      const bool lo = ow0 > 0, hi = ow0 + R < OW;
      uint32_t rows = 0;
#pragma unroll
      for (int r = 0; r < 3; ++r) rows |= uint32_t(ih0 + r >= 0 && ih0 + r < IH) << r;
      const int start = qd0 - pd, stop = qd1 - pd + KD - 1;  // input planes walked
      // grad_output at output depth start + pd, input at depth start, row ih0; both at column ow0
      // (maybe outside the tensor: only pointed at)
      const T* gp = gy + (((n * OD + start + pd) * OH + oh) * int64_t(OW) + ow0) * C + c0;
      const T* xp = x + (((n * ID + start) * IH + ih0) * int64_t(OW) + ow0) * C + c0;
      acc_t g[KD][R];
#pragma unroll
      for (int j = 0; j < KD; ++j) {
#pragma unroll
        for (int r = 0; r < R; ++r) g[j][r] = acc_t(0);
      }
      // Step u of each group of KD planes: input plane id meets output depth id + pd - kd (tap kd),
      // held in slot (u - kd) mod KD; slot u takes the grad_output of depth id + pd (tap 0). Whole
      // groups (no exit inside); the planes past `stop` are skipped.
      for (int id0 = start; id0 < stop; id0 += KD, gp += KD * g_plane, xp += KD * x_plane) {
#pragma unroll
        for (int u = 0; u < KD; ++u) {
          const int id = id0 + u;
          // zeros past the segment (and, from the start, before it): their products add nothing
          const bool g_ok = id + pd < qd1;
          const T* gq = held(gp + u * g_plane);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            acc_t v[1];
            load_acc<T, 1>(gq + r * C, g_ok, v);
            g[u][r] = v[0];
          }
          if (id < 0 || id >= ID || id >= stop) continue;
#pragma unroll
          for (int kh = 0; kh < 3; ++kh) {
            if (!((rows >> kh) & 1u)) continue;
            const T* xq = held(xp + u * x_plane + kh * row_stride);
            acc_t xv[R + 2];
#pragma unroll
            for (int j = 0; j < R + 2; ++j) {
              acc_t v[1];
              load_acc<T, 1>(xq + (j - 1) * C, j == 0 ? lo : (j == R + 1 ? hi : true), v);
              xv[j] = v[0];
            }
#pragma unroll
            for (int kd = 0; kd < KD; ++kd) {
              const int sl = (u - kd + KD) % KD;
#pragma unroll
              for (int kw = 0; kw < 3; ++kw) {
#pragma unroll
                for (int r = 0; r < R; ++r) acc[(kd * 3 + kh) * 3 + kw][0] += g[sl][r] * xv[r + kw];
              }
            }
          }
        }
      }
    }
  }
  block_groups_sum<TAPS, 1, TB>(acc, red, part, L, C, TAPS, 0, TAPS);
}

// cl_wgrad_d3r with x and grad_output staged in shared memory (session 12): cl_wgrad_d3r loads
// its 38 scalars per input plane straight from global memory and waits on them (128 registers,
// 52 bytes spilled, 16 warps per SM: 787 us for X3D, 30% of the FMA peak), as the forward did
// before depth3d_cl_smem. Here a block is 32 channels x 8 output rows of one strip of 8 outputs
// (depth3d_cl_smem's tile): per input plane it stages the 10 x 10 input positions and the 8 x 8
// grad_output positions of output depth id + pd (16-byte cp.async, zeros outside the tensor,
// channels past C zero), two planes ahead in a ring of 3, one barrier per plane, and a thread reads
// its 30 inputs and 8 grad_output values at compile-time offsets (a warp's read: one 64-byte
// run). The window, slots and sums are cl_wgrad_d3r's. Work items (strip, row tile, depth
// segment, sample), strip fastest, dealt to the blocks in turn (block b: b, b + chunks, ...), so
// the items in flight are neighbours that share input rows in L2; the staging runs on across
// items (the next item's first planes are staged during the last two planes of the one before).
// Then the 8 rows' sums in row order through shared memory (block_groups_sum), partials + sum_chunks.
constexpr int kD3wRows = 8, kD3wLanes = 32, kD3wR = 8;
constexpr int kD3wXPos = (kD3wRows + 2) * (kD3wR + 2), kD3wGPos = kD3wRows * kD3wR;  // staged positions
constexpr int kD3wPlane = (kD3wXPos + kD3wGPos) * kD3wLanes;                         // values per ring slot
constexpr int kD3wRing = 3;
constexpr int kD3wTaps = 45, kD3wTB = reduce_taps<kD3wTaps, 1, float>();
constexpr size_t kD3wSmem = std::max(size_t(kD3wRing) * kD3wPlane * 2, size_t(kD3wTB) * kWgradThreads * sizeof(float));

template <typename T, int KD>
__global__ void __launch_bounds__(kWgradThreads, kWgradBlocksPerSm)
cl_wgrad_d3s(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const Plan P,
             const ClwTile L) {
  constexpr int R = kD3wR, TAPS = KD * 9, NB = kD3wRing, XV = kD3wXPos * kD3wLanes;
  static_assert(TAPS == kD3wTaps && kWgradThreads == kD3wLanes * kD3wRows, "the tile of the constants above");
  __shared__ __align__(16) unsigned char d3w_smem[kD3wSmem];
  T* const ring = reinterpret_cast<T*>(d3w_smem);
  const int t = threadIdx.x, lane = t % kD3wLanes, rr = t / kD3wLanes;
  const int C = static_cast<int>(P.out_c), c0 = static_cast<int>(blockIdx.x) * kD3wLanes;
  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), W = static_cast<int>(P.in[2]);
  const int OD = static_cast<int>(P.q[0]), OH = static_cast<int>(P.q[1]), pd = P.pad[0][0], ph = P.pad[1][0];
  const int rtiles = (OH + kD3wRows - 1) / kD3wRows;
  const int64_t xps = int64_t(IH) * W * C, gps = int64_t(OH) * W * C;  // plane sizes (W: in = out)
  const int64_t step = gridDim.y;

  // The item being staged (two planes ahead of the one being computed; may be the next item).
  struct Item {
    int64_t n;
    int start, stop, qd0, qd1, oy0, ox0;
  };
  const auto decode = [&](int64_t it) {
    Item m;
    m.ox0 = static_cast<int>(it % L.strips) * R, it /= L.strips;
    m.oy0 = static_cast<int>(it % rtiles) * kD3wRows, it /= rtiles;
    const int seg = static_cast<int>(it % L.segs);
    m.n = it / L.segs;
    m.qd0 = seg * L.dl, m.qd1 = m.qd0 + L.dl < OD ? m.qd0 + L.dl : OD;
    m.start = m.qd0 - pd, m.stop = m.qd1 - pd + KD - 1;  // input planes walked
    return m;
  };
  // The thread's 16-byte pieces of a staged plane: x pieces t, t + 256 of 400, grad_output piece
  // t of 256 (position-major, 4 pieces of 8 channels per position), as in-plane offsets, and
  // `data` bits 0, 1 (x) and 2 (grad_output): the piece lies inside the tensor (else zeros).
  constexpr int XP = kD3wXPos * 4, GP = kD3wGPos * 4;
  static_assert(GP == kWgradThreads && XP <= 2 * kWgradThreads, "one grad_output and two x pieces a thread");
  int xo[2], go;
  uint32_t data;
  const auto offsets = [&](const Item& m) {
    data = 0;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int i = t + k * kWgradThreads, pos = i / 4, ch = c0 + i % 4 * 8;
      const int y = m.oy0 - ph + pos / (R + 2), xx = m.ox0 - 1 + pos % (R + 2);
      const bool in = i < XP && y >= 0 && y < IH && xx >= 0 && xx < W && ch < C;
      xo[k] = in ? (y * W + xx) * C + ch : 0;
      data |= uint32_t(in) << k;
    }
    const int pos = t / 4, ch = c0 + t % 4 * 8, y = m.oy0 + pos / R, xx = m.ox0 + pos % R;
    const bool in = y < OH && ch < C;
    go = in ? (y * W + xx) * C + ch : 0;
    data |= uint32_t(in) << 2;
  };
  // The staged walk: item sit, its next plane sid (of `sn` steps left, whole groups of KD
  // planes as computed), that plane's x and grad_output (depth sid + pd) planes xs / gs (maybe
  // outside the tensors: only pointed at), the ring slot it goes to.
  int64_t sit = blockIdx.y;
  bool staging = false;  // sit < L.items
  Item sm{};
  int sid = 0, sn = 0, sbuf = 0;
  const T* xs = x;
  const T* gs = gy;
  const auto begin = [&]() {
    staging = sit < L.items;
    if (staging) {
      sm = decode(sit);
      offsets(sm);
      sid = sm.start;
      sn = (sm.stop - sm.start + KD - 1) / KD * KD;
      xs = x + (sm.n * ID + sid) * xps;
      gs = gy + (sm.n * OD + sid + pd) * gps;
    }
  };
  begin();
  T* const xdst = ring + t * 8;
  T* const gdst = ring + XV + t * 8;
  // Stages the next plane of the staged walk and moves on (to the next item after its last
  // group); always commits a group of copies.
  const auto stage_next = [&]() {
    if (staging) {
      const int so = sbuf * kD3wPlane;
      if (sid >= 0 && sid < ID && sid < sm.stop) {
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          if (t + k * kWgradThreads < XP)
            cp_async16(xdst + so + k * kWgradThreads * 8, xs + xo[k], (data >> k & 1u) * 16);
        }
      }
      if (sid + pd >= sm.qd0 && sid + pd < sm.qd1) cp_async16(gdst + so, gs + go, (data >> 2 & 1u) * 16);
      ++sid;
      xs += xps;
      gs += gps;
      if (--sn == 0) {
        sit += step;
        begin();
      }
    }
    cp_async_commit();
    sbuf = sbuf == NB - 1 ? 0 : sbuf + 1;
  };

  float acc[TAPS][1];
#pragma unroll
  for (int i = 0; i < TAPS; ++i) acc[i][0] = 0.f;
  stage_next();
  stage_next();
  int rd = 0;
  const int xmine = (rr * (R + 2)) * kD3wLanes + lane, gmine = XV + rr * R * kD3wLanes + lane;
  for (int64_t it = blockIdx.y; it < L.items; it += step) {
    const Item m = decode(it);
    float g[KD][R];
#pragma unroll
    for (int j = 0; j < KD; ++j) {
#pragma unroll
      for (int r = 0; r < R; ++r) g[j][r] = 0.f;
    }
    for (int id0 = m.start; id0 < m.stop; id0 += KD) {
#pragma unroll
      for (int u = 0; u < KD; ++u) {
        const int id = id0 + u, od = id + pd;
        cp_async_wait<1>();
        __syncthreads();
        stage_next();
        const T* buf = ring + rd * kD3wPlane;
        // slot u: grad_output of output depth id + pd (tap 0); zeros outside the segment
        const bool g_ok = od >= m.qd0 && od < m.qd1;
#pragma unroll
        for (int r = 0; r < R; ++r) g[u][r] = g_ok ? static_cast<float>(buf[gmine + r * kD3wLanes]) : 0.f;
        if (id >= 0 && id < ID && id < m.stop) {
#pragma unroll
          for (int kh = 0; kh < 3; ++kh) {
            float xv[R + 2];
#pragma unroll
            for (int j = 0; j < R + 2; ++j) xv[j] = static_cast<float>(buf[xmine + (kh * (R + 2) + j) * kD3wLanes]);
#pragma unroll
            for (int kd = 0; kd < KD; ++kd) {
              const int sl = (u - kd + KD) % KD;
#pragma unroll
              for (int kw = 0; kw < 3; ++kw) {
#pragma unroll
                for (int r = 0; r < R; ++r) acc[(kd * 3 + kh) * 3 + kw][0] += g[sl][r] * xv[r + kw];
              }
            }
          }
        }
        rd = rd == NB - 1 ? 0 : rd + 1;
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring becomes the reduction scratch
  block_groups_sum<TAPS, 1, kD3wTB>(acc, *reinterpret_cast<float(*)[kD3wTB][kWgradThreads]>(d3w_smem), part, L, C,
                                     TAPS, 0, TAPS);
}

// gw[i] = sum over the chunks of part[chunk][i], in a fixed order: a block of 256 threads takes
// 32 consecutive i (coalesced rows) x 8 slices of the chunks; each thread adds its slice in
// chunk order, then the 8 slice sums are added in slice order.
constexpr int kSumCols = 32, kSumSlices = kWgradThreads / kSumCols;
template <typename T>
__global__ void __launch_bounds__(kWgradThreads)
sum_chunks(const at::opmath_type<T>* __restrict__ part, T* __restrict__ gw, int64_t chunks, int64_t n) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t red_slices[kSumSlices][kSumCols];
  pdl_wait();  // when launched programmatically: the partials are written
  const int col = threadIdx.x % kSumCols, slice = threadIdx.x / kSumCols;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kSumCols + col;
  const int64_t per = (chunks + kSumSlices - 1) / kSumSlices;
  const int64_t c1 = (slice + 1) * per < chunks ? (slice + 1) * per : chunks;
  acc_t s = acc_t(0);
  if (i < n) {
#pragma unroll 4
    for (int64_t c = slice * per; c < c1; ++c) s += part[c * n + i];
  }
  red_slices[slice][col] = s;
  __syncthreads();
  if (slice == 0 && i < n) {
    acc_t r = red_slices[0][col];
    for (int k = 1; k < kSumSlices; ++k) r += red_slices[k][col];
    gw[i] = static_cast<T>(r);
  }
}

// The block shape and the split of the items, from the shapes alone (one wave of `wave` blocks:
// kWgradWave, run_short16's 132 x 4; channel tiles of at most `max_lanes` lanes). KD > 0:
// cl_wgrad_depth3d's items (columns of output depths, cut into depth segments only when there
// are too few for every group to take at least 4). false: a size is too large.
inline bool choose_clw_tile(ClwTile& L, const Plan& P, int VW, int R, int SEG, int KD, int64_t& ctiles,
                            int64_t& chunks, int64_t wave = kWgradWave, int64_t max_lanes = 128) {
  constexpr int64_t kSpatialMax = std::numeric_limits<int>::max() / 8;
  for (int d = 0; d < 3; ++d) {
    if (P.in[d] > kSpatialMax || P.q[d] > kSpatialMax) return false;
  }
  // offsets inside an item are 32-bit multiples of C
  if (P.out_c * (SEG + R) > std::numeric_limits<int>::max()) return false;
  // Channel tiles of at most 128 lanes, balanced; of the first few tile counts, the one whose
  // block CT x G comes closest to 256 threads (C = 384 fp16: 3 tiles of 64 lanes x 4 groups,
  // not 2 of 96 x 2 = 192 threads: registers allow two blocks per SM whatever their size).
  const int64_t lanes = P.out_c / VW, first = ceil_div(lanes, max_lanes);
  const auto used = [&](int64_t tiles) {
    const int64_t ct = ceil_div(lanes, tiles);
    return ct * (kWgradThreads / ct);
  };
  int64_t ctn = first;
  for (int64_t c = first + 1; c <= first + 3 && c <= lanes; ++c) {
    if (used(c) >= used(ctn) + 32) ctn = c;  // a whole warp more, else the wider (coalesced) tile
  }
  L.CT = static_cast<int>(ceil_div(lanes, ctn));
  L.G = kWgradThreads / L.CT;
  L.strips = static_cast<int>(ceil_div(P.q[2], R));
  ctiles = ctn;
  const int64_t columns = P.N * P.q[1] * L.strips;
  if (KD > 0) {
    int64_t segs = 1, dl = 1;
    depth_segments(P.q[0], KD, columns, 4 * L.G * ceil_div(wave, ctiles), segs, dl);
    L.segs = static_cast<int>(segs);
    L.dl = static_cast<int>(dl);
    L.items = columns * segs;
  } else {
    L.segs = 1;
    L.dl = 1;
    L.items = columns * P.q[0];
  }
  L.i32 = L.items <= std::numeric_limits<int32_t>::max();
  // One wave in all, each block at least 2 items per group (4 left MobileNetV2's 7x7
  // layer, 448 items, with 112 blocks for 132 SMs).
  chunks = std::clamp<int64_t>(ceil_div(wave, ctiles), 1, std::max<int64_t>(1, L.items / (2 * L.G)));
  chunks = std::min<int64_t>(chunks, 65535);
  L.chunk = ceil_div(std::max<int64_t>(L.items, 1), chunks);
  chunks = ceil_div(std::max<int64_t>(L.items, 1), L.chunk);
  return ctiles <= 65535;
}

// 16-bit 2-D channels-last 3x3 / 5x5 weight-grads at stride 1 (session 12) on the depth-streaming
// items: (N, H, W, C) read as (N, H, 1, W, C) and a KH x KW filter as KH x 1 x KW, so that a work
// item streams a column of output rows, loading each input row segment once for all KH filter rows
// (cl_wgrad_partial loads it once per filter row: x about KH times from L2). The plan of the 2-D
// weight-grad (depth 1) with its depth and height dimensions swapped, for cl_wgrad_depth3d and
// cl_wgrad_rows.
inline Plan rows_as_depth(const Plan& P) {
  Plan Q = P;
  std::swap(Q.in[0], Q.in[1]);
  std::swap(Q.out[0], Q.out[1]);
  std::swap(Q.q[0], Q.q[1]);
  std::swap(Q.k[0], Q.k[1]);
  std::swap(Q.S[0], Q.S[1]);
  std::swap(Q.os[0], Q.os[1]);
  std::swap(Q.pad[0], Q.pad[1]);
  std::swap(Q.r[0], Q.r[1]);
  std::swap(Q.qn[0], Q.qn[1]);
  return Q;
}

// The products of one input column j (its VW channel values xf) with the grad_output window g of
// the KH output rows that input row meets (g[KH - 1 - kh]: the row filter row kh reaches), added
// into the tap sums: column j meets tap kw at strip position j - kw. Shared by cl_wgrad_rows and
// cl_wgrad_s2d; j is a compile-time value once their column loops are unrolled.
template <int KH, int KW, int R, int VW>
__device__ __forceinline__ void add_input_column(float (&acc)[KH * KW][VW], const float (&g)[KH][R][VW],
                                                 const float (&xf)[VW], int j) {
#pragma unroll
  for (int kw = 0; kw < KW; ++kw) {
    if (j >= kw && j - kw < R) {
#pragma unroll
      for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
        for (int v = 0; v < VW; ++v) acc[kh * KW + kw][v] += g[KH - 1 - kh][j - kw][v] * xf[v];
      }
    }
  }
}

// 2-D 16-bit KH x KW weight-grad at stride 1 on cl_wgrad_depth3d's items, block layout, dealing
// and ordered sums (the plan is rows_as_depth's: the rows are its depth), streaming each column of
// output rows with the next input row's loads in flight while the current row's products are
// added: a row's KW + R - 1 input vectors and R grad_output vectors are loaded (as raw 16-bit
// words) one row ahead. The grad_output window of the KH output rows an input row meets moves
// one row per step, as in cl_wgrad_depth3d.
template <typename T, int KH, int KW, int VW, int R>
__global__ void __launch_bounds__(kWgradThreads, kWgradBlocksPerSm)
cl_wgrad_rows(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const Plan P,
              const ClwTile L) {
  static_assert(sizeof(T) == 2, "16-bit storage");
  constexpr int TAPS = KH * KW, SEG = R - 1 + KW;
  static_assert(SEG < 32, "column mask");
  using acc_t = float;
  constexpr int TB = reduce_taps<TAPS, VW, acc_t>();
  __shared__ acc_t red[TB][kWgradThreads * VW];
  const int t = threadIdx.x, lane = t % L.CT, grp = t / L.CT;
  const int C = static_cast<int>(P.out_c);  // the host checked that SEG * C fits in 32 bits
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * L.CT + lane) * VW;
  const bool active = grp < L.G && c0 < C;
  const int64_t step = static_cast<int64_t>(gridDim.y) * L.G;
  const int OW = static_cast<int>(P.q[2]), OH = static_cast<int>(P.q[0]);
  const int IW = static_cast<int>(P.in[2]), IH = static_cast<int>(P.in[0]);
  const int ph = P.pad[0][0];
  const int64_t x_row = int64_t(IW) * C, g_row = int64_t(OW) * C;
  float acc[TAPS][VW];
#pragma unroll
  for (int i = 0; i < TAPS; ++i) {
#pragma unroll
    for (int v = 0; v < VW; ++v) acc[i][v] = 0.f;
  }
  if (active) {
    for (int64_t it = static_cast<int64_t>(blockIdx.y) * L.G + grp; it < L.items; it += step) {
      int ws, unused, seg;
      int64_t n;
      depth3d_item(it, L, 1, ws, unused, seg, n);
      const int q0 = seg * L.dl, q1 = q0 + L.dl < OH ? q0 + L.dl : OH;
      const int ow0 = ws * R, gn = OW - ow0, iw0 = ow0 - P.pad[2][0];
      const uint32_t cols = column_mask<SEG, uint32_t>(iw0, IW);
      // step i: input row q0 - ph + i, output row q0 + i (zeros from q1 on)
      const int steps = q1 - q0 + KH - 1;
      const T* gp = gy + ((n * OH + q0) * int64_t(OW) + ow0) * C + c0;
      const T* xp = x + ((n * IH + (q0 - ph)) * int64_t(IW) + iw0) * C + c0;
      Pack<T, VW> gnext[R], xnext[SEG];
      const auto fetch = [&](int i) {
        const bool g_ok = q0 + i < q1;
        const int ih = q0 - ph + i;
        const bool x_ok = ih >= 0 && ih < IH;
        const T* gq = held(gp + i * g_row);
        const T* xq = held(xp + i * x_row);
#pragma unroll
        for (int r = 0; r < R; ++r) load_raw<T, VW>(gq + r * C, g_ok && r < gn, gnext[r]);
#pragma unroll
        for (int j = 0; j < SEG; ++j) load_raw<T, VW>(xq + j * C, x_ok && ((cols >> j) & 1u), xnext[j]);
      };
      float g[KH][R][VW];
#pragma unroll
      for (int k = 0; k < KH; ++k) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
          for (int v = 0; v < VW; ++v) g[k][r][v] = 0.f;
        }
      }
      fetch(0);
      for (int i = 0; i < steps; ++i) {
        Pack<T, VW> gcur[R], xcur[SEG];
#pragma unroll
        for (int r = 0; r < R; ++r) gcur[r] = gnext[r];
#pragma unroll
        for (int j = 0; j < SEG; ++j) xcur[j] = xnext[j];
        if (i + 1 < steps) fetch(i + 1);
#pragma unroll
        for (int k = 0; k + 1 < KH; ++k) {
#pragma unroll
          for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int v = 0; v < VW; ++v) g[k][r][v] = g[k + 1][r][v];
          }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) raw_to_acc<T, VW>(gcur[r], g[KH - 1][r]);
        const int ih = q0 - ph + i;
        if (ih < 0 || ih >= IH) continue;
#pragma unroll
        for (int j = 0; j < SEG; ++j) {
          float xf[VW];
          raw_to_acc<T, VW>(xcur[j], xf);
          add_input_column<KH, KW, R, VW>(acc, g, xf, j);
        }
      }
    }
  }
  block_groups_sum<TAPS, VW, TB>(acc, red, part, L, C, TAPS, 0, TAPS);
}

// 16-bit 2-D K x K weight-grads at stride 1 with x and grad_output staged in shared memory
// (session 13, `cl_wgrad_s2d`). cl_wgrad_rows / cl_wgrad_depth3d load straight from global memory
// into registers, a few rows ahead at most (MobileNetV2 56x56 C 144 fp16: 65 us, 1.77 TB/s, where
// cuDNN's weight-grad takes 54). Here a block is 48 channels (six 16-byte pieces a position) x a
// column block of G strips of R outputs, walking a segment of output rows of one sample: per step
// it stages one input row (the BW + K - 1 columns the block's strips meet, zeros outside the
// tensor) and one grad_output row (BW columns) by 16-byte cp.async, two steps ahead in a ring of 3
// slots, one barrier a step. A thread (VW channels, one strip) keeps the grad_output rows of the K
// output rows an input row meets in registers (cl_wgrad_rows' window, moved one row a step), reads
// the input row's R + K - 1 values once and adds every product it meets. Work items (column block,
// row segment, sample), column block fastest, dealt to the blocks in turn; the staging runs on
// across items. Then the G strips' sums in strip order (block_groups_sum), partials + sum_chunks:
// deterministic, no atomics.
template <int K>
struct ClS2dShape {
  static constexpr int VW = K == 3 ? 2 : 1;  // channels per thread: 3x3 32-bit reads; 5x5 16-bit (register room)
  static constexpr int CH = 48, CT = CH / VW, R = 7, G = 192 / CT, BW = G * R;
  static constexpr int XPOS = BW + K - 1, POS = XPOS + BW;  // staged positions per slot: x, then grad_output
  // Ring of 3 slots (2 steps ahead): 4 slots for 3x3 / 7 for 5x5 (3 steps ahead or more, 44 / 40
  // KB) measured slower (H100, session 13, mb16_call2_ab.log, MobileNetV2 56x56 fp16 0.0568 ->
  // 0.0597 ms, EfficientNet 28x28 fp16 0.0470 -> 0.0502).
  static constexpr int PIECES = POS * CH / 8, THREADS = CT * G, NB = 3, STAGE = POS * CH;
  static constexpr int NP = (PIECES + THREADS - 1) / THREADS;  // 16-byte pieces a thread stages per slot
  static constexpr int TAPS = K * K, TB = reduce_taps<TAPS, VW, float>();
  static constexpr size_t SMEM = std::max(size_t(NB) * STAGE * 2, size_t(TB) * kWgradThreads * VW * sizeof(float));
  static_assert(THREADS == 192 && NP <= 4, "the tile the launcher sizes");
};
constexpr int kS2dBlocksPerSm = 3;

template <typename T, int K>
__global__ void __launch_bounds__(192, kS2dBlocksPerSm)
cl_wgrad_s2d(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const Plan P,
             const ClwTile L) {
  static_assert(sizeof(T) == 2, "16-bit storage");
  using S = ClS2dShape<K>;
  constexpr int VW = S::VW, R = S::R, CH = S::CH, NB = S::NB, NP = S::NP;
  __shared__ __align__(16) unsigned char s2d_smem[S::SMEM];
  T* const ring = reinterpret_cast<T*>(s2d_smem);
  const int t = threadIdx.x, lane = t % S::CT, grp = t / S::CT;
  const int C = static_cast<int>(P.out_c), c0 = static_cast<int>(blockIdx.x) * CH;
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]);
  const int OH = static_cast<int>(P.q[1]), OW = static_cast<int>(P.q[2]);
  const int ph = P.pad[1][0], pw = P.pad[2][0];
  const int64_t x_img = int64_t(IH) * IW * C, g_img = int64_t(OH) * OW * C;
  const int64_t step = gridDim.y;

  struct Item {
    int64_t n;
    int q0, q1, cb;
  };
  const auto decode = [&](int64_t it) {
    Item m;
    m.cb = static_cast<int>(it % L.strips), it /= L.strips;
    const int seg = static_cast<int>(it % L.segs);
    m.n = it / L.segs;
    m.q0 = seg * L.dl, m.q1 = m.q0 + L.dl < OH ? m.q0 + L.dl : OH;
    return m;
  };
  // The thread's 16-byte pieces of a slot (i = t + k * THREADS: position i / 6, channels i % 6 * 8;
  // x positions first) as offsets within a row, bit k of xbits / gbits: an x / grad_output piece
  // inside the tensor (else zeros).
  int off[NP];
  uint32_t xbits = 0, gbits = 0;
  const auto offsets = [&](const Item& m) {
    xbits = 0, gbits = 0;
#pragma unroll
    for (int k = 0; k < NP; ++k) {
      const int i = t + k * S::THREADS, pos = i / (CH / 8), ch = c0 + i % (CH / 8) * 8;
      off[k] = 0;
      if (i < S::PIECES && ch < C) {
        if (pos < S::XPOS) {
          const int iw = m.cb * S::BW - pw + pos;
          if (iw >= 0 && iw < IW) off[k] = iw * C + ch, xbits |= 1u << k;
        } else {
          const int ow = m.cb * S::BW + pos - S::XPOS;
          if (ow < OW) off[k] = ow * C + ch, gbits |= 1u << k;
        }
      }
    }
  };
  // The staging cursor: item sit, its step si of sn (input row q0 - ph + si, output row q0 + si).
  int64_t sit = blockIdx.y;
  bool staging = false;
  Item sm{};
  int si = 0, sn = 0, sbuf = 0;
  const auto begin = [&]() {
    staging = sit < L.items;
    if (staging) {
      sm = decode(sit);
      offsets(sm);
      si = 0;
      sn = sm.q1 - sm.q0 + K - 1;
    }
  };
  begin();
  // Stages the cursor's step and moves on; always commits a group (maybe empty).
  const auto stage_next = [&]() {
    if (staging) {
      T* const dst = ring + sbuf * S::STAGE + t * 8;
      const int ih = sm.q0 - ph + si, oh = sm.q0 + si;
      const bool x_ok = ih >= 0 && ih < IH, g_ok = oh < sm.q1;
      const T* const xr = x + sm.n * x_img + int64_t(ih) * IW * C;
      const T* const gr = gy + sm.n * g_img + int64_t(oh) * OW * C;
#pragma unroll
      for (int k = 0; k < NP; ++k) {
        const int i = t + k * S::THREADS;
        if (i < S::PIECES) {
          if (i < S::XPOS * (CH / 8)) {
            if (x_ok) cp_async16(dst + k * S::THREADS * 8, xr + off[k], (xbits >> k & 1u) * 16);
          } else if (g_ok) {
            cp_async16(dst + k * S::THREADS * 8, gr + off[k], (gbits >> k & 1u) * 16);
          }
        }
      }
      if (++si == sn) {
        sit += step;
        begin();
      }
    }
    cp_async_commit();
    sbuf = sbuf == NB - 1 ? 0 : sbuf + 1;
  };

  float acc[S::TAPS][VW];
#pragma unroll
  for (int i = 0; i < S::TAPS; ++i) {
#pragma unroll
    for (int v = 0; v < VW; ++v) acc[i][v] = 0.f;
  }
#pragma unroll
  for (int k = 0; k + 1 < NB; ++k) stage_next();
  int rd = 0;
  const int xmine = grp * R * CH + lane * VW, gmine = (S::XPOS + grp * R) * CH + lane * VW;
  for (int64_t it = blockIdx.y; it < L.items; it += step) {
    const Item m = decode(it);
    float g[K][R][VW];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int v = 0; v < VW; ++v) g[k][r][v] = 0.f;
      }
    }
    const int steps = m.q1 - m.q0 + K - 1;
    for (int i = 0; i < steps; ++i) {
      cp_async_wait<NB - 2>();
      __syncthreads();
      stage_next();
      const T* const buf = ring + rd * S::STAGE;
      rd = rd == NB - 1 ? 0 : rd + 1;
#pragma unroll
      for (int k = 0; k + 1 < K; ++k) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
          for (int v = 0; v < VW; ++v) g[k][r][v] = g[k + 1][r][v];
        }
      }
      const bool g_ok = m.q0 + i < m.q1;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        Pack<T, VW> raw{};
        if (g_ok) raw = *reinterpret_cast<const Pack<T, VW>*>(buf + gmine + r * CH);
        raw_to_acc<T, VW>(raw, g[K - 1][r]);
      }
      const int ih = m.q0 - ph + i;
      if (ih < 0 || ih >= IH) continue;
#pragma unroll
      for (int j = 0; j < R + K - 1; ++j) {
        float xf[VW];
        raw_to_acc<T, VW>(*reinterpret_cast<const Pack<T, VW>*>(buf + xmine + j * CH), xf);
        add_input_column<K, K, R, VW>(acc, g, xf, j);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring becomes the reduction scratch
  block_groups_sum<S::TAPS, VW, S::TB>(
      acc, *reinterpret_cast<float(*)[S::TB][kWgradThreads * VW]>(s2d_smem), part, L, C, S::TAPS, 0, S::TAPS);
}

// cl_wgrad_d3s's items and grid: one wave of `wave` blocks (kWgradWave), each channel tile's items
// dealt to its blocks in turn; depth segments only when a block would get fewer than 2 items.
// false: too large.
inline bool choose_d3s_tile(ClwTile& L, const Plan& P, int64_t wave, int64_t& ctiles, int64_t& chunks) {
  if (P.in[1] * P.in[2] * P.out_c >= (int64_t(1) << 31) || P.q[1] * P.q[2] * P.out_c >= (int64_t(1) << 31) ||
      P.in[0] + P.q[0] + 5 >= (int64_t(1) << 30) || P.q[1] + 8 >= (int64_t(1) << 30))
    return false;
  L.CT = kD3wLanes;
  L.G = kD3wRows;
  L.strips = static_cast<int>(P.q[2] / kD3wR);
  ctiles = ceil_div(P.out_c, kD3wLanes);
  const int64_t want = ceil_div(wave, ctiles), per_seg = P.N * ceil_div(P.q[1], kD3wRows) * L.strips;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], 5, per_seg, 2 * want, segs, dl);
  L.segs = static_cast<int>(segs);
  L.dl = static_cast<int>(dl);
  L.items = per_seg * segs;  // decoded in 64 bits (once per item); L.i32 and L.chunk are unused
  chunks = std::clamp<int64_t>(want, 1, std::min<int64_t>(L.items, 65535));
  return ctiles <= 65535 && L.items > 0;
}

// cl_wgrad_s2d's items and grid for the 2-D plan P: channel tiles of 48, column blocks of BW
// outputs, the output rows cut into segments so that one wave of 132 x kS2dBlocksPerSm blocks
// does the least steps per block (a segment re-reads its K - 1 halo rows: segments of at least
// 2K rows). false: too large.
template <int K>
bool choose_s2d_tile(ClwTile& L, const Plan& P, int64_t& ctiles, int64_t& chunks) {
  using S = ClS2dShape<K>;
  if (P.in[1] * P.in[2] * P.out_c >= (int64_t(1) << 31) || P.q[1] * P.q[2] * P.out_c >= (int64_t(1) << 31) ||
      P.N >= (int64_t(1) << 31) / 64)
    return false;
  L.CT = S::CT;
  L.G = S::G;
  L.strips = static_cast<int>(ceil_div(P.q[2], S::BW));
  ctiles = ceil_div(P.out_c, S::CH);
  const int64_t cmax = std::clamp<int64_t>(132 * kS2dBlocksPerSm / ctiles, 1, 65535);
  const int64_t OH = P.q[1];
  int64_t best = -1;
  for (int64_t segs = 1; segs <= std::min<int64_t>(OH, 16); ++segs) {
    const int64_t dl = ceil_div(OH, segs), sg = ceil_div(OH, dl), items = P.N * L.strips * sg;
    if (sg > 1 && dl < 2 * K) break;
    const int64_t per_block = ceil_div(items, cmax), cost = per_block * (dl + K - 1);
    if (best < 0 || cost < best) {
      best = cost;
      L.segs = static_cast<int>(sg);
      L.dl = static_cast<int>(dl);
      L.items = items;
      chunks = ceil_div(items, per_block);
    }
  }
  L.i32 = true;
  L.chunk = 0;
  return ctiles <= 65535 && L.items > 0;
}

// ---- host launch (cpp_tests/cuda_on_cpu/run.sh takes the kernels above this line) ----
// The two launches of a channels-last weight-grad: `partial` (a cl_wgrad_partial /
// cl_wgrad_depth3d specialisation) writes every chunk's tap sums into part [chunks][out_c * taps],
// then sum_chunks adds the chunks in order into gw.
// pdl: both launched programmatically (pdl.cuh; the 1-D rows of run_short16: short_k3 (N, L, C)
// backward 47.5 -> 44.6 us, H100, session 14).
template <typename T, typename Partial>
void partials_then_sum(Partial partial, const T* x, const T* gy, T* gw, const Plan& P, const ClwTile& L,
                       int64_t ctiles, int64_t chunks, int64_t taps, const at::TensorBase& like, cudaStream_t stream,
                       bool pdl = false) {
  using acc_t = at::opmath_type<T>;
  const int64_t n = P.out_c * taps;
  const at::Tensor part = at::empty({chunks, n}, like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const unsigned threads = static_cast<unsigned>(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  if (pdl) {
    launch_pdl(true, partial, dim3(static_cast<unsigned>(ctiles), static_cast<unsigned>(chunks)), dim3(threads), 0,
               stream, x, gy, part.mutable_data_ptr<acc_t>(), P, L);
    launch_pdl(true, sum_chunks<T>, dim3(static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, kSumCols), 1, 1 << 30))),
               dim3(kWgradThreads), 0, stream, part.const_data_ptr<acc_t>(), gw, chunks, n);
    return;
  }
  partial<<<dim3(static_cast<unsigned>(ctiles), static_cast<unsigned>(chunks)), threads, 0, stream>>>(
      x, gy, part.mutable_data_ptr<acc_t>(), P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_chunks<T><<<static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, kSumCols), 1, 1 << 30)), kWgradThreads, 0,
                  stream>>>(part.const_data_ptr<acc_t>(), gw, chunks, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// x and gy take VW-channel vector loads.
template <typename T, int VW>
bool vectors_fit(const T* x, const T* gy, const Plan& P) {
  return P.out_c % VW == 0 && reinterpret_cast<uintptr_t>(x) % (sizeof(T) * VW) == 0 &&
         reinterpret_cast<uintptr_t>(gy) % (sizeof(T) * VW) == 0;
}

// 16-bit 1-D rows of 2-4 taps on the short tile (kShort16*), channel tiles of at most 64 lanes: as
// many chunks (partials) as ClwShape's tile has at twice the blocks.
template <typename T, int KW>
bool run_short16(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if (!vectors_fit<T, kShort16Vw>(x, gy, P)) return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, kShort16Vw, kShort16R, kShort16R - 1 + KW, 0, ctiles, chunks, 132 * kShort16Blocks, 64))
    return false;
  partials_then_sum(cl_wgrad_partial<T, 1, KW, 1, kShort16Vw, kShort16R, 1, kShort16Blocks>, x, gy, gw, P, L, ctiles,
                    chunks, KW, like, stream, pdl_supported());
  return true;
}

template <typename T, int KH, int KW, int S, bool pairs = false>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (!pairs && KH == 1 && KW >= 15) {
    if (run<T, KH, KW, S, true>(x, gy, gw, P, like, stream)) return true;  // else odd channels: one per lane
  }
  if constexpr (sizeof(T) == 2 && KH == 1 && KW <= 4 && S == 1) {
    if (P.k[0] == 1 && run_short16<T, KW>(x, gy, gw, P, like, stream)) return true;
  }
  using Shape = ClwShape<T, KH, KW, pairs>;
  constexpr int VW = Shape::VW, R = Shape::R, RH = Shape::RH;
  if (!vectors_fit<T, VW>(x, gy, P)) return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, (R - 1) * S + KW, 0, ctiles, chunks)) return false;
  partials_then_sum(cl_wgrad_partial<T, KH, KW, S, VW, R, RH>, x, gy, gw, P, L, ctiles, chunks,
                    int64_t(P.k[0]) * P.k[1] * KW, like, stream);
  return true;
}

// fp32: the long tile (kLong32*, above); 16-bit: run<>.
template <typename T>
bool run_k31(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    ClwTile L{};
    int64_t ctiles = 0, chunks = 0;
    if (!choose_clw_tile(L, P, kLong32Vw, kLong32R, kLong32R - 1 + 31, 0, ctiles, chunks)) return false;
    partials_then_sum(cl_wgrad_partial<T, 1, 31, 1, kLong32Vw, kLong32R, 1>, x, gy, gw, P, L, ctiles, chunks,
                      int64_t(P.k[0]) * 31, like, stream);
    return true;
  } else {
    return run<T, 1, 31, 1>(x, gy, gw, P, like, stream);
  }
}

template <typename T, int KD, int KH, int KW, int S>
bool run_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using Shape = Clw3Shape<T, KD, KH, KW>;
  constexpr int VW = Shape::VW, R = Shape::R;
  if (P.k[0] != KD || P.S[0] != 1 || !vectors_fit<T, VW>(x, gy, P)) return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, (R - 1) * S + KW, KD, ctiles, chunks)) return false;
  partials_then_sum(cl_wgrad_depth3d<T, KD, KH, KW, S, VW, R>, x, gy, gw, P, L, ctiles, chunks, KD * KH * KW,
                    like, stream);
  return true;
}

// cl_wgrad_d3s: run_d3r's plans with channels a multiple of 8, x and grad_output 16-byte aligned,
// sm_80+ (cp.async).
template <typename T>
bool run_d3s(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if (P.out_c % 8 != 0 || !vectors_fit<T, 8>(x, gy, P) || !mma16_supported()) return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_d3s_tile(L, P, kWgradWave, ctiles, chunks)) return false;
  partials_then_sum(cl_wgrad_d3s<T, 5>, x, gy, gw, P, L, ctiles, chunks, 45, like, stream);
  return true;
}

// cl_wgrad_d3s / cl_wgrad_d3r's plans: fp16 / bf16 5 x 3 x 3 at stride 1, multiplier 1, width
// padding 1, output width = input width, a multiple of 8. Tried before tcw3_cl (tc_wgrad3d.cu),
// which they replaced on the row they were measured on (X3D N16 C192 16x56x56 bf16 NDHWC
// weight-grad, H100, same process): cl_wgrad_d3r (session 11, x3d5_call2_bench.log) 1.04-1.08 ->
// 0.83 ms, kernel 978 -> 787 us; cl_wgrad_d3s (session 12, x3d_call1_test.log) 0.815-0.822 ->
// 0.496 ms, kernel 464 us. cl_wgrad_d3r keeps the plans cl_wgrad_d3s declines (channels not a
// multiple of 8, tensors off a 16-byte boundary).
template <typename T>
bool run_d3r(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if (P.k[0] != 5 || P.k[1] != 3 || P.k[2] != 3 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 ||
      P.pad[2][0] != 1 || P.q[2] != P.in[2] || P.q[2] % 8 != 0)
    return false;
  if (run_d3s<T>(x, gy, gw, P, like, stream)) return true;  // else cl_wgrad_d3r (scalar loads)
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, 1, 8, 10, 5, ctiles, chunks)) return false;
  partials_then_sum(cl_wgrad_d3r<T, 5>, x, gy, gw, P, L, ctiles, chunks, 45, like, stream);
  return true;
}

// 16-bit 2-D KH x KW at stride 1 through rows_as_depth: on cl_wgrad_depth3d (pipe false) or
// cl_wgrad_rows (pipe true), VW channels per lane, strips of R, channel tiles of at most 32 lanes.
template <typename T, int KH, int KW, int VW, int R, bool pipe>
bool run_rows2d(const T* x, const T* gy, T* gw, const Plan& P2, const at::TensorBase& like, cudaStream_t stream) {
  if (P2.k[0] != 1 || P2.S[1] != 1 || P2.S[2] != 1) return false;
  const Plan P = rows_as_depth(P2);
  if (!vectors_fit<T, VW>(x, gy, P)) return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, R - 1 + KW, KH, ctiles, chunks, kWgradWave, 32)) return false;
  if constexpr (pipe) {
    partials_then_sum(cl_wgrad_rows<T, KH, KW, VW, R>, x, gy, gw, P, L, ctiles, chunks, KH * KW, like, stream);
  } else {
    partials_then_sum(cl_wgrad_depth3d<T, KH, 1, KW, 1, VW, R>, x, gy, gw, P, L, ctiles, chunks, KH * KW, like,
                      stream);
  }
  return true;
}

// The tiles of the 16-bit 2-D 3x3 / 5x5 stride-1 weight-grads, each the fastest of the session-12
// A/B (H100, weight-grad alone, device ms fp16 / bf16, main's cl_wgrad_partial + sum_chunks in
// brackets; bench/results/h100/session12/wg16_call2_ab.log): 3x3 planes up to 7 wide on
// cl_wgrad_rows, 2 channels x strips of 4 (MobileNetV2 7x7 C 960: 0.0133 / 0.0133 [0.0222 /
// 0.0223]); wider 3x3 on cl_wgrad_depth3d, 4 channels x strips of 4 (MobileNetV2 56x56 C 144:
// 0.0636 / 0.0582 [0.0666 / 0.0615]; cl_wgrad_rows' best tile there, 4 x 2, 0.0616 / 0.0623); 5x5
// on cl_wgrad_rows, 1 channel x strips of 7 (EfficientNet 28x28 C 240: 0.0530 / 0.0544 [0.0744 /
// 0.0741]). Channel tiles of at most 32 lanes: within 2% of 128 on MobileNetV2 56x56, 10-30%
// faster on the other two rows.
// cl_wgrad_s2d, then sum_chunks: channels a multiple of 8, 16-byte aligned x and grad_output, sm >= 80.
template <typename T, int K>
bool run_s2d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if (P.k[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.out_c % 8 != 0 || !vectors_fit<T, 8>(x, gy, P) ||
      !mma16_supported())
    return false;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_s2d_tile<K>(L, P, ctiles, chunks)) return false;
  using acc_t = float;
  const int64_t n = P.out_c * K * K;
  const at::Tensor part = at::empty({chunks, n}, like.options().dtype(at::kFloat));
  cl_wgrad_s2d<T, K><<<dim3(static_cast<unsigned>(ctiles), static_cast<unsigned>(chunks)), ClS2dShape<K>::THREADS, 0,
                       stream>>>(x, gy, part.mutable_data_ptr<acc_t>(), P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_chunks<T><<<static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, kSumCols), 1, 1 << 30)), kWgradThreads, 0,
                  stream>>>(part.const_data_ptr<acc_t>(), gw, chunks, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_rows16(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  // cl_wgrad_s2d first where its column block is more than half used (3x3: outputs > 28 wide, 5x5:
  // > 14), measured on one row of each class (session 13, mb16_call2_ab.log, weight-grad alone,
  // ms fp16 / bf16 [the tiles below]: MobileNetV2 56x56 C 144 0.0568 / 0.0570 [0.0632 / 0.0577],
  // EfficientNet 28x28 C 240 0.0470 / 0.0475 [0.0530 / 0.0545]); narrower planes keep the tiles
  // below (MobileNetV2 7x7 on cl_wgrad_rows is faster than aten there).
  if (2 * P.q[2] > ClS2dShape<K>::BW && run_s2d<T, K>(x, gy, gw, P, like, stream)) return true;
  if constexpr (K == 5) {
    return run_rows2d<T, 5, 5, 1, 7, true>(x, gy, gw, P, like, stream);
  } else {
    if (P.q[2] <= 7) return run_rows2d<T, 3, 3, 2, 4, true>(x, gy, gw, P, like, stream);
    return run_rows2d<T, 3, 3, 4, 4, false>(x, gy, gw, P, like, stream);
  }
}

}  // namespace

template <typename T>
bool launch_cl_wgrad_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                             cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_div != 1) return false;
    const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KD, KH, KW, S) \
  if (kd == KD && kh == KH && kw == KW && s == S) return run_depth3d<T, KD, KH, KW, S>(x, gy, gw, P, like, stream);
    CONVX_DEPTH3D_WGRAD_FILTERS(CONVX_CASE)
#undef CONVX_CASE
    return false;
  }
}

template <typename T>
bool launch_cl_wgrad_d3r(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                         cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    return run_d3r<T>(x, gy, gw, P, like, stream);
  }
}

template <typename T>
bool launch_cl_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_div != 1) return false;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
    if constexpr (sizeof(T) == 2) {  // 16-bit 2-D 3x3 / 5x5 at stride 1: rows streamed (run_rows16)
      if (P.k[0] == 1 && kh == kw && s == 1 && (kh == 3 || kh == 5)) {
        if (kh == 3 ? run_rows16<T, 3>(x, gy, gw, P, like, stream) : run_rows16<T, 5>(x, gy, gw, P, like, stream))
          return true;
      }
    }
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S>(x, gy, gw, P, like, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    if (kh == 1 && kw == 31 && s == 1) return run_k31<T>(x, gy, gw, P, like, stream);
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    if (kw == 31 && s == 1) return run<T, 0, 31, 1>(x, gy, gw, P, like, stream);
    return false;
  }
}

template bool launch_cl_wgrad_depth3d<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_depth3d<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_depth3d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_depth3d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_d3r<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_d3r<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_d3r<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad_d3r<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
