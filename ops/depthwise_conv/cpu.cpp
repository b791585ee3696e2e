// Depthwise convolution on the CPU: direct kernels, no im2col, for every spatial rank.
//
// 1-D and 2-D (depth 1) go to the vectorised loops of cpu_kernels.cpp, compiled per ISA and
// picked at run time; this file prepares their operands in baseline code:
//  - NCHW: one (sample, channel) plane per task, copied into a zero-padded buffer (split into
//    column phases at stride > 1) so the inner loops are bounds-free vector FMAs along the row.
//    The data grad spreads grad_output into such a buffer (zeros between samples at stride > 1)
//    and runs the same loop with the filter rotated 180 degrees.
//  - channels-last, multiplier 1: one row of pixels per task, vectorised across the channels.
//  Half/bfloat16 run on float copies of the operands (float accumulation).
// 3-D, and channels-last with a channel multiplier > 1, keep the plain loops below (each layout
// in its natural order; compiled for the baseline ISA).
// Arithmetic in the opmath type (float for half/bfloat16). The weight-grad reduces in a fixed
// order (per output channel, or fixed blocks summed in sequence), so results do not depend on
// the thread count.
#include "ops/depthwise_conv/depthwise_conv.h"

#include "ops/depthwise_conv/cpu_kernels.h"
#include "ops/common/huge_pages.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace convx::cpu {
namespace {

// Output positions o in [lo, hi) whose input position o*s - p + k*d lies in [0, n).
struct Range {
  int64_t lo, hi;
};
Range valid(int64_t out, int64_t n, int64_t s, int64_t off) {
  // off = k*d - p; need 0 <= o*s + off < n
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  return {lo, std::max(lo, std::min(hi, out))};
}

struct Taps {
  const Geometry& g;
  int64_t K() const { return g.kernel_numel(); }
  // Tap k's offsets (input = output*stride + off) per spatial dim.
  std::array<int64_t, 3> off(int64_t k) const {
    const int64_t kd = k / (g.kernel[1] * g.kernel[2]), kh = (k / g.kernel[2]) % g.kernel[1],
                  kw = k % g.kernel[2];
    return {kd * g.dilation[0] - g.padding[0], kh * g.dilation[1] - g.padding[1],
            kw * g.dilation[2] - g.padding[2]};
  }
};

// Weight as opmath [C_out, K] (NC layout) or [K, C_out] (channels-last layout).
template <typename acc_t>
std::vector<acc_t> weights(const Tensor& w, bool taps_outer) {
  Tensor t = w.reshape({w.size(0), -1}).to(c10::CppTypeToScalarType<acc_t>::value);
  if (taps_outer) t = t.t();
  t = t.contiguous();
  return std::vector<acc_t>(t.const_data_ptr<acc_t>(), t.const_data_ptr<acc_t>() + t.numel());
}

template <typename acc_t>
std::vector<acc_t> bias_values(const std::optional<Tensor>& bias, int64_t n) {
  if (!bias.has_value() || !bias->defined()) return std::vector<acc_t>(n, acc_t(0));
  Tensor t = bias->to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
  return std::vector<acc_t>(t.const_data_ptr<acc_t>(), t.const_data_ptr<acc_t>() + n);
}

// ---------------------------------------------------------------- forward
template <typename T>
void forward_nc(const T* x, T* y, const Geometry& g,
                const std::vector<at::opmath_type<T>>& w, const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(OL);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / Cout, oc = p % Cout, c = oc / m;
      const T* xp = x + (n * C + c) * IL;
      std::fill(acc.begin(), acc.end(), b[oc]);
      for (int64_t k = 0; k < K; ++k) {
        const acc_t wv = w[oc * K + k];
        const auto o = taps.off(k);
        const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                    rw = valid(OW, W, g.stride[2], o[2]);
        const int64_t sw = g.stride[2];
        for (int64_t od = rd.lo; od < rd.hi; ++od) {
          for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
            const T* xr = xp + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
            acc_t* ar = acc.data() + (od * OH + oh) * OW;
            if (sw == 1) {
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(xr[ow]);
            } else {
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(xr[ow * sw]);
            }
          }
        }
      }
      T* yp = y + p * OL;
      for (int64_t i = 0; i < OL; ++i) yp[i] = T(acc[i]);
    }
  });
}

template <typename T>
void forward_cl(const T* x, T* y, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * OD * OH, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(OW * Cout);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ++ow) std::copy(b.begin(), b.end(), acc.begin() + ow * Cout);
      for (int64_t k = 0; k < K; ++k) {
        const auto o = taps.off(k);
        const int64_t id = od * g.stride[0] + o[0], ih = oh * g.stride[1] + o[1];
        if (id < 0 || id >= D || ih < 0 || ih >= H) continue;
        const Range rw = valid(OW, W, g.stride[2], o[2]);
        const acc_t* wk = w.data() + k * Cout;
        for (int64_t ow = rw.lo; ow < rw.hi; ++ow) {
          const T* px = x + (((n * D + id) * H + ih) * W + ow * g.stride[2] + o[2]) * C;
          acc_t* a = acc.data() + ow * Cout;
          if (m == 1) {
            for (int64_t c = 0; c < C; ++c) a[c] += wk[c] * acc_t(px[c]);
          } else {
            for (int64_t oc = 0; oc < Cout; ++oc) a[oc] += wk[oc] * acc_t(px[oc / m]);
          }
        }
      }
      T* yr = y + r * OW * Cout;
      for (int64_t i = 0; i < OW * Cout; ++i) yr[i] = T(acc[i]);
    }
  });
}

// ---------------------------------------------------------------- data grad
// gx[n, c] = sum_j sum_k w[c*m+j, k] * gy[n, c*m+j] scattered back through tap k.
template <typename T>
void data_grad_nc(const T* gy, T* gx, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                  const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * C, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(IL);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / C, c = p % C;
      std::fill(acc.begin(), acc.end(), b[c]);
      for (int64_t j = 0; j < m; ++j) {
        const int64_t oc = c * m + j;
        const T* gp = gy + (n * Cout + oc) * OL;
        for (int64_t k = 0; k < K; ++k) {
          const acc_t wv = w[oc * K + k];
          const auto o = taps.off(k);
          const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                      rw = valid(OW, W, g.stride[2], o[2]);
          const int64_t sw = g.stride[2];
          for (int64_t od = rd.lo; od < rd.hi; ++od) {
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              acc_t* ar = acc.data() + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
              const T* gr = gp + (od * OH + oh) * OW;
              if (sw == 1) {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(gr[ow]);
              } else {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow * sw] += wv * acc_t(gr[ow]);
              }
            }
          }
        }
      }
      T* xp = gx + p * IL;
      for (int64_t i = 0; i < IL; ++i) xp[i] = T(acc[i]);
    }
  });
}

// Channels-last: gather form, one input row per task (no two tasks write the same element).
template <typename T>
void data_grad_cl(const T* gy, T* gx, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                  const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  // Output index along one dim that input index i reads through offset off, or -1.
  auto src = [](int64_t i, int64_t off, int64_t s, int64_t n) -> int64_t {
    const int64_t t = i - off;
    if (t < 0 || t % s != 0 || t / s >= n) return -1;
    return t / s;
  };
  at::parallel_for(0, g.batch * D * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(W * C);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (D * H), id = (r / H) % D, ih = r % H;
      for (int64_t iw = 0; iw < W; ++iw) std::copy(b.begin(), b.end(), acc.begin() + iw * C);
      for (int64_t k = 0; k < K; ++k) {
        const auto o = taps.off(k);
        const int64_t od = src(id, o[0], g.stride[0], OD), oh = src(ih, o[1], g.stride[1], OH);
        if (od < 0 || oh < 0) continue;
        const acc_t* wk = w.data() + k * Cout;
        for (int64_t iw = 0; iw < W; ++iw) {
          const int64_t ow = src(iw, o[2], g.stride[2], OW);
          if (ow < 0) continue;
          const T* pg = gy + (((n * OD + od) * OH + oh) * OW + ow) * Cout;
          acc_t* a = acc.data() + iw * C;
          if (m == 1) {
            for (int64_t c = 0; c < C; ++c) a[c] += wk[c] * acc_t(pg[c]);
          } else {
            for (int64_t oc = 0; oc < Cout; ++oc) a[oc / m] += wk[oc] * acc_t(pg[oc]);
          }
        }
      }
      T* xr = gx + r * W * C;
      for (int64_t i = 0; i < W * C; ++i) xr[i] = T(acc[i]);
    }
  });
}

// ---------------------------------------------------------------- weight grad
// One output channel per task; for every sample the taps loop inside, so the two planes they
// re-read stay in cache instead of being fetched from memory once per tap.
template <typename T>
void weight_grad_nc(const T* x, const T* gy, std::vector<at::opmath_type<T>>& gw, const Geometry& g) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> total(K);
    for (int64_t oc = begin; oc < end; ++oc) {
      const int64_t c = oc / m;
      std::fill(total.begin(), total.end(), acc_t(0));
      for (int64_t n = 0; n < g.batch; ++n) {
        const T* xp = x + (n * C + c) * IL;
        const T* gp = gy + (n * Cout + oc) * OL;
        for (int64_t k = 0; k < K; ++k) {
          const auto o = taps.off(k);
          const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                      rw = valid(OW, W, g.stride[2], o[2]);
          const int64_t sw = g.stride[2];
          for (int64_t od = rd.lo; od < rd.hi; ++od) {
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              const T* xr = xp + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
              const T* gr = gp + (od * OH + oh) * OW;
              acc_t s = 0;
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) s += acc_t(gr[ow]) * acc_t(xr[ow * sw]);
              total[k] += s;
            }
          }
        }
      }
      std::copy(total.begin(), total.end(), gw.begin() + oc * K);
    }
  });
}

template <typename T>
void weight_grad_cl(const T* x, const T* gy, std::vector<at::opmath_type<T>>& gw, const Geometry& g) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  // Fixed blocks of output rows, each with its own partial sums, added in block order.
  const int64_t rows = g.batch * OD * OH, blocks = std::min<int64_t>(rows, 64);
  std::vector<acc_t> part(blocks * K * Cout, acc_t(0));
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      acc_t* pk = part.data() + blk * K * Cout;
      for (int64_t r = rows * blk / blocks; r < rows * (blk + 1) / blocks; ++r) {
        const int64_t n = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
        for (int64_t k = 0; k < K; ++k) {
          const auto o = taps.off(k);
          const int64_t id = od * g.stride[0] + o[0], ih = oh * g.stride[1] + o[1];
          if (id < 0 || id >= D || ih < 0 || ih >= H) continue;
          const Range rw = valid(OW, W, g.stride[2], o[2]);
          acc_t* a = pk + k * Cout;
          for (int64_t ow = rw.lo; ow < rw.hi; ++ow) {
            const T* px = x + (((n * D + id) * H + ih) * W + ow * g.stride[2] + o[2]) * C;
            const T* pg = gy + (r * OW + ow) * Cout;
            if (m == 1) {
              for (int64_t c = 0; c < C; ++c) a[c] += acc_t(pg[c]) * acc_t(px[c]);
            } else {
              for (int64_t oc = 0; oc < Cout; ++oc) a[oc] += acc_t(pg[oc]) * acc_t(px[oc / m]);
            }
          }
        }
      }
    }
  });
  // part is [blocks, K, Cout]; gw is [Cout, K].
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const acc_t* pk = part.data() + blk * K * Cout;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t oc = 0; oc < Cout; ++oc) gw[oc * K + k] += pk[k * Cout + oc];
    }
  }
}

// ---------------------------------------------------------------- vectorised 1-D / 2-D path
namespace isa = depthwise_isa;

// The vectorised loops cover depth 1 (every 1-D and 2-D call).
bool planar(const Geometry& g) {
  return g.input[0] == 1 && g.output[0] == 1 && g.kernel[0] == 1 && g.padding[0] == 0;
}

// The loops for the ISA ATen runs on (at::get_cpu_capability honours ATEN_CPU_CAPABILITY).
template <typename T>
const isa::Kernels<T>& kernels() {
  static const isa::Kernels<T>& k = []() -> const isa::Kernels<T>& {
    const std::string cap = at::get_cpu_capability();
    if constexpr (std::is_same_v<T, float>) {
#ifdef CONVX_DEPTHWISE_X86_ISAS
      if (cap == "AVX512") return isa::AVX512::kernels_float();
      if (cap == "AVX2") return isa::AVX2::kernels_float();
#endif
      return isa::DEFAULT::kernels_float();
    } else {
#ifdef CONVX_DEPTHWISE_X86_ISAS
      if (cap == "AVX512") return isa::AVX512::kernels_double();
      if (cap == "AVX2") return isa::AVX2::kernels_double();
#endif
      return isa::DEFAULT::kernels_double();
    }
  }();
  return k;
}

at::ScalarType acc_type(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// t in the opmath dtype (a float copy for half/bfloat16) and dense in the layout.
Tensor acc_operand(const Tensor& t, bool cl) {
  return to_layout(t.to(acc_type(t.scalar_type())), cl);
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// A zero-padded plane buffer [phases][rows][cols] (see cpu_kernels.h).
struct PaddedPlane {
  int64_t phases, rows, cols;
  int64_t numel() const { return phases * rows * cols; }
  int64_t phase_offset(int64_t j) const { return j % phases * rows * cols + j / phases; }
};

// The buffer a forward-direction plane loop reads: every row of every output row tile and
// every column of whole vectors exists.
PaddedPlane forward_buffer(const Geometry& g) {
  const int64_t sw = g.stride[2];
  return {sw, (round_up(g.output[1], isa::kRowTile) - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1,
          round_up(g.output[2], isa::kMaxLanes) + (g.kernel[2] - 1) * g.dilation[2] / sw + 1};
}

std::vector<int64_t> tap_columns(const PaddedPlane& p, int64_t KW, int64_t dw) {
  std::vector<int64_t> off(KW);
  for (int64_t kw = 0; kw < KW; ++kw) off[kw] = p.phase_offset(kw * dw);
  return off;
}

// Writes the [SH, SW] plane src into buf at rows r0 + i*rs and padded columns c0 + j*cs (cs is
// 1 when the buffer has phases); positions outside the buffer are dropped, the rest of the
// buffer is left as it is (zeros).
template <typename T>
void place(const T* src, int64_t SH, int64_t SW, T* buf, const PaddedPlane& p, int64_t r0,
           int64_t rs, int64_t c0, int64_t cs) {
  for (int64_t i = 0; i < SH; ++i) {
    const int64_t r = r0 + i * rs;
    if (r < 0 || r >= p.rows) continue;
    const T* s = src + i * SW;
    if (cs == 1 && p.phases == 1) {
      const int64_t lo = std::max<int64_t>(0, -c0), hi = std::min<int64_t>(SW, p.cols - c0);
      if (lo < hi) std::copy(s + lo, s + hi, buf + r * p.cols + c0 + lo);
      continue;
    }
    if (p.phases == 1) {
      for (int64_t j = 0, col = c0; j < SW; ++j, col += cs) {
        if (col >= 0 && col < p.cols) buf[r * p.cols + col] = s[j];
      }
      continue;
    }
    // Phase f holds padded columns f, f + phases, ...: source columns j0, j0 + phases, ...
    // (c0 >= 0 here: phases come with the forward's non-negative padding).
    for (int64_t f = 0; f < p.phases; ++f) {
      const int64_t j0 = ((f - c0) % p.phases + p.phases) % p.phases;
      T* d = buf + (f * p.rows + r) * p.cols;
      for (int64_t j = j0, q = (c0 + j0) / p.phases; j < SW && q < p.cols; j += p.phases, ++q) {
        d[q] = s[j];
      }
    }
  }
}

// w [C_out, K] -> the same taps rotated by 180 degrees.
template <typename T>
std::vector<T> rotated(const std::vector<T>& w, int64_t K) {
  std::vector<T> r(w.size());
  for (size_t i = 0; i < w.size(); i += K) std::reverse_copy(w.begin() + i, w.begin() + i + K, r.begin() + i);
  return r;
}

template <typename T>
void forward_planar(const T* x, T* y, const Geometry& g, const std::vector<T>& w, const std::vector<T>& b) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C;
  const int64_t H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  const int64_t KH = g.kernel[1], KW = g.kernel[2];
  const PaddedPlane pp = forward_buffer(g);
  const auto col_off = tap_columns(pp, KW, g.dilation[2]);
  at::parallel_for(0, g.batch * Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buf(pp.numel(), T(0));
    int64_t placed = -1;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / Cout, oc = p % Cout, plane = n * C + oc / m;
      if (plane != placed) {
        place(x + plane * H * W, H, W, buf.data(), pp, g.padding[1], 1, g.padding[2], 1);
        placed = plane;
      }
      kern.plane({buf.data(), pp.cols, g.stride[1], g.dilation[1], col_off.data(),
                  w.data() + oc * KH * KW, KH, KW, OH, OW, y + p * OH * OW, OW, b[oc], false});
    }
  });
}

// gx[ih][iw] = sum w[kh][kw] * Q[ih + (KH-1-kh)*dh][iw + (KW-1-kw)*dw], where Q holds
// gy[oh][ow] at (oh*sh + (KH-1)*dh - ph, ow*sw + (KW-1)*dw - pw) and zeros elsewhere.
template <typename T>
void data_grad_planar(const T* gy, T* gx, const Geometry& g, const std::vector<T>& w, const std::vector<T>& b) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C;
  const int64_t H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  const int64_t KH = g.kernel[1], KW = g.kernel[2], dh = g.dilation[1], dw = g.dilation[2];
  const PaddedPlane pq{1, round_up(H, isa::kRowTile) + (KH - 1) * dh, round_up(W, isa::kMaxLanes) + (KW - 1) * dw};
  const auto col_off = tap_columns(pq, KW, dw);
  const auto wr = rotated(w, KH * KW);
  at::parallel_for(0, g.batch * C, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buf(pq.numel(), T(0));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / C, c = p % C;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t oc = c * m + j;
        place(gy + (n * Cout + oc) * OH * OW, OH, OW, buf.data(), pq, (KH - 1) * dh - g.padding[1],
              g.stride[1], (KW - 1) * dw - g.padding[2], g.stride[2]);
        kern.plane({buf.data(), pq.cols, 1, dh, col_off.data(), wr.data() + oc * KH * KW,
                    KH, KW, H, W, gx + p * H * W, W, b[c], j > 0});
      }
    }
  });
}

// One output channel per task, samples in order: deterministic.
template <typename T>
void weight_grad_planar(const T* x, const T* gy, T* gw, const Geometry& g) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C;
  const int64_t H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  const int64_t KH = g.kernel[1], KW = g.kernel[2];
  const PaddedPlane pp = forward_buffer(g);
  const auto col_off = tap_columns(pp, KW, g.dilation[2]);
  at::parallel_for(0, Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buf(pp.numel(), T(0));
    for (int64_t oc = begin; oc < end; ++oc) {
      std::fill(gw + oc * KH * KW, gw + (oc + 1) * KH * KW, T(0));
      for (int64_t n = 0; n < g.batch; ++n) {
        place(x + (n * C + oc / m) * H * W, H, W, buf.data(), pp, g.padding[1], 1, g.padding[2], 1);
        kern.plane_weight_grad({buf.data(), g.stride[1] * pp.cols, g.dilation[1] * pp.cols,
                                col_off.data(), gy + (n * Cout + oc) * OH * OW, KH, KW, OH, OW,
                                gw + oc * KH * KW});
      }
    }
  });
}

// Channels-last, multiplier 1. w is [K, C] (taps outer).
template <typename T>
isa::RowArgs<T> row_args(const Geometry& g, const T* w, const T* bias) {
  return {nullptr, 0, 0, g.in_channels, nullptr, nullptr, 0, 0, w, bias, nullptr,
          g.kernel[1], g.kernel[2], g.stride[1], g.stride[2], g.padding[1], g.padding[2],
          g.dilation[1], g.dilation[2], nullptr, nullptr, 0};
}

template <typename T>
void forward_rows(const T* x, T* y, const Geometry& g, const std::vector<T>& w, const std::vector<T>& b) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  at::parallel_for(0, g.batch * OH, 1, [&](int64_t begin, int64_t end) {
    auto a = row_args(g, w.data(), b.data());
    a.SH = H, a.SW = W, a.DW = OW;
    for (int64_t r = begin; r < end; ++r) {
      a.src = x + r / OH * H * W * C, a.dst = y + r * OW * C, a.row = r % OH;
      const bool more = r + 1 < end;
      a.next_src = more ? x + (r + 1) / OH * H * W * C : nullptr;
      a.next_dst = more ? a.dst + OW * C : nullptr;
      a.next_row = (r + 1) % OH;
      kern.row_forward(a);
    }
  });
}

template <typename T>
void data_grad_rows(const T* gy, T* gx, const Geometry& g, const std::vector<T>& w, const std::vector<T>& b) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  const int64_t KH = g.kernel[1], KW = g.kernel[2];
  // At stride 1 the data grad is a forward over grad_output with the filter rotated by 180
  // degrees and padding (k-1)*d - p (negative: a crop), which keeps 4 pixels in registers.
  const bool unit = g.stride[1] == 1 && g.stride[2] == 1;
  std::vector<T> wr;
  if (unit) {
    wr.resize(w.size());
    for (int64_t k = 0; k < KH * KW; ++k) std::copy_n(w.begin() + k * C, C, wr.begin() + (KH * KW - 1 - k) * C);
  }
  at::parallel_for(0, g.batch * H, 1, [&](int64_t begin, int64_t end) {
    auto a = row_args(g, unit ? wr.data() : w.data(), b.data());
    a.SH = OH, a.SW = OW, a.DW = W;
    if (unit) {
      a.ph = (KH - 1) * g.dilation[1] - g.padding[1];
      a.pw = (KW - 1) * g.dilation[2] - g.padding[2];
    }
    for (int64_t r = begin; r < end; ++r) {
      a.src = gy + r / H * OH * OW * C, a.dst = gx + r * W * C, a.row = r % H;
      const bool more = r + 1 < end;
      a.next_src = more ? gy + (r + 1) / H * OH * OW * C : nullptr;
      a.next_dst = more ? a.dst + W * C : nullptr;
      a.next_row = (r + 1) % H;
      unit ? kern.row_forward(a) : kern.row_data_grad(a);
    }
  });
}

// Fixed blocks of grad_output rows, each with its own partial sums, added in block order.
template <typename T>
void weight_grad_rows(const T* x, const T* gy, T* gw, const Geometry& g) {
  const auto& kern = kernels<T>();
  const int64_t C = g.in_channels, H = g.input[1], W = g.input[2], OH = g.output[1], OW = g.output[2];
  const int64_t K = g.kernel_numel(), rows = g.batch * OH, blocks = std::min<int64_t>(rows, 64);
  std::vector<T> part(blocks * K * C, T(0));
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    auto a = row_args<T>(g, nullptr, nullptr);
    a.SH = H, a.SW = W, a.DW = OW;
    for (int64_t blk = begin; blk < end; ++blk) {
      a.acc = part.data() + blk * K * C;
      for (int64_t r = rows * blk / blocks; r < rows * (blk + 1) / blocks; ++r) {
        a.src = x + r / OH * H * W * C, a.gy = gy + r * OW * C, a.row = r % OH;
        const bool more = r + 1 < rows * end / blocks;
        a.next_src = more ? x + (r + 1) / OH * H * W * C : nullptr;
        a.next_dst = more ? a.gy + OW * C : nullptr;
        a.next_row = (r + 1) % OH;
        kern.row_weight_grad(a);
      }
    }
  });
  // part is [blocks, K, C]; gw is [C, K].
  std::fill(gw, gw + C * K, T(0));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const T* pk = part.data() + blk * K * C;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t c = 0; c < C; ++c) gw[c * K + k] += pk[k * C + c];
    }
  }
}

}  // namespace

void depthwise_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                       const std::optional<Tensor>& bias, const Tensor& output) {
  const Geometry g = geometry(a, input, weight, output);
  const bool cl = is_channels_last(output);
  advise_huge_pages(output);
  if (planar(g) && (!cl || g.out_channels == g.in_channels)) {
    const auto x = acc_operand(input, cl);
    with_output_as(output, acc_type(output.scalar_type()), cl, [&](const Tensor& y) {
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "convx_depthwise_fwd", [&] {
        const auto w = weights<scalar_t>(weight, cl);
        const auto b = bias_values<scalar_t>(bias, g.out_channels);
        if (cl) {
          forward_rows(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
        } else {
          forward_planar(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
        }
      });
    });
    return;
  }
  const auto x = to_layout(input, cl);
  with_output_as(output, output.scalar_type(), cl, [&](const Tensor& y) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_fwd", [&] {
      using acc_t = at::opmath_type<scalar_t>;
      const auto w = weights<acc_t>(weight, cl);
      const auto b = bias_values<acc_t>(bias, g.out_channels);
      if (cl) {
        forward_cl(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
      } else {
        forward_nc(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
      }
    });
  });
}

void depthwise_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                         const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  const bool cl = is_channels_last(grad_input);
  advise_huge_pages(grad_input);
  if (planar(g) && (!cl || g.out_channels == g.in_channels)) {
    const auto gy = acc_operand(grad_output, cl);
    with_output_as(grad_input, acc_type(grad_input.scalar_type()), cl, [&](const Tensor& gx) {
      AT_DISPATCH_FLOATING_TYPES(gy.scalar_type(), "convx_depthwise_dgrad", [&] {
        const auto w = weights<scalar_t>(weight, cl);
        const auto b = bias_values<scalar_t>(bias, g.in_channels);
        if (cl) {
          data_grad_rows(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
        } else {
          data_grad_planar(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
        }
      });
    });
    return;
  }
  const auto gy = to_layout(grad_output, cl);
  with_output_as(grad_input, grad_input.scalar_type(), cl, [&](const Tensor& gx) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gy.scalar_type(), "convx_depthwise_dgrad", [&] {
      using acc_t = at::opmath_type<scalar_t>;
      const auto w = weights<acc_t>(weight, cl);
      const auto b = bias_values<acc_t>(bias, g.in_channels);
      if (cl) {
        data_grad_cl(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
      } else {
        data_grad_nc(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
      }
    });
  });
}

void depthwise_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                           const Tensor& grad_weight) {
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  // The activations' layout decides the loop order here; the weight is tiny.
  const bool cl = is_channels_last(input) || is_channels_last(grad_output);
  if (planar(g) && (!cl || g.out_channels == g.in_channels)) {
    const auto x = acc_operand(input, cl);
    const auto gy = acc_operand(grad_output, cl);
    auto gw = at::empty({g.out_channels, g.kernel_numel()}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "convx_depthwise_wgrad", [&] {
      const scalar_t* xp = x.const_data_ptr<scalar_t>();
      const scalar_t* gp = gy.const_data_ptr<scalar_t>();
      if (cl) {
        weight_grad_rows(xp, gp, gw.mutable_data_ptr<scalar_t>(), g);
      } else {
        weight_grad_planar(xp, gp, gw.mutable_data_ptr<scalar_t>(), g);
      }
    });
    grad_weight.copy_(gw.view(grad_weight.sizes()));
    return;
  }
  const auto x = to_layout(input, cl);
  const auto gy = to_layout(grad_output, cl);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_wgrad", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    std::vector<acc_t> gw(g.out_channels * g.kernel_numel(), acc_t(0));
    if (cl) {
      weight_grad_cl(x.const_data_ptr<scalar_t>(), gy.const_data_ptr<scalar_t>(), gw, g);
    } else {
      weight_grad_nc(x.const_data_ptr<scalar_t>(), gy.const_data_ptr<scalar_t>(), gw, g);
    }
    Tensor t = at::empty({g.out_channels, g.kernel_numel()}, x.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    std::copy(gw.begin(), gw.end(), t.mutable_data_ptr<acc_t>());
    grad_weight.copy_(t.view(grad_weight.sizes()));
  });
}

}  // namespace convx::cpu
