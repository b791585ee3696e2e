// The depthwise CPU inner loops (see cpu_kernels.h), written with at::vec::Vectorized so that
// each ISA build (CPU_CAPABILITY = DEFAULT, AVX2, AVX512, set by CMakeLists.txt) gets its own
// vector width. Not in the source glob: CMake compiles this file once per ISA.
//
// NCHW: vectorised along the output row, a tile of kRowTile rows x one vector in registers,
// every tap one broadcast weight and one unaligned load per row; kernel sizes 3, 5 and 7 are
// unrolled (templates), others take the same loop with run-time bounds.
// Channels-last: vectorised along the channels; the forward keeps 8 neighbouring output pixels
// (4 at the row's ends) in registers so every weight vector load serves 8 FMAs.
#include "ops/depthwise_conv/cpu_kernels.h"

#include <ATen/cpu/vec/vec.h>

#include <algorithm>

#ifndef CPU_CAPABILITY
#error "cpu_kernels.cpp is compiled by CMake once per ISA with CPU_CAPABILITY set"
#endif

namespace convx::cpu::depthwise_isa::CPU_CAPABILITY {
namespace {

using at::vec::Vectorized;

template <typename T, int K>
void plane(const PlaneArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  constexpr int64_t R = kRowTile;
  const int64_t KH = K ? K : a.KH, KW = K ? K : a.KW;
  const int64_t row_step = a.sh * a.ld, tap_step = a.dh * a.ld;
  for (int64_t oh0 = 0; oh0 < a.OH; oh0 += R) {
    const int64_t rows = std::min<int64_t>(R, a.OH - oh0);
    T* out = a.out + oh0 * a.out_ld;
    for (int64_t ow = 0; ow < a.OW; ow += n) {
      const int64_t cnt = std::min<int64_t>(n, a.OW - ow);
      V acc[R];
      for (int64_t r = 0; r < R; ++r) {
        // Rows past OH are computed from the buffer's spare rows and never stored.
        acc[r] = a.accumulate && r < rows ? V::loadu(out + r * a.out_ld + ow, cnt) : V(a.bias);
      }
      const T* base = a.in + oh0 * row_step + ow;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const T* row = base + kh * tap_step;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const V wv(a.w[kh * KW + kw]);
          const T* p = row + a.col_off[kw];
          for (int64_t r = 0; r < R; ++r) {
            acc[r] = at::vec::fmadd(wv, V::loadu(p + r * row_step), acc[r]);
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) acc[r].store(out + r * a.out_ld + ow, cnt);
    }
  }
}

// K x K taps, dilation 1 along H, stride S along H: the tile's input rows i = r*S + kh are each
// loaded once per kw and feed every output row r that reads them, with the K weights of column
// kw held in registers (loads per FMA: (K + (R-1)*S + K) / (R*K) instead of 1 + 1/R).
template <typename T, int K, int S>
void plane_shared_rows(const PlaneArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  constexpr int R = kRowTile, IR = (R - 1) * S + K;
  for (int64_t oh0 = 0; oh0 < a.OH; oh0 += R) {
    const int64_t rows = std::min<int64_t>(R, a.OH - oh0);
    T* out = a.out + oh0 * a.out_ld;
    for (int64_t ow = 0; ow < a.OW; ow += n) {
      const int64_t cnt = std::min<int64_t>(n, a.OW - ow);
      V acc[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        acc[r] = a.accumulate && r < rows ? V::loadu(out + r * a.out_ld + ow, cnt) : V(a.bias);
      }
      const T* base = a.in + oh0 * S * a.ld + ow;
      for (int kw = 0; kw < K; ++kw) {
        V wv[K];
#pragma GCC unroll 8
        for (int kh = 0; kh < K; ++kh) wv[kh] = V(a.w[kh * K + kw]);
        const T* p = base + a.col_off[kw];
#pragma GCC unroll 16
        for (int i = 0; i < IR; ++i) {
          const V xv = V::loadu(p + i * a.ld);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const int kh = i - r * S;
            if (kh >= 0 && kh < K) acc[r] = at::vec::fmadd(wv[kh], xv, acc[r]);
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        if (r < rows) acc[r].store(out + r * a.out_ld + ow, cnt);
      }
    }
  }
}

template <typename T>
T lane_sum(const Vectorized<T>& v) {
  T lanes[Vectorized<T>::size()];
  v.store(lanes);
  T s = 0;
  for (int64_t i = 0; i < Vectorized<T>::size(); ++i) s += lanes[i];
  return s;
}

// One kernel row kh: K accumulators (one per kw) over the whole plane, so every grad_output
// vector is loaded once for K FMAs. The last, partial vector of a row loads both operands with
// a count (zero lanes), so input values no output reads cannot reach the sum (0 * inf).
template <typename T, int K>
void plane_weight_grad(const PlaneWeightGradArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  constexpr int KA = K ? K : 1;  // accumulators per pass
  const int64_t KH = K ? K : a.KH, KW = K ? K : a.KW;
  const int64_t full = a.OW / n * n, tail = a.OW - full;
  for (int64_t kh = 0; kh < KH; ++kh) {
    for (int64_t kw0 = 0; kw0 < KW; kw0 += KA) {
      V acc[KA];
      for (int j = 0; j < KA; ++j) acc[j] = V(T(0));
      for (int64_t oh = 0; oh < a.OH; ++oh) {
        const T* g = a.gy + oh * a.OW;
        const T* row = a.in + oh * a.row_step + kh * a.tap_row_step;
        for (int64_t ow = 0; ow < full; ow += n) {
          const V gv = V::loadu(g + ow);
          for (int j = 0; j < KA; ++j) {
            acc[j] = at::vec::fmadd(gv, V::loadu(row + a.col_off[kw0 + j] + ow), acc[j]);
          }
        }
        if (tail) {
          const V gv = V::loadu(g + full, tail);
          for (int j = 0; j < KA; ++j) {
            acc[j] = at::vec::fmadd(gv, V::loadu(row + a.col_off[kw0 + j] + full, tail), acc[j]);
          }
        }
      }
      for (int j = 0; j < KA; ++j) a.dw[kh * KW + kw0 + j] += lane_sum(acc[j]);
    }
  }
}

template <typename T, int K>
void plane_for_kernel(const PlaneArgs<T>& a) {
  if (a.dh == 1 && a.sh == 1) return plane_shared_rows<T, K, 1>(a);
  if (a.dh == 1 && a.sh == 2) return plane_shared_rows<T, K, 2>(a);
  plane<T, K>(a);
}

template <typename T>
void plane_dispatch(const PlaneArgs<T>& a) {
  if (a.KH == a.KW && a.KH == 3) return plane_for_kernel<T, 3>(a);
  if (a.KH == a.KW && a.KH == 5) return plane_for_kernel<T, 5>(a);
  if (a.KH == a.KW && a.KH == 7) return plane_for_kernel<T, 7>(a);
  plane<T, 0>(a);
}

template <typename T>
void plane_weight_grad_dispatch(const PlaneWeightGradArgs<T>& a) {
  if (a.KH == a.KW && a.KH == 3) return plane_weight_grad<T, 3>(a);
  if (a.KH == a.KW && a.KH == 5) return plane_weight_grad<T, 5>(a);
  if (a.KH == a.KW && a.KH == 7) return plane_weight_grad<T, 7>(a);
  plane_weight_grad<T, 0>(a);
}

// Software prefetch of the next task's data, spread evenly over this task's pixel blocks (one
// step per 4 output pixels of a channel vector). The loops walk one channel vector across a
// row at a time, a 64-byte line every C floats, and the hardware prefetchers do not run ahead
// of that walk: without this the channels-last loops wait on memory for most of their time
// (3x3 stride 2: ~5x slower per output than with an L3-resident input).
struct Prefetch {
  const char* in = nullptr;  // lines to read: into L2
  int64_t in_lines = 0;
  const char* out = nullptr;  // lines to write: fetched with write intent (out_write)
  int64_t out_lines = 0;
  bool out_write = true;
  int64_t steps = 1, step = 0;
  void next(int64_t k = 1) {
    const int64_t s0 = step, s1 = std::min(steps, step + k);
    step = s1;
    for (int64_t l = in_lines * s0 / steps; l < in_lines * s1 / steps; ++l) {
      __builtin_prefetch(in + l * 64, 0, 2);
    }
    for (int64_t l = out_lines * s0 / steps; l < out_lines * s1 / steps; ++l) {
      if (out_write) {
        __builtin_prefetch(out + l * 64, 1, 2);
      } else {
        __builtin_prefetch(out + l * 64, 0, 2);
      }
    }
  }
};

// Channels-last forward: 4 pixels x one channel vector c at a time, every tap inside the row.
template <typename T>
void pixels_inside(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  using V = Vectorized<T>;
  pf.next();
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph;
  const V b = V::loadu(a.bias + c, cnt);
  V acc[4] = {b, b, b, b};
  for (int64_t kh = 0; kh < a.KH; ++kh) {
    const int64_t ih = ih0 + kh * a.dh;
    if (ih < 0 || ih >= a.SH) continue;
    const T* xr = a.src + ih * a.SW * C + c;
    for (int64_t kw = 0; kw < a.KW; ++kw) {
      const V wv = V::loadu(a.w + (kh * a.KW + kw) * C + c, cnt);
      const int64_t iw0 = ow0 * a.sw - a.pw + kw * a.dw;
      for (int64_t j = 0; j < 4; ++j) {
        acc[j] = at::vec::fmadd(wv, V::loadu(xr + (iw0 + j * a.sw) * C, cnt), acc[j]);
      }
    }
  }
  for (int64_t j = 0; j < 4; ++j) acc[j].store(a.dst + (ow0 + j) * C + c, cnt);
}

// Pixels near the row's ends, one at a time over the taps that lie inside (no per-tap tests).
template <typename T>
void pixels_edge(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  using V = Vectorized<T>;
  pf.next();
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph;
  for (int64_t ow = ow0; ow < ow0 + np; ++ow) {
    const int64_t iw0 = ow * a.sw - a.pw;  // input column of tap kw: iw0 + kw*dw
    const int64_t lo = iw0 >= 0 ? 0 : (-iw0 + a.dw - 1) / a.dw;
    const int64_t hi = a.SW - iw0 <= 0 ? 0 : std::min(a.KW, (a.SW - 1 - iw0) / a.dw + 1);
    V acc = V::loadu(a.bias + c, cnt);
    for (int64_t kh = 0; kh < a.KH; ++kh) {
      const int64_t ih = ih0 + kh * a.dh;
      if (ih < 0 || ih >= a.SH) continue;
      const T* xr = a.src + (ih * a.SW + iw0) * C + c;
      const T* wk = a.w + kh * a.KW * C + c;
      for (int64_t kw = lo; kw < hi; ++kw) {
        acc = at::vec::fmadd(V::loadu(wk + kw * C, cnt), V::loadu(xr + kw * a.dw * C, cnt), acc);
      }
    }
    acc.store(a.dst + ow * C + c, cnt);
  }
}

// K x K taps, dilation 1 along W, stride S along W: the 3*S + K input pixels of 4 outputs are
// loaded once per kernel row and reused by every kw. Edge: some of those pixels lie outside
// the row (read as zeros) and only the first np outputs are stored; this keeps the row's ends
// on the 4-pixel loop instead of one pixel at a time.
template <typename T, int K, int S, bool Edge>
void pixels_shared(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  using V = Vectorized<T>;
  constexpr int P = 3 * S + K;
  pf.next();
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph, col0 = ow0 * S - a.pw;
  const V b = V::loadu(a.bias + c, cnt);
  V acc[4] = {b, b, b, b};
  for (int64_t kh = 0; kh < K; ++kh) {
    const int64_t ih = ih0 + kh * a.dh;
    if (ih < 0 || ih >= a.SH) continue;
    const T* xr = a.src + (ih * a.SW + col0) * C + c;
    V px[P];
#pragma GCC unroll 16
    for (int i = 0; i < P; ++i) {
      if (Edge && (col0 + i < 0 || col0 + i >= a.SW)) {
        px[i] = V(T(0));
      } else {
        px[i] = V::loadu(xr + i * C, cnt);
      }
    }
#pragma GCC unroll 8
    for (int kw = 0; kw < K; ++kw) {
      const V wv = V::loadu(a.w + (kh * K + kw) * C + c, cnt);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[j] = at::vec::fmadd(wv, px[j * S + kw], acc[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    if (!Edge || j < np) acc[j].store(a.dst + (ow0 + j) * C + c, cnt);
  }
}

// Blocks of 4 pixels over [ow0, ow0 + np) (np a multiple of 4) with every tap inside: the
// shared-pixel loop with the K*K weight vectors of channel vector c loaded once for the row
// (registers for K = 3).
template <typename T, int K, int S>
void blocks_shared(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  using V = Vectorized<T>;
  constexpr int P = 3 * S + K;
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph;
  V wv[K * K];
#pragma GCC unroll 49
  for (int k = 0; k < K * K; ++k) wv[k] = V::loadu(a.w + k * C + c, cnt);
  const V b = V::loadu(a.bias + c, cnt);
  for (int64_t o = ow0; o < ow0 + np; o += 4) {
    pf.next();
    V acc[4] = {b, b, b, b};
#pragma GCC unroll 7
    for (int kh = 0; kh < K; ++kh) {
      const int64_t ih = ih0 + kh * a.dh;
      if (ih < 0 || ih >= a.SH) continue;
      const T* xr = a.src + (ih * a.SW + o * S - a.pw) * C + c;
      V px[P];
#pragma GCC unroll 16
      for (int i = 0; i < P; ++i) px[i] = V::loadu(xr + i * C, cnt);
#pragma GCC unroll 8
      for (int kw = 0; kw < K; ++kw) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[j] = at::vec::fmadd(wv[kh * K + kw], px[j * S + kw], acc[j]);
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[j].store(a.dst + (o + j) * C + c, cnt);
  }
}

// Blocks of 8 pixels over [ow0, ow0 + np) (np a multiple of 4) with every tap inside: 8
// independent accumulator chains per channel vector where the 4-pixel loop's 4 chains (one FMA
// per 4-cycle latency at best) are the likely limit. Per kernel row the row's K weight vectors
// sit in registers (all K*K for the whole call where they fit beside the accumulators: K = 3)
// and the 7*S + K input pixels stream through one register, each feeding every output that
// reads it: 7*S + 2K loads per 8K FMAs. A last block of 4 takes the 4-pixel loop. Full: cnt is
// a whole vector, so the loads and stores skip the count test.
template <typename T, int K, int S, bool Full>
void blocks8(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  using V = Vectorized<T>;
  constexpr int R = 8, P = (R - 1) * S + K;
  constexpr bool hoist = K * K + R + 1 <= 30;  // weights + accumulators + a pixel, of 32
  const auto load = [cnt](const T* p) { return Full ? V::loadu(p) : V::loadu(p, cnt); };
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph, end = ow0 + np;
  V wall[hoist ? K * K : 1];
  if constexpr (hoist) {
#pragma GCC unroll 9
    for (int k = 0; k < K * K; ++k) wall[k] = load(a.w + k * C + c);
  }
  const V b = load(a.bias + c);
  int64_t o = ow0;
  for (; o + R <= end; o += R) {
    pf.next(2);
    V acc[R];
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) acc[j] = b;
#pragma GCC unroll 7
    for (int kh = 0; kh < K; ++kh) {
      const int64_t ih = ih0 + kh * a.dh;
      if (ih < 0 || ih >= a.SH) continue;
      const T* xr = a.src + (ih * a.SW + o * S - a.pw) * C + c;
      V wrow[K];
#pragma GCC unroll 7
      for (int kw = 0; kw < K; ++kw) wrow[kw] = hoist ? wall[kh * K + kw] : load(a.w + (kh * K + kw) * C + c);
#pragma GCC unroll 24
      for (int i = 0; i < P; ++i) {
        const V x = load(xr + i * C);
#pragma GCC unroll 8
        for (int j = 0; j < R; ++j) {
          const int kw = i - j * S;
          if (kw >= 0 && kw < K) acc[j] = at::vec::fmadd(wrow[kw], x, acc[j]);
        }
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) {
      if (Full) {
        acc[j].store(a.dst + (o + j) * C + c);
      } else {
        acc[j].store(a.dst + (o + j) * C + c, cnt);
      }
    }
  }
  if (o < end) blocks_shared<T, K, S>(a, o, end - o, c, cnt, pf);
}

template <typename T, int K, int S>
void blocks8_any(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  if (cnt == Vectorized<T>::size()) return blocks8<T, K, S, true>(a, ow0, np, c, cnt, pf);
  blocks8<T, K, S, false>(a, ow0, np, c, cnt, pf);
}

template <typename T>
void blocks_inside(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
  for (int64_t o = ow0; o < ow0 + np; o += 4) pixels_inside<T>(a, o, 4, c, cnt, pf);
}

// The loops for the pixels whose taps are all inside the row (inside) and for the row's ends
// (edge), as a type so that row_forward calls them directly (inlined): a 28-pixel row of 15
// channel vectors makes 45 calls, and through function pointers they cost ~4% of a 5x5 row.
// edge_blocks: the edge loop computes 4 pixels per call whatever it stores (the shared-pixel
// loop), so the row is tiled in blocks of 4 from its first pixel and the edge loop takes only
// the blocks that are not wholly inside: a 28-pixel 5x5 row computes 28 outputs, not 2 + 24 + 2
// padded to 4 + 24 + 4.
//
// Shared: 8-pixel blocks at every K. In session 7's A/B (1 thread, CPU time, 10th percentile of
// 150 calls against the 4-pixel loop) 5x5 (EfficientNet) gained ~6% once the row's ends were
// tiled from its first pixel, 7x7 and 3x3 stride 2 kept their session-4 gains (~10% / ~5%), 3x3
// stride 1 was level or faster; 16-pixel blocks measured no better.
template <typename T, int K, int S>
struct SharedLoops {
  static constexpr bool edge_blocks = true;
  static void inside(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
    blocks8_any<T, K, S>(a, ow0, np, c, cnt, pf);
  }
  static void edge(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
    pixels_shared<T, K, S, true>(a, ow0, np, c, cnt, pf);
  }
};

// Any geometry: 4 pixels at a time inside, one at a time at the ends.
template <typename T>
struct GenericLoops {
  static constexpr bool edge_blocks = false;
  static void inside(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
    blocks_inside<T>(a, ow0, np, c, cnt, pf);
  }
  static void edge(const RowArgs<T>& a, int64_t ow0, int64_t np, int64_t c, int64_t cnt, Prefetch& pf) {
    pixels_edge<T>(a, ow0, np, c, cnt, pf);
  }
};

// One channel vector at a time across the whole row, so the input rows' slice of that vector
// (KH rows x SW pixels x one vector) stays in L1 while every tap reuses it.
// Rows [lo, hi) of src that output row `row` reads (clipped to the source).
struct RowSpan {
  int64_t lo, hi;
};
template <typename T>
RowSpan source_rows(const RowArgs<T>& a, int64_t row) {
  const int64_t top = row * a.sh - a.ph;
  return {std::max<int64_t>(0, top), std::min(a.SH, top + (a.KH - 1) * a.dh + 1)};
}

// What to prefetch for the task after this one (RowArgs::next_src), in `steps` steps: its
// source rows that this task does not read (the rows of a forward-direction task are
// contiguous) and its dst row.
template <typename T>
Prefetch next_task(const RowArgs<T>& a, int64_t steps,
                   RowSpan (*rows)(const RowArgs<T>&, int64_t) = source_rows<T>) {
  Prefetch pf;
  pf.steps = std::max<int64_t>(1, steps);
  if (a.next_src == nullptr) return pf;
  RowSpan r = rows(a, a.next_row);
  if (a.next_src == a.src) r.lo = std::max(r.lo, rows(a, a.row).hi);
  const int64_t row_bytes = a.SW * a.C * int64_t(sizeof(T));
  if (r.hi > r.lo) {
    pf.in = reinterpret_cast<const char*>(a.next_src + r.lo * a.SW * a.C);
    pf.in_lines = ((r.hi - r.lo) * row_bytes + 63) / 64;
  }
  pf.out = reinterpret_cast<const char*>(a.next_dst);
  pf.out_lines = (a.DW * a.C * int64_t(sizeof(T)) + 63) / 64;
  return pf;
}

template <typename T, typename Loops>
void row_forward_with(const RowArgs<T>& a) {
  constexpr int64_t n = Vectorized<T>::size();
  // Pixels [lo, hi) have every tap inside the row: the inside loop takes [begin, blocks_end), the
  // edge loop the rest, in calls of up to 4 pixels.
  // (pw is negative for the data grad's crop: then every pixel starts inside.)
  const int64_t lo = a.pw <= 0 ? 0 : std::min(a.DW, (a.pw + a.sw - 1) / a.sw);
  const int64_t reach = a.SW - 1 + a.pw - (a.KW - 1) * a.dw;  // ow*sw must not exceed it
  const int64_t hi = std::max(lo, std::min(a.DW, reach < 0 ? 0 : reach / a.sw + 1));
  const int64_t begin = Loops::edge_blocks ? std::min(hi, (lo + 3) / 4 * 4) : lo;
  const int64_t blocks_end = begin + (hi - begin) / 4 * 4;
  // One prefetch step per call of the edge loop and per 4 pixels of the inside loop.
  const int64_t per_pass = (begin + 3) / 4 + (blocks_end - begin) / 4 + (a.DW - blocks_end + 3) / 4;
  Prefetch pf = next_task(a, per_pass * ((a.C + n - 1) / n));
  for (int64_t c = 0; c < a.C; c += n) {
    const int64_t cnt = std::min<int64_t>(n, a.C - c);
    for (int64_t ow0 = 0; ow0 < begin; ow0 += 4) Loops::edge(a, ow0, std::min<int64_t>(4, begin - ow0), c, cnt, pf);
    Loops::inside(a, begin, blocks_end - begin, c, cnt, pf);
    for (int64_t ow0 = blocks_end; ow0 < a.DW; ow0 += 4) {
      Loops::edge(a, ow0, std::min<int64_t>(4, a.DW - ow0), c, cnt, pf);
    }
  }
}

template <typename T, int K>
void row_forward_k(const RowArgs<T>& a) {
  if (a.sw == 1) return row_forward_with<T, SharedLoops<T, K, 1>>(a);
  if (a.sw == 2) return row_forward_with<T, SharedLoops<T, K, 2>>(a);
  row_forward_with<T, GenericLoops<T>>(a);
}

template <typename T>
void row_forward(const RowArgs<T>& a) {
  if (a.KH == a.KW && a.dw == 1) {
    if (a.KH == 3) return row_forward_k<T, 3>(a);
    if (a.KH == 5) return row_forward_k<T, 5>(a);
    if (a.KH == 7) return row_forward_k<T, 7>(a);
  }
  row_forward_with<T, GenericLoops<T>>(a);
}

// Channels-last data grad of one input row (any stride), for filters of more than kMaxTaps taps:
// per channel vector and input pixel, gather the taps whose output position is integral and
// inside, accumulating in a register.
template <typename T>
void row_data_grad_gather(const RowArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  const int64_t C = a.C;
  for (int64_t c = 0; c < C; c += n) {
    const int64_t cnt = std::min<int64_t>(n, C - c);
    for (int64_t iw = 0; iw < a.DW; ++iw) {
      V acc = V::loadu(a.bias + c, cnt);
      for (int64_t kh = 0; kh < a.KH; ++kh) {
        const int64_t t = a.row + a.ph - kh * a.dh;
        if (t < 0 || t % a.sh != 0 || t / a.sh >= a.SH) continue;
        const T* gr = a.src + t / a.sh * a.SW * C + c;
        for (int64_t kw = 0; kw < a.KW; ++kw) {
          const int64_t u = iw + a.pw - kw * a.dw;
          if (u < 0 || u % a.sw != 0 || u / a.sw >= a.SW) continue;
          acc = at::vec::fmadd(V::loadu(a.w + (kh * a.KW + kw) * C + c, cnt),
                               V::loadu(gr + u / a.sw * C, cnt), acc);
        }
      }
      acc.store(a.dst + iw * C + c, cnt);
    }
  }
}

constexpr int kMaxTaps = 64;

// Channels-last data grad of one input row at stride > 1, split into column phases: the input
// pixels iw = f + i*sw of phase f all read the same taps (kh, kw), tap j at grad_output pixel
// i + q[j]. So the tap list is built once per phase (no divisions in the pixel loop), and where
// every tap is inside, 4 pixels of the phase share each weight vector load.
// Rows [lo, hi) of grad_output (src) that input row `row` of the data grad reads.
template <typename T>
RowSpan data_grad_rows(const RowArgs<T>& a, int64_t row) {
  const int64_t top = row + a.ph - (a.KH - 1) * a.dh;  // oh*sh >= top
  const int64_t lo = top <= 0 ? 0 : (top + a.sh - 1) / a.sh;
  return {lo, std::max(lo, std::min(a.SH, (row + a.ph) / a.sh + 1))};
}

template <typename T>
void row_data_grad(const RowArgs<T>& a) {
  if (a.KH * a.KW > kMaxTaps) return row_data_grad_gather(a);
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  const int64_t C = a.C;
  // One prefetch step per 4 pixels of a phase (and per pixel at the phase's ends).
  Prefetch pf = next_task(a, ((a.DW + a.sw - 1) / a.sw / 4 + 2) * a.sw * ((C + n - 1) / n),
                          data_grad_rows<T>);
  for (int64_t f = 0; f < std::min(a.sw, a.DW); ++f) {
    int64_t w_off[kMaxTaps], g_off[kMaxTaps], q[kMaxTaps];
    int taps = 0;
    const int64_t ni = (a.DW - f + a.sw - 1) / a.sw;  // pixels of phase f
    int64_t ilo = 0, ihi = ni;                          // where every tap is inside
    for (int64_t kh = 0; kh < a.KH; ++kh) {
      const int64_t t = a.row + a.ph - kh * a.dh;
      if (t < 0 || t % a.sh != 0 || t / a.sh >= a.SH) continue;
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        const int64_t u = f + a.pw - kw * a.dw;  // grad_output column times sw, at i = 0
        if ((u % a.sw + a.sw) % a.sw != 0) continue;
        q[taps] = (u - (u % a.sw + a.sw) % a.sw) / a.sw;  // exact: u is a multiple of sw
        w_off[taps] = (kh * a.KW + kw) * C;
        g_off[taps] = (t / a.sh * a.SW + q[taps]) * C;
        ilo = std::max(ilo, -q[taps]);
        ihi = std::min(ihi, a.SW - q[taps]);
        ++taps;
      }
    }
    ihi = std::max(ilo, ihi);
    const int64_t blocks_end = ilo + (ihi - ilo) / 4 * 4;
    for (int64_t c = 0; c < C; c += n) {
      const int64_t cnt = std::min<int64_t>(n, C - c);
      const V b = V::loadu(a.bias + c, cnt);
      auto single = [&](int64_t i) {
        pf.next();
        V acc = b;
        for (int j = 0; j < taps; ++j) {
          if (i + q[j] < 0 || i + q[j] >= a.SW) continue;
          acc = at::vec::fmadd(V::loadu(a.w + w_off[j] + c, cnt),
                               V::loadu(a.src + g_off[j] + i * C + c, cnt), acc);
        }
        acc.store(a.dst + (f + i * a.sw) * C + c, cnt);
      };
      for (int64_t i = 0; i < std::min(ilo, ni); ++i) single(i);
      for (int64_t i = ilo; i < blocks_end; i += 4) {
        pf.next();
        V acc[4] = {b, b, b, b};
        for (int j = 0; j < taps; ++j) {
          const V wv = V::loadu(a.w + w_off[j] + c, cnt);
          const T* g = a.src + g_off[j] + i * C + c;
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) acc[k] = at::vec::fmadd(wv, V::loadu(g + k * C, cnt), acc[k]);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) acc[k].store(a.dst + (f + (i + k) * a.sw) * C + c, cnt);
      }
      for (int64_t i = std::max(ilo, blocks_end); i < ni; ++i) single(i);
    }
  }
}

// Output positions o in [lo, hi) of a row of `out` whose input position o*s + off lies in [0, n).
struct Span {
  int64_t lo, hi;
};
Span inside(int64_t out, int64_t n, int64_t s, int64_t off) {
  const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t hi = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  return {lo, std::max(lo, std::min(hi, out))};
}

// Channels-last weight grad of one grad_output row: per channel vector and tap, 4 partial sums
// over the pixels (fixed order), added into acc[k].
template <typename T>
void row_weight_grad_any(const RowArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph;
  Prefetch pf = next_task(a, (C + n - 1) / n * a.KH);
  pf.out_write = false;
  for (int64_t c = 0; c < C; c += n) {
    const int64_t cnt = std::min<int64_t>(n, C - c);
    for (int64_t kh = 0; kh < a.KH; ++kh) {
      const int64_t ih = ih0 + kh * a.dh;
      if (ih < 0 || ih >= a.SH) continue;
      const T* xr = a.src + ih * a.SW * C + c;
      pf.next();
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        const int64_t off = kw * a.dw - a.pw;
        const Span sp = inside(a.DW, a.SW, a.sw, off);
        V s[4] = {V(T(0)), V(T(0)), V(T(0)), V(T(0))};
        int64_t ow = sp.lo;
        for (; ow + 4 <= sp.hi; ow += 4) {
          for (int64_t j = 0; j < 4; ++j) {
            const V g = V::loadu(a.gy + (ow + j) * C + c, cnt);
            s[j] = at::vec::fmadd(g, V::loadu(xr + ((ow + j) * a.sw + off) * C, cnt), s[j]);
          }
        }
        for (; ow < sp.hi; ++ow) {
          const V g = V::loadu(a.gy + ow * C + c, cnt);
          s[0] = at::vec::fmadd(g, V::loadu(xr + (ow * a.sw + off) * C, cnt), s[0]);
        }
        T* acc = a.acc + (kh * a.KW + kw) * C + c;
        (V::loadu(acc, cnt) + ((s[0] + s[1]) + (s[2] + s[3]))).store(acc, cnt);
      }
    }
  }
}

// K x K taps, dilation 1 along W, stride S along W: the K*K tap sums of channel vector c stay
// in registers across the row. The pixels whose taps are all inside go in blocks of 4: each
// grad_output vector is loaded once for all K*K taps and the 3*S + K input pixels of a kernel
// row once for its K taps (0.6 loads per FMA instead of 2); the row's ends one pixel at a time
// over the taps inside. Every tap's sum runs over the pixels in order (deterministic).
template <typename T, int K, int S>
void row_weight_grad_shared(const RowArgs<T>& a) {
  using V = Vectorized<T>;
  constexpr int64_t n = V::size();
  constexpr int P = 3 * S + K;
  const int64_t C = a.C, ih0 = a.row * a.sh - a.ph;
  const int64_t lo = a.pw <= 0 ? 0 : std::min(a.DW, (a.pw + S - 1) / S);
  const int64_t reach = a.SW - 1 + a.pw - (K - 1);
  const int64_t hi = std::max(lo, std::min(a.DW, reach < 0 ? 0 : reach / S + 1));
  const int64_t blocks_end = lo + (hi - lo) / 4 * 4;
  const int64_t per_pass = (blocks_end - lo) / 4 + 1;
  Prefetch pf = next_task(a, (C + n - 1) / n * per_pass);
  pf.out_write = false;
  for (int64_t c = 0; c < C; c += n) {
    const int64_t cnt = std::min<int64_t>(n, C - c);
    V acc[K * K];
#pragma GCC unroll 9
    for (int k = 0; k < K * K; ++k) acc[k] = V(T(0));
    const auto single = [&](int64_t ow) {
      const V g = V::loadu(a.gy + ow * C + c, cnt);
      const int64_t iw0 = ow * S - a.pw;
      for (int kh = 0; kh < K; ++kh) {
        const int64_t ih = ih0 + kh * a.dh;
        if (ih < 0 || ih >= a.SH) continue;
        for (int kw = 0; kw < K; ++kw) {
          if (iw0 + kw < 0 || iw0 + kw >= a.SW) continue;
          const V x = V::loadu(a.src + (ih * a.SW + iw0 + kw) * C + c, cnt);
          acc[kh * K + kw] = at::vec::fmadd(g, x, acc[kh * K + kw]);
        }
      }
    };
    pf.next();
    for (int64_t ow = 0; ow < lo; ++ow) single(ow);
    for (int64_t o = lo; o < blocks_end; o += 4) {
      pf.next();
      V g[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) g[j] = V::loadu(a.gy + (o + j) * C + c, cnt);
#pragma GCC unroll 3
      for (int kh = 0; kh < K; ++kh) {
        const int64_t ih = ih0 + kh * a.dh;
        if (ih < 0 || ih >= a.SH) continue;
        const T* xr = a.src + (ih * a.SW + o * S - a.pw) * C + c;
        V px[P];
#pragma GCC unroll 16
        for (int i = 0; i < P; ++i) px[i] = V::loadu(xr + i * C, cnt);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 3
          for (int kw = 0; kw < K; ++kw) {
            acc[kh * K + kw] = at::vec::fmadd(g[j], px[j * S + kw], acc[kh * K + kw]);
          }
        }
      }
    }
    for (int64_t ow = blocks_end; ow < a.DW; ++ow) single(ow);
#pragma GCC unroll 9
    for (int k = 0; k < K * K; ++k) {
      T* dst = a.acc + k * C + c;
      (V::loadu(dst, cnt) + acc[k]).store(dst, cnt);
    }
  }
}

template <typename T>
void row_weight_grad(const RowArgs<T>& a) {
  if (a.KH == 3 && a.KW == 3 && a.dw == 1) {
    if (a.sw == 1) return row_weight_grad_shared<T, 3, 1>(a);
    if (a.sw == 2) return row_weight_grad_shared<T, 3, 2>(a);
  }
  row_weight_grad_any(a);
}

template <typename T>
constexpr Kernels<T> kTable{plane_dispatch<T>, plane_weight_grad_dispatch<T>, row_forward<T>,
                            row_data_grad<T>, row_weight_grad<T>};

}  // namespace

const Kernels<float>& kernels_float() { return kTable<float>; }
const Kernels<double>& kernels_double() { return kTable<double>; }

}  // namespace convx::cpu::depthwise_isa::CPU_CAPABILITY
