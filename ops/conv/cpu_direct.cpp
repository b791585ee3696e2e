// Dense convolution forward on the CPU as an implicit GEMM (float, groups 1, where ATen runs
// AVX-512): output pixel rows x [taps*C_in, C_out], the input pixels read where they lie and
// the sums written straight into the (channels-last) output, blocks of at most 192 output
// pixels per task. No im2col buffer: the [pixels, taps*C_in] matrix is never formed. This is also the
// data grad of a strided transposed convolution (DCGAN's backward). An NCHW input is staged
// channels-last a few samples at a time; an NCHW output is transposed out of each block's rows.
//
// The weight grad is the same GEMM turned around: grad_weight [taps*C_in, C_out] = sum over
// output pixels of (the input pixel a tap reads)^T x (its grad_output pixel), one rank-1 update
// per pixel. Per block of 256 pixels the input pixels one tap reads and the grad_output pixels
// are copied into the kernel's tiles (no im2col buffer; grad_output transposed straight from
// NCHW), which then stay in L1 and L2. Each task owns a block of grad_weight rows and sums every pixel into
// it in order: deterministic, no reduction buffers. For a transposed convolution this is its weight
// grad with the roles of input and grad_output swapped (DCGAN, UNet backward).
#include "ops/conv/cpu_direct.h"

#include "ops/conv/cpu_gemm.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace convx::cpu {
namespace {

// NCHW <-> channels-last copies of float operands. aten's copy_ between the two layouts moves
// ~0.7 GB/s on this machine (8x128x32² to channels-last: 5.7 ms at one thread, 8x256x64²:
// 45 ms), as much as a third of the GEMM it feeds; transpose_matrix's register tiles are many
// times faster. dst[b][s][r] = src[b][r][s]; a task is a strip of 16 columns of one sample,
// whose 16-float pieces of each row are read whole (a cache line when aligned).
void transpose_planes(const float* src, float* dst, int64_t B, int64_t R, int64_t S) {
  constexpr int64_t kT = 16;
  const int64_t tiles = (S + kT - 1) / kT;
  at::parallel_for(0, B * tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / tiles, s0 = task % tiles * kT;
      transpose_matrix(src + b * R * S + s0, S, dst + b * R * S + s0 * R, R, R,
                       std::min(kT, S - s0));
    }
  });
}

// weight [C_out, C_in, taps] -> pack_gemm_b's form of [taps*C_in, C_out] (tap-major), packed
// straight from the weight: per panel of 32 output channels and per input channel, a [32][taps]
// block transposed into the panel's rows (t*C_in + ci). A permuted copy through aten followed by
// pack_gemm_b cost ~2 ms of DCGAN's ~28 ms data grad (2 MB of weight).
Tensor pack_weight(const Tensor& weight, int64_t Co, int64_t Ci, int64_t taps) {
  const auto w = weight.to(at::kFloat).contiguous();
  const int64_t panels = (Co + kOuterCols - 1) / kOuterCols, K = taps * Ci;
  auto packed = at::zeros({panels, K, kOuterCols}, w.options());  // columns past C_out stay zero
  const float* src = w.const_data_ptr<float>();
  float* dst = packed.mutable_data_ptr<float>();
  at::parallel_for(0, panels * Ci, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t p = task / Ci, ci = task % Ci, co0 = p * kOuterCols;
      transpose_matrix(src + (co0 * Ci + ci) * taps, Ci * taps,
                       dst + (p * K + ci) * kOuterCols, Ci * kOuterCols,
                       std::min(kOuterCols, Co - co0), taps);
    }
  });
  return packed;
}

// An operand as the kernels below read it: dense channels-last or dense NCHW (aten's copy for
// any other strides).
Tensor dense_operand(const Tensor& t) {
  return has_layout(t, true) || t.is_contiguous() ? t : to_layout(t, true);
}

int64_t plane_numel(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 2; d < t.dim(); ++d) n *= t.size(d);
  return n;
}

// Samples [b0, b0 + n) of a dense operand as channels-last [n][pixels][C] floats: its own
// memory when it is channels-last, else transposed from NCHW into `stage`. Staging a group of
// samples at a time (not the whole batch) keeps the copy small, cache-resident when the kernel
// reads it, and allocated once per call: a whole-batch copy (a fresh multi-MB block) page-faults
// in on every call (DCGAN's NCHW data grad: ~3 ms of ~28 ms).
const float* channels_last_samples(const Tensor& t, int64_t b0, int64_t n, float* stage) {
  const int64_t C = t.size(1), P = plane_numel(t);
  if (has_layout(t, true)) return t.const_data_ptr<float>() + b0 * P * C;
  transpose_planes(t.const_data_ptr<float>() + b0 * C * P, stage, n, C, P);
  return stage;
}

// Samples per group: the whole batch when nothing is staged, else ~1 MB of staged floats.
int64_t group_samples(bool staged, int64_t batch, int64_t floats_per_sample) {
  if (!staged) return std::max<int64_t>(batch, 1);
  return std::clamp<int64_t>((int64_t(1) << 18) / std::max<int64_t>(floats_per_sample, 1), 1,
                             std::max<int64_t>(batch, 1));
}

}  // namespace

bool direct_forward_applies(const Geometry& g, const Tensor& input, const Tensor& output) {
  // Narrow channel counts leave the 256-channel K blocks and 32-column panels mostly empty
  // (a 3-channel stem conv): those stay on the im2col + BLAS path. So does an NCHW 1x1
  // stride-1 conv, one BLAS call on the input as it lies (here: two layout copies, 0.65 of
  // aten against 0.92, 8x256x28² -> 64).
  const bool pointwise = g.kernel_numel() == 1 && g.stride == std::array<int64_t, 3>{1, 1, 1};
  return g.groups == 1 && input.scalar_type() == at::kFloat && packed_gemm_available() &&
         g.in_channels >= 64 && g.out_channels >= 32 && (is_channels_last(output) || !pointwise);
}

void direct_forward(const Geometry& g, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, const Tensor& output) {
  if (!has_layout(output, true) && !output.is_contiguous()) {
    return with_output_as(output, at::kFloat, true, [&](const Tensor& y) {
      direct_forward(g, input, weight, bias, y);
    });
  }
  const int64_t Ci = g.in_channels, Co = g.out_channels, taps = g.kernel_numel();
  const auto x = dense_operand(input);
  const bool x_cl = has_layout(x, true), y_cl = has_layout(output, true);
  const auto packed = pack_weight(weight, Co, Ci, taps);
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(at::kFloat).contiguous();
  const std::vector<float> zeros(Ci, 0.f);
  const int64_t Lin = g.input_numel(), Lout = g.output_numel();
  // Only the input is staged: an NCHW output is transposed out of each block's rows by the
  // task that computed them, while they are in cache.
  const int64_t group = group_samples(!x_cl, g.batch, Ci * Lin);
  std::vector<float> x_stage(x_cl ? 0 : group * Ci * Lin);
  float* yp = output.mutable_data_ptr<float>();
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  const int64_t threads = at::get_num_threads();
  for (int64_t b0 = 0; b0 < g.batch; b0 += group) {
    const int64_t ns = std::min(group, g.batch - b0), M = ns * Lout;
    const float* xp = channels_last_samples(x, b0, ns, x_stage.data());
    // Blocks of at most 192 rows, as many as a multiple of the threads: equal shares.
    int64_t blocks = (M + kImplicitRows - 1) / kImplicitRows;
    blocks = (blocks + threads - 1) / threads * threads;
    const int64_t rows = (M + blocks - 1) / blocks;
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      int64_t pos[kImplicitRows][4];  // (sample in the group, od, oh, ow) of each row
      std::vector<float> rows_nchw(y_cl ? 0 : kImplicitRows * Co);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t m0 = blk * rows, n = std::min(rows, M - m0);
        if (n <= 0) continue;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t m = m0 + i;
          pos[i][3] = m % OW;
          pos[i][2] = m / OW % OH;
          pos[i][1] = m / (OW * OH) % OD;
          pos[i][0] = m / (OW * OH * OD);
        }
        implicit_gemm_block(
            n, taps, Ci, Co, packed.const_data_ptr<float>(),
            b.defined() ? b.const_data_ptr<float>() : nullptr, zeros.data(),
            [&](int64_t i) { return y_cl ? yp + (b0 * Lout + m0 + i) * Co : &rows_nchw[i * Co]; },
            [&](int64_t i, int64_t t) -> const float* {
              const int64_t k[3] = {t / (KH * KW), t / KW % KH, t % KW};
              int64_t idx = pos[i][0];
              for (int d = 0; d < 3; ++d) {
                const int64_t ii = pos[i][d + 1] * g.stride[d] - g.padding[d] + k[d] * g.dilation[d];
                if (ii < 0 || ii >= g.input[d]) return nullptr;
                idx = idx * g.input[d] + ii;
              }
              return xp + idx * Ci;
            });
        for (int64_t m = m0; !y_cl && m < m0 + n;) {  // [pixels][C_out] -> [C_out][pixels]
          const int64_t s = m / Lout, len = std::min(m0 + n, (s + 1) * Lout) - m;
          transpose_matrix(&rows_nchw[(m - m0) * Co], Co, yp + (b0 + s) * Co * Lout + m % Lout,
                           Lout, len, Co);
          m += len;
        }
      }
    });
  }
}


bool direct_weight_grad_applies(const Geometry& g, const Tensor& input, const Tensor& grad_output) {
  // As for the forward; the NCHW 1x1 stride-1 weight grad is one BLAS call per sample on the
  // operands as they lie.
  const bool pointwise = g.kernel_numel() == 1 && g.stride == std::array<int64_t, 3>{1, 1, 1};
  return g.groups == 1 && input.scalar_type() == at::kFloat &&
         grad_output.scalar_type() == at::kFloat && packed_gemm_available() &&
         g.in_channels >= 64 && g.out_channels >= 32 &&
         (is_channels_last(input) || is_channels_last(grad_output) || !pointwise);
}

void direct_weight_grad(const Geometry& g, const Tensor& input, const Tensor& grad_output,
                        const Tensor& grad_weight) {
  const int64_t Ci = g.in_channels, Co = g.out_channels, taps = g.kernel_numel();
  const int64_t Lin = g.input_numel(), Lout = g.output_numel();
  if (g.batch * Lout == 0) {
    grad_weight.zero_();
    return;
  }
  const auto x = dense_operand(input), gy = dense_operand(grad_output);
  const bool x_cl = has_layout(x, true), gy_cl = has_layout(gy, true);
  // Only the input is staged: the B panels are transposed straight from an NCHW grad_output.
  const int64_t group = group_samples(!x_cl, g.batch, Ci * Lin);
  std::vector<float> x_stage(x_cl ? 0 : group * Ci * Lin);
  auto gw = at::empty({taps * Ci, Co}, input.options());  // [taps, C_in, C_out]
  float* gwp = gw.mutable_data_ptr<float>();
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  // Tasks: (tap, block of up to 96 input channels), each owning those rows of grad_weight.
  // A thread runs the pixels in blocks of kChunk, outermost: it packs a block's grad_output
  // pixels once (B) and then, per task of its range, the input pixels the task's tap reads (A,
  // zeros outside the input), so B is copied once per block and thread, not once per task.
  constexpr int64_t kTaskRows = 96;
  // Pixels per block: the packed B (kChunk * C_out floats) and a task's A stay in L2.
  constexpr int64_t kChunk = 256;
  const int64_t blocks = (Ci + kTaskRows - 1) / kTaskRows;
  const int64_t panels = (Co + kOuterCols - 1) / kOuterCols;
  for (int64_t b0 = 0; b0 < g.batch; b0 += group) {  // groups in order: deterministic sums
    const int64_t ns = std::min(group, g.batch - b0), M = ns * Lout;
    const float* xp = channels_last_samples(x, b0, ns, x_stage.data());
    const float* gyp = gy.const_data_ptr<float>() + b0 * Co * Lout;
    at::parallel_for(0, taps * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> ap(kTaskRows * kChunk), bp(panels * kOuterCols * kChunk, 0.f);
      int64_t pos[kChunk][4];  // (sample in the group, od, oh, ow) of each pixel of the block
      int64_t off[kChunk];
      if (b0 == 0) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t t = task / blocks, c0 = task % blocks * kTaskRows;
          std::fill(gwp + (t * Ci + c0) * Co, gwp + (t * Ci + std::min(Ci, c0 + kTaskRows)) * Co, 0.f);
        }
      }
      for (int64_t m0 = 0; m0 < M; m0 += kChunk) {
        const int64_t n = std::min(kChunk, M - m0);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t m = m0 + i;
          pos[i][0] = m / (OW * OH * OD);
          pos[i][1] = m / (OW * OH) % OD;
          pos[i][2] = m / OW % OH;
          pos[i][3] = m % OW;
        }
        // The last panel's columns past C_out hold stale values: the kernel does not store them.
        for (int64_t col = 0, p = 0; col < Co; col += kOuterCols, ++p) {
          const int64_t w = std::min(kOuterCols, Co - col);
          float* dst = bp.data() + p * n * kOuterCols;
          if (gy_cl) {
            for (int64_t i = 0; i < n; ++i, dst += kOuterCols) {
              const float* src = gyp + (m0 + i) * Co + col;
              if (w == kOuterCols) {
                std::memcpy(dst, src, sizeof(float) * kOuterCols);
              } else {
                std::copy(src, src + w, dst);
              }
            }
            continue;
          }
          // NCHW: [w channels][pixels] of each sample the block touches, transposed.
          for (int64_t m = m0; m < m0 + n;) {
            const int64_t b = m / Lout, len = std::min(m0 + n, (b + 1) * Lout) - m;
            transpose_matrix(gyp + (b * Co + col) * Lout + m % Lout, Lout,
                             dst + (m - m0) * kOuterCols, kOuterCols, w, len);
            m += len;
          }
        }
        for (int64_t task = begin; task < end; ++task) {
          const int64_t t = task / blocks, c0 = task % blocks * kTaskRows;
          const int64_t rows = std::min(kTaskRows, Ci - c0);
          const int64_t k[3] = {t / (KH * KW), t / KW % KH, t % KW};
          for (int64_t i = 0; i < n; ++i) {  // the input pixel tap t reads, or -1 (outside)
            int64_t idx = pos[i][0];
            for (int d = 0; d < 3 && idx >= 0; ++d) {
              const int64_t ii = pos[i][d + 1] * g.stride[d] - g.padding[d] + k[d] * g.dilation[d];
              idx = ii >= 0 && ii < g.input[d] ? idx * g.input[d] + ii : -1;
            }
            off[i] = idx < 0 ? -1 : idx * Ci + c0;
          }
          for (int64_t r = 0; r < rows; r += kOuterRows) {  // tiles [n][12] of A
            const int64_t w = std::min(kOuterRows, rows - r);
            float* dst = ap.data() + r * n;
            for (int64_t i = 0; i < n; ++i, dst += kOuterRows) {
              if (off[i] < 0) {
                std::fill(dst, dst + w, 0.f);
              } else if (w == kOuterRows) {
                std::memcpy(dst, xp + off[i] + r, sizeof(float) * kOuterRows);
              } else {
                std::copy(xp + off[i] + r, xp + off[i] + r + w, dst);
              }
            }
          }
          packed_outer_gemm(rows, Co, n, ap.data(), bp.data(), gwp + (t * Ci + c0) * Co, Co);
        }
      }
    });
  }
  // [taps, C_in, C_out] -> grad_weight [C_out, C_in, taps] (or channels-last [C_out, taps, C_in]):
  // [taps][C_out] per input channel (or [C_in][C_out] per tap) transposed into place.
  const bool cl = has_layout(grad_weight, true);
  with_output_as(grad_weight, at::kFloat, cl, [&](const Tensor& out) {
    float* op = out.mutable_data_ptr<float>();
    at::parallel_for(0, cl ? taps : Ci, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (cl) {
          transpose_matrix(gwp + i * Ci * Co, Co, op + i * Ci, taps * Ci, Ci, Co);
        } else {
          transpose_matrix(gwp + i * Co, Ci * Co, op + i * taps, Ci * taps, taps, Co);
        }
      }
    });
  });
}

}  // namespace convx::cpu
