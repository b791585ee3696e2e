// Strided transposed convolution (= the data grad of a strided convolution) on the CPU, by
// output phases, for channels-last outputs with groups 1 and dilation 1.
//
// Output position o (per spatial dim) receives input i through tap k when o = i*s - p + k. With
// r = (o + p) mod s and q = (o + p) div s, the taps are k = r + j*s and the inputs i = q - j
// (j = 0, 1, ...): every output of one phase r reads the same ceil((k - r) / s) taps, so each
// phase is a small stride-1 convolution, i.e. ONE GEMM [pixels of the phase, taps*C_in] x
// [taps*C_in, C_out] whose rows go straight to their output pixels. Unlike GEMM + col2im there
// is no overlapping sum and no [pixels, K*C_out] column buffer: the rows are processed in small
// blocks (one per task), gathered, multiplied and scattered while they are in cache. When the
// kernel equals the stride and there is no padding (UNet's k2 s2) every phase reads exactly the
// input pixel itself, so all phases share one GEMM with the input rows as they are in memory
// and the result is a pixel shuffle.
#include "ops/conv/cpu_phases.h"

#include "ops/conv/cpu_gemm.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

namespace convx::cpu {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One phase along one spatial dim: outputs o = q*s + r - p for q in [q0, q0 + nq), taps
// r, r + s, ... (`taps` of them).
struct Phase1d {
  int64_t r = 0, q0 = 0, nq = 0, taps = 0;
};

Phase1d phase_1d(int64_t r, int64_t k, int64_t s, int64_t p, int64_t out_size) {
  Phase1d ph;
  ph.r = r;
  ph.q0 = -floor_div(r - p, s);  // ceil((p - r) / s)
  ph.nq = std::max<int64_t>(0, floor_div(out_size - 1 + p - r, s) - ph.q0 + 1);
  ph.taps = r < k ? (k - r + s - 1) / s : 0;
  return ph;
}

struct Phase {
  std::array<Phase1d, 3> d;
  int64_t taps() const { return d[0].taps * d[1].taps * d[2].taps; }
  int64_t pixels() const { return d[0].nq * d[1].nq * d[2].nq; }
  // Reads input pixel q itself (one tap, q over exactly the input): its GEMM rows are the input.
  bool identity(const std::array<int64_t, 3>& in_size) const {
    for (int i = 0; i < 3; ++i) {
      if (d[i].taps != 1 || d[i].q0 != 0 || d[i].nq != in_size[i]) return false;
    }
    return true;
  }
};

// Rows of the GEMM per task: the gathered input rows [rows, taps*C_in] and the results
// [rows, C_out] stay in cache (about 2 MB) while they are gathered, multiplied and scattered,
// and the rows are many enough that BLAS's packing of the weight (once per call) stays a few
// percent of the multiply (UNet: 128 rows cost 20% more than 256-512).
int64_t block_rows(int64_t row_floats) {
  return std::clamp<int64_t>((int64_t(1) << 19) / std::max<int64_t>(row_floats, 1), 64, 512);
}

template <typename T>
struct Run {
  const Geometry& g;
  const T* x;     // [B, *out, C_in] channels-last (the transposed input)
  T* y;           // [B, *in, C_out] channels-last (the transposed output)
  const T* bias;  // [C_out] or null
  int64_t Ci, Co;

  // y pixel index of phase pixel (b, q[3]) (inside y: the q ranges are exact).
  int64_t out_pixel(const std::array<Phase1d, 3>& ph, int64_t b, const int64_t* q) const {
    int64_t idx = b;
    for (int i = 0; i < 3; ++i) {
      idx = idx * g.input[i] + q[i] * g.stride[i] + ph[i].r - g.padding[i];
    }
    return idx;
  }

  // Decodes GEMM row m of a phase into (b, q[3]).
  static int64_t decode(const std::array<Phase1d, 3>& ph, int64_t m, int64_t* q) {
    for (int i = 2; i >= 0; --i) {
      q[i] = ph[i].q0 + m % ph[i].nq;
      m /= ph[i].nq;
    }
    return m;
  }

  void store(T* dst, const T* src) const {
    if (bias) {
      for (int64_t c = 0; c < Co; ++c) dst[c] = src[c] + bias[c];
    } else {
      std::memcpy(dst, src, Co * sizeof(T));
    }
  }

  void fill(T* dst) const {
    if (bias) {
      std::memcpy(dst, bias, Co * sizeof(T));
    } else {
      std::fill(dst, dst + Co, T(0));
    }
  }

  // The input pixel that GEMM row m of the phase reads through tap t, or null (outside).
  const T* in_pixel(const Phase& ph, int64_t m, int64_t t) const {
    const auto& d = ph.d;
    int64_t q[3];
    int64_t idx = decode(d, m, q);
    const int64_t j[3] = {t / (d[1].taps * d[2].taps), t / d[2].taps % d[1].taps, t % d[2].taps};
    for (int i = 0; i < 3; ++i) {
      const int64_t ii = q[i] - j[i];
      if (ii < 0 || ii >= g.output[i]) return nullptr;
      idx = idx * g.output[i] + ii;
    }
    return x + idx * Ci;
  }

  T* out_row(const Phase& ph, int64_t m) const {
    int64_t q[3];
    const int64_t b = decode(ph.d, m, q);
    return y + out_pixel(ph.d, b, q) * Co;
  }

  // Gathers rows [m0, m0 + n) of the phase's im2col matrix [pixels, taps*C_in] into a.
  void gather(const Phase& ph, int64_t m0, int64_t n, T* a) const {
    const int64_t taps = ph.taps();
    for (int64_t m = m0; m < m0 + n; ++m) {
      T* row = a + (m - m0) * taps * Ci;
      for (int64_t t = 0; t < taps; ++t, row += Ci) {
        const T* src = in_pixel(ph, m, t);
        if (src) {
          std::memcpy(row, src, Ci * sizeof(T));
        } else {
          std::fill(row, row + Ci, T(0));
        }
      }
    }
  }

  // Writes GEMM result rows [m0, m0 + n) (row stride ld; res points at this phase's C_out
  // columns) to their output pixels; bias (or zeros) alone when res is null.
  void scatter(const Phase& ph, int64_t m0, int64_t n, const T* res, int64_t ld) const {
    for (int64_t m = m0; m < m0 + n; ++m) {
      T* dst = out_row(ph, m);
      if (res) {
        store(dst, res + (m - m0) * ld);
      } else {
        fill(dst);
      }
    }
  }
};

// Float on a CPU with AVX-512: every phase through packed_gemm_rows, which reads the input
// pixels where they lie (a shared zero row outside the input) and accumulates straight into
// the output pixels, K blocks of at most 256 channels of one tap at a time.
void run_phases_packed(const Run<float>& run, const std::vector<Phase>& phases,
                       const std::function<Tensor(const Phase&)>& phase_weight) {
  const int64_t Ci = run.Ci, Co = run.Co, B = run.g.batch;
  constexpr int64_t kRows = kImplicitRows;
  const std::vector<float> zeros(Ci, 0.f);
  // One task list over the blocks of every phase, so that threads balance across phases and
  // meet once (DCGAN: 11 blocks per phase alone split 6 / 5 over two threads).
  struct Task {
    int64_t phase, m0, n;
  };
  std::vector<Task> tasks;
  std::vector<Tensor> packed(phases.size());
  for (size_t p = 0; p < phases.size(); ++p) {
    const int64_t M = B * phases[p].pixels();
    const int64_t rows = phases[p].taps() == 0 ? 1024 : kRows;
    for (int64_t m0 = 0; m0 < M; m0 += rows) tasks.push_back({int64_t(p), m0, std::min(rows, M - m0)});
    if (phases[p].taps() > 0) packed[p] = pack_gemm_b(phase_weight(phases[p]));  // [taps*C_in, C_out]
  }
  at::parallel_for(0, int64_t(tasks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t ti = begin; ti < end; ++ti) {
      const auto [p, m0, n] = tasks[ti];
      const Phase& ph = phases[p];
      if (ph.taps() == 0) {  // no tap reaches these outputs: bias (or zero) only
        run.scatter(ph, m0, n, nullptr, 0);
        continue;
      }
      implicit_gemm_block(
          n, ph.taps(), Ci, Co, packed[p].const_data_ptr<float>(), run.bias, zeros.data(),
          [&](int64_t i) { return run.out_row(ph, m0 + i); },
          [&](int64_t i, int64_t t) { return run.in_pixel(ph, m0 + i, t); });
    }
  });
}

template <typename T>
void run_phases(const Geometry& g, const Tensor& x, const Tensor& weight, const T* bias,
                const Tensor& y) {
  const int64_t Ci = g.out_channels, Co = g.in_channels, B = g.batch;
  // Phases: every combination of r per dim.
  std::vector<Phase> phases;
  for (int64_t rd = 0; rd < g.stride[0]; ++rd) {
    for (int64_t rh = 0; rh < g.stride[1]; ++rh) {
      for (int64_t rw = 0; rw < g.stride[2]; ++rw) {
        Phase ph;
        const int64_t r[3] = {rd, rh, rw};
        for (int i = 0; i < 3; ++i) {
          ph.d[i] = phase_1d(r[i], g.kernel[i], g.stride[i], g.padding[i], g.input[i]);
        }
        if (ph.pixels() > 0) phases.push_back(ph);
      }
    }
  }
  // weight [C_in, C_out, *k] -> per phase [taps*C_in, C_out], taps in the gather's order.
  const auto w5 = weight.view({Ci, Co, g.kernel[0], g.kernel[1], g.kernel[2]});
  auto phase_weight = [&](const Phase& ph) {
    return w5.slice(2, ph.d[0].r, g.kernel[0], g.stride[0])
        .slice(3, ph.d[1].r, g.kernel[1], g.stride[1])
        .slice(4, ph.d[2].r, g.kernel[2], g.stride[2])
        .permute({2, 3, 4, 0, 1}).reshape({ph.taps() * Ci, Co}).contiguous();
  };
  const Run<T> run{g, x.const_data_ptr<T>(), y.mutable_data_ptr<T>(), bias, Ci, Co};
  const auto opts = x.options();
  if constexpr (std::is_same_v<T, float>) {
    if (packed_gemm_available()) return run_phases_packed(run, phases, phase_weight);
  }

  // k == s, p == 0: all phases read the input pixel itself; one GEMM [B*L, C_in] x
  // [C_in, phases*C_out] and a pixel shuffle.
  const bool shared = std::all_of(phases.begin(), phases.end(),
                                  [&](const Phase& ph) { return ph.identity(g.output); });
  if (shared) {
    std::vector<Tensor> ws;
    for (const auto& ph : phases) ws.push_back(phase_weight(ph));
    const auto w = at::cat(ws, 1);  // [C_in, P*C_out]
    const int64_t P = int64_t(phases.size()), M = B * g.output_numel();
    const auto xr = x.as_strided({M, Ci}, {Ci, 1});
    const int64_t R = block_rows(Ci + P * Co);
    at::parallel_for(0, (M + R - 1) / R, 1, [&](int64_t begin, int64_t end) {
      auto res = at::empty({R, P * Co}, opts);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t m0 = blk * R, n = std::min(R, M - m0);
        auto out = res.narrow(0, 0, n);
        at::mm_out(out, xr.narrow(0, m0, n), w);
        for (int64_t p = 0; p < P; ++p) {
          run.scatter(phases[p], m0, n, res.const_data_ptr<T>() + p * Co, P * Co);
        }
      }
    });
    return;
  }
  for (const auto& ph : phases) {
    const int64_t taps = ph.taps(), M = B * ph.pixels();
    if (taps == 0) {  // no tap reaches these outputs: bias (or zero) only
      at::parallel_for(0, M, 1024, [&](int64_t begin, int64_t end) {
        run.scatter(ph, begin, end - begin, nullptr, 0);
      });
      continue;
    }
    const auto w = phase_weight(ph);  // [taps*C_in, C_out]
    const int64_t R = block_rows(taps * Ci + Co);
    at::parallel_for(0, (M + R - 1) / R, 1, [&](int64_t begin, int64_t end) {
      auto a = at::empty({R, taps * Ci}, opts);
      auto res = at::empty({R, Co}, opts);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t m0 = blk * R, n = std::min(R, M - m0);
        run.gather(ph, m0, n, a.mutable_data_ptr<T>());
        auto out = res.narrow(0, 0, n);
        at::mm_out(out, a.narrow(0, 0, n), w);
        run.scatter(ph, m0, n, res.const_data_ptr<T>(), Co);
      }
    });
  }
}

}  // namespace

bool phase_data_grad_applies(const Geometry& g, const Tensor& grad_input) {
  if (g.groups != 1) return false;
  // Few output channels (an RGB decoder head: 64 -> 3) make each phase's GEMM N = C_out
  // columns wide, and an NCHW output pays the channels-last round trip on top: there GEMM +
  // col2im measured 1.2-4.5x faster at C_out 3-16 (4 x 32 x 64^2, k3 s2 and k4 s2; session 7),
  // and the phases 1.6-2x faster at 32. Channels-last outputs keep the phases (faster at every
  // C_out measured).
  if (g.in_channels < 32 && !is_channels_last(grad_input)) return false;
  bool strided = false;
  for (int i = 0; i < 3; ++i) {
    if (g.dilation[i] != 1) return false;
    strided = strided || g.stride[i] > 1;
  }
  return strided;
}

void phase_data_grad(const Geometry& g, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const auto acc = grad_output.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto x = to_layout(grad_output.to(acc), true);
  const auto w = weight.to(acc).contiguous();
  std::optional<Tensor> b;
  if (bias.has_value() && bias->defined()) b = bias->to(acc).contiguous();
  with_output_as(grad_input, acc, true, [&](const Tensor& y) {
    AT_DISPATCH_FLOATING_TYPES(acc, "convx_phase_data_grad", [&] {
      run_phases<scalar_t>(g, x, w, b ? b->const_data_ptr<scalar_t>() : nullptr, y);
    });
  });
}

}  // namespace convx::cpu
