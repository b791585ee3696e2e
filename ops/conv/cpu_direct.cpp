// Dense convolution forward on the CPU as an implicit GEMM (float, groups 1, where ATen runs
// AVX-512): output pixel rows x [taps*C_in, C_out], the input pixels read where they lie and
// the sums written straight into the (channels-last) output, blocks of 192 output pixels per
// task. No im2col buffer: the [pixels, taps*C_in] matrix is never formed. This is also the
// data grad of a strided transposed convolution (DCGAN's backward).
//
// The weight grad is the same GEMM turned around: grad_weight [taps*C_in, C_out] = sum over
// output pixels of (the input pixel a tap reads)^T x (its grad_output pixel), one rank-1 update
// per pixel. Per block of 128 pixels the input pixels one tap reads and the grad_output pixels
// are copied from the channels-last operands into the kernel's tiles (no im2col buffer), which
// then stay in L1 and L2. Each task owns a block of grad_weight rows and sums every pixel into it in
// order: deterministic, no reduction buffers. For a transposed convolution this is its weight
// grad with the roles of input and grad_output swapped (DCGAN, UNet backward).
#include "ops/conv/cpu_direct.h"

#include "ops/conv/cpu_gemm.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <vector>

namespace convx::cpu {
namespace {

// NCHW <-> channels-last copies of float operands. aten's copy_ between the two layouts moves
// ~0.7 GB/s on this machine (8x128x32² to channels-last: 5.7 ms at one thread, 8x256x64²:
// 45 ms), as much as a third of the GEMM it feeds; a tiled transpose is several times faster.
// dst[b][s][r] = src[b][r][s]: tasks of 16 columns of src, whose 16 destination rows are
// written while the source lines they read stay in L1.
void transpose_planes(const float* src, float* dst, int64_t B, int64_t R, int64_t S) {
  constexpr int64_t kT = 16;
  const int64_t tiles = (S + kT - 1) / kT;
  at::parallel_for(0, B * tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / tiles, s0 = task % tiles * kT, s1 = std::min(S, s0 + kT);
      const float* in = src + b * R * S;
      float* out = dst + b * R * S;
      for (int64_t r0 = 0; r0 < R; r0 += kT) {
        const int64_t r1 = std::min(R, r0 + kT);
        for (int64_t s = s0; s < s1; ++s) {
          for (int64_t r = r0; r < r1; ++r) out[s * R + r] = in[r * S + s];
        }
      }
    }
  });
}

// t (float, batched) as a dense channels-last tensor: itself, a transposed copy of a dense
// NCHW t, or aten's copy of any other strides.
Tensor as_channels_last(const Tensor& t) {
  if (has_layout(t, true)) return t;
  if (!t.is_contiguous()) return to_layout(t, true);
  auto out = new_tensor(t.sym_sizes(), t.options(), true);
  const int64_t B = t.size(0), C = t.size(1);
  transpose_planes(t.const_data_ptr<float>(), out.mutable_data_ptr<float>(), B, C,
                   B * C == 0 ? 0 : t.numel() / (B * C));
  return out;
}

// Runs body on a dense channels-last float output: out itself, or a temporary transposed into
// a dense NCHW out afterwards (with_output_as's copy for any other out).
template <typename F>
void with_channels_last_output(const Tensor& out, F&& body) {
  if (out.scalar_type() != at::kFloat || has_layout(out, true) || !out.is_contiguous()) {
    return with_output_as(out, at::kFloat, true, body);
  }
  auto tmp = new_tensor(out.sym_sizes(), out.options(), true);
  body(tmp);
  const int64_t B = out.size(0), C = out.size(1);
  transpose_planes(tmp.const_data_ptr<float>(), out.mutable_data_ptr<float>(), B,
                   B * C == 0 ? 0 : out.numel() / (B * C), C);
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
  const int64_t Ci = g.in_channels, Co = g.out_channels, taps = g.kernel_numel();
  const auto x = as_channels_last(input);
  // weight [C_out, C_in, *k] -> [taps*C_in, C_out] (tap-major), packed.
  const auto w = weight.to(at::kFloat).contiguous().view({Co, Ci, taps}).permute({2, 1, 0}).reshape({taps * Ci, Co});
  const auto packed = pack_gemm_b(w.contiguous());
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(at::kFloat).contiguous();
  const std::vector<float> zeros(Ci, 0.f);
  const int64_t M = g.batch * g.output_numel();
  with_channels_last_output(output, [&](const Tensor& y) {
    const float* xp = x.const_data_ptr<float>();
    float* yp = y.mutable_data_ptr<float>();
    const auto& [OD, OH, OW] = g.output;
    const auto& [KD, KH, KW] = g.kernel;
    at::parallel_for(0, (M + kImplicitRows - 1) / kImplicitRows, 1, [&](int64_t begin, int64_t end) {
      int64_t pos[kImplicitRows][4];  // (b, od, oh, ow) of each row of the block
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t m0 = blk * kImplicitRows, n = std::min(kImplicitRows, M - m0);
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
            [&](int64_t i) { return yp + (m0 + i) * Co; },
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
      }
    });
  });
}

}  // namespace convx::cpu

namespace convx::cpu {

bool direct_weight_grad_applies(const Geometry& g, const Tensor& input, const Tensor& grad_output) {
  // As for the forward; the NCHW 1x1 stride-1 weight grad is one BLAS call per sample on the
  // operands as they lie.
  const bool pointwise = g.kernel_numel() == 1 && g.stride == std::array<int64_t, 3>{1, 1, 1};
  return g.groups == 1 && input.scalar_type() == at::kFloat &&
         grad_output.scalar_type() == at::kFloat && packed_gemm_available() &&
         g.in_channels >= 64 && g.out_channels >= 32 &&
         (is_channels_last(input) || is_channels_last(grad_output) || !pointwise);
}

namespace {

// Element strides of a batched dense channels-last [N, C, *spatial] operand as (N, C, d, h,
// w), the spatial dims padded to three with leading zeros (Geometry pads their sizes with 1s).
std::array<int64_t, 5> strides5(const Tensor& t) {
  std::array<int64_t, 5> s{t.stride(0), t.stride(1), 0, 0, 0};
  const int64_t r = t.dim() - 2;
  for (int64_t i = 0; i < r; ++i) s[5 - r + i] = t.stride(2 + i);
  return s;
}

}  // namespace

void direct_weight_grad(const Geometry& g, const Tensor& input, const Tensor& grad_output,
                        const Tensor& grad_weight) {
  const int64_t Ci = g.in_channels, Co = g.out_channels, taps = g.kernel_numel();
  const auto x = as_channels_last(input), gy = as_channels_last(grad_output);
  const auto sx = strides5(x), sy = strides5(gy);
  auto gw = at::empty({taps * Ci, Co}, input.options());  // [taps, C_in, C_out]
  const float* xp = x.const_data_ptr<float>();
  const float* gyp = gy.const_data_ptr<float>();
  float* gwp = gw.mutable_data_ptr<float>();
  const int64_t M = g.batch * g.output_numel();
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
  at::parallel_for(0, taps * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> ap(kTaskRows * kChunk), bp(panels * kOuterCols * kChunk, 0.f);
    int64_t pos[kChunk][4];  // (b, od, oh, ow) of each pixel of the block
    int64_t off[kChunk];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task / blocks, c0 = task % blocks * kTaskRows;
      std::fill(gwp + (t * Ci + c0) * Co, gwp + (t * Ci + std::min(Ci, c0 + kTaskRows)) * Co, 0.f);
    }
    for (int64_t m0 = 0; m0 < M; m0 += kChunk) {
      const int64_t n = std::min(kChunk, M - m0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t m = m0 + i;
        pos[i][0] = m / (OW * OH * OD);
        pos[i][1] = m / (OW * OH) % OD;
        pos[i][2] = m / OW % OH;
        pos[i][3] = m % OW;
        off[i] = pos[i][0] * sy[0] + pos[i][1] * sy[2] + pos[i][2] * sy[3] + pos[i][3] * sy[4];
      }
      // The last panel's columns past C_out hold stale values: the kernel does not store them.
      for (int64_t col = 0, p = 0; col < Co; col += kOuterCols, ++p) {
        const int64_t w = std::min(kOuterCols, Co - col);
        for (int64_t i = 0; i < n; ++i) {
          std::copy(gyp + off[i] + col, gyp + off[i] + col + w, bp.data() + (p * n + i) * kOuterCols);
        }
      }
      for (int64_t task = begin; task < end; ++task) {
        const int64_t t = task / blocks, c0 = task % blocks * kTaskRows;
        const int64_t rows = std::min(kTaskRows, Ci - c0);
        const int64_t k[3] = {t / (KH * KW), t / KW % KH, t % KW};
        for (int64_t i = 0; i < n; ++i) {  // the input pixel tap t reads, or -1 (outside)
          int64_t xo = pos[i][0] * sx[0] + c0;
          for (int d = 0; d < 3 && xo >= 0; ++d) {
            const int64_t ii = pos[i][d + 1] * g.stride[d] - g.padding[d] + k[d] * g.dilation[d];
            xo = ii >= 0 && ii < g.input[d] ? xo + ii * sx[2 + d] : -1;
          }
          off[i] = xo;
        }
        for (int64_t r = 0; r < rows; r += kOuterRows) {  // tiles [n][12] of A
          const int64_t w = std::min(kOuterRows, rows - r);
          float* dst = ap.data() + r * n;
          for (int64_t i = 0; i < n; ++i, dst += kOuterRows) {
            if (off[i] < 0) {
              std::fill(dst, dst + w, 0.f);
            } else {
              std::copy(xp + off[i] + r, xp + off[i] + r + w, dst);
            }
          }
        }
        packed_outer_gemm(rows, Co, n, ap.data(), bp.data(), gwp + (t * Ci + c0) * Co, Co);
      }
    }
  });
  // [taps, C_in, C_out] -> [C_out, C_in, *k]
  grad_weight.copy_(gw.view({taps, Ci, Co}).permute({2, 1, 0}).reshape(grad_weight.sizes()));
}

}  // namespace convx::cpu
