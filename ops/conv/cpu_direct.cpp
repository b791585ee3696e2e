// Dense convolution forward on the CPU as an implicit GEMM (float, groups 1, where ATen runs
// AVX-512): output pixel rows x [taps*C_in, C_out], the input pixels read where they lie and
// the sums written straight into the (channels-last) output, blocks of 192 output pixels per
// task. No im2col buffer: the [pixels, taps*C_in] matrix is never formed. This is also the
// data grad of a strided transposed convolution (DCGAN's backward).
#include "ops/conv/cpu_direct.h"

#include "ops/conv/cpu_gemm.h"

#include <ATen/Parallel.h>

#include <vector>

namespace convx::cpu {

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
  const auto x = to_layout(input, true);
  // weight [C_out, C_in, *k] -> [taps*C_in, C_out] (tap-major), packed.
  const auto w = weight.to(at::kFloat).contiguous().view({Co, Ci, taps}).permute({2, 1, 0}).reshape({taps * Ci, Co});
  const auto packed = pack_gemm_b(w.contiguous());
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(at::kFloat).contiguous();
  const std::vector<float> zeros(Ci, 0.f);
  const int64_t M = g.batch * g.output_numel();
  with_output_as(output, at::kFloat, true, [&](const Tensor& y) {
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
