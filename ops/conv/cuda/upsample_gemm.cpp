// conv_transpose with stride == kernel (the k2 s2 upsampling of UNet-style decoders) as a GEMM.
//
// With stride == kernel, no padding, dilation 1 and no output padding, output pixel
// (i*k + a) of channel co is exactly sum_ci x[ci, i] * w[ci, co, a]: one input pixel, one tap.
// So T = X [N*in, C_in] x W [C_in, (taps, C_out)] (cuBLAS, at::mm / at::bmm) holds every output
// value once, and the output is a permutation of T's rows and columns, written with the bias in
// one elementwise pass. In 1-D with channels-last operands that permutation is the identity:
// the GEMM (with cuBLASLt's bias epilogue) writes the output directly; in 2-D channels-last, one
// strided batched GEMM per kernel row writes it directly (the bias added after).
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/mm.h>

#include <numeric>

namespace convx::cuda {

bool upsample_gemm_applies(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                           const Tensor& grad_input) {
  // cuBLAS computes float32 at the matmul precision flag, not cuDNN's TF32 flag: half types only.
  const auto t = grad_output.scalar_type();
  if (t != at::kHalf && t != at::kBFloat16) return false;
  if (a.groups != 1) return false;
  for (int64_t i = 0; i < a.rank; ++i) {
    const int64_t k = weight.size(2 + i);
    if (a.stride[i] != k || a.padding[i] != 0 || a.dilation[i] != 1) return false;
    if (grad_input.size(2 + i) != grad_output.size(2 + i) * k) return false;
  }
  return true;
}

void upsample_gemm(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const int64_t r = a.rank, N = grad_output.size(0), Cin = grad_output.size(1);
  const int64_t Cout = grad_input.size(1);
  const auto in = grad_output.sizes().slice(2);
  const auto k = weight.sizes().slice(2);
  const int64_t L = std::accumulate(in.begin(), in.end(), int64_t(1), std::multiplies<>());
  const int64_t K = std::accumulate(k.begin(), k.end(), int64_t(1), std::multiplies<>());
  const bool has_bias = bias.has_value() && bias->defined();
  Tensor b = has_bias ? bias->to(grad_input.scalar_type()) : Tensor();

  // W as [C_in, (taps, C_out)]: taps outer, so C_out is innermost in T as in a channels-last output.
  std::vector<int64_t> taps_last(r + 2);
  taps_last[0] = 0;
  for (int64_t i = 0; i < r; ++i) taps_last[1 + i] = 2 + i;
  taps_last[r + 1] = 1;
  const Tensor w = weight.permute(taps_last).reshape({Cin, K * Cout});

  const bool x_cl = has_layout(grad_output, true), y_cl = has_layout(grad_input, true);
  // Rows of X: (n, pixel) with C_in contiguous, a view of a channels-last x.
  auto x_rows = [&] {
    std::vector<int64_t> perm{0};
    for (int64_t i = 0; i < r; ++i) perm.push_back(2 + i);
    perm.push_back(1);
    return grad_output.permute(perm).reshape({N * L, Cin});
  };

  if (r == 1 && x_cl && y_cl) {
    // y (N, C_out, L*k) stored as (N, L, k, C_out) = T [N*L, k*C_out] exactly.
    auto out = grad_input.permute({0, 2, 1}).view({N * L, K * Cout});
    if (has_bias) {
      at::addmm_out(out, b.repeat({K}), x_rows(), w);
    } else {
      at::mm_out(out, x_rows(), w);
    }
    return;
  }

  if (r == 2 && x_cl && y_cl) {
    // y (N, C_out, H*k0, W*k1) stored as [N][H][a][W][b][C_out]. For one kernel row a, the
    // outputs of input row (n, h) are a [W, (b, C_out)] block with contiguous rows, and the
    // blocks of consecutive (n, h) lie one input row's worth of output (k0*W*k1*C_out) apart:
    // one strided batched GEMM per kernel row writes them in place, no temporary.
    const int64_t H = in[0], W = in[1], k0 = k[0], k1 = k[1], cols = k1 * Cout;
    const Tensor xb = x_rows().view({N * H, W, Cin});
    for (int64_t a = 0; a < k0; ++a) {
      const Tensor wa = weight.select(2, a).permute({0, 2, 1}).reshape({Cin, cols});
      Tensor out = grad_input.as_strided({N * H, W, cols}, {k0 * W * cols, cols, 1},
                                         grad_input.storage_offset() + a * W * cols);
      at::bmm_out(out, xb, wa.expand({N * H, Cin, cols}));
    }
    if (has_bias) grad_input.add_(b.view({1, Cout, 1, 1}));
    return;
  }

  Tensor T;
  if (x_cl) {
    T = at::mm(x_rows(), w);
  } else {
    // x [N, C_in, L] read transposed by cuBLAS: no copy of x.
    T = at::bmm(grad_output.reshape({N, Cin, L}).transpose(1, 2), w.expand({N, Cin, K * Cout}));
  }
  // T [N, i_1..i_r, a_1..a_r, C_out] -> [N, C_out, i_1, a_1, ..., i_r, a_r], the output split
  // per dim into (i, a).
  std::vector<int64_t> tsize{N};
  tsize.insert(tsize.end(), in.begin(), in.end());
  tsize.insert(tsize.end(), k.begin(), k.end());
  tsize.push_back(Cout);
  std::vector<int64_t> perm{0, 2 * r + 1}, ysize{N, Cout};
  for (int64_t i = 0; i < r; ++i) {
    perm.push_back(1 + i);
    perm.push_back(1 + r + i);
    ysize.push_back(in[i]);
    ysize.push_back(k[i]);
  }
  const auto src = T.view(tsize).permute(perm);
  auto dst = grad_input.view(ysize);
  if (has_bias) {
    std::vector<int64_t> bshape(2 * r + 2, 1);
    bshape[1] = Cout;
    at::add_out(dst, src, b.view(bshape));
  } else {
    dst.copy_(src);
  }
}

}  // namespace convx::cuda
