// Convolutions whose stride equals their kernel (padding 0, dilation 1, one group, no output
// padding) as one cuBLAS GEMM and one layout pass: patchify (the forward: ViT / ConvNeXt stems,
// the backward of a k2 s2 upsampling), its transpose (the k2 s2 upsampling of UNet-style
// decoders) and their weight-grad.
//
// With stride == kernel the windows tile the fine tensor without overlap: fine pixel
// (c * k + t) of channel ch belongs to exactly one coarse pixel c and one tap t. Gathering the
// fine tensor into a patch matrix P (every window's taps x channels as one row, or the transpose)
// turns each operation into a plain matrix product with the weight:
//   forward      coarse[n, pos, co] = sum_(t, ci) P[n, pos, (t, ci)] * w[co, ci, t]
//   data-grad    P[n, pos, (t, ci)] = sum_co coarse[n, pos, co] * w[co, ci, t], scattered back
//   weight-grad  w[co, ci, t]       = sum_(n, pos) coarse[n, pos, co] * P[n, pos, (t, ci)]
// The order of P follows the fine tensor's layout so that the gather / scatter moves whole runs:
// channels-last: rows = pixels, columns (taps, channels), each run k_last * C contiguous
// elements; NC*: per sample rows (channels, taps), columns = pixels, each run one fine row (the
// weight-grad: rows (channels, taps), columns (samples, pixels), so that its reduction over
// samples and pixels is one K dimension of one GEMM). Own kernels move the data
// (patch_gather.cu, patch_scatter.cu). Operands of any strides are accepted: where cuBLAS
// cannot read one in place (no unit stride: a strided view, a broadcast gradient) it is copied.
// The GEMMs run in cuBLAS (torch's handle, stream and workspace: graph-capturable) at the
// precision rules of a convolution, not of a matmul: float32 uses TF32 exactly when
// torch.backends.cudnn.allow_tf32 allows it (cuBLAS would otherwise follow the matmul flag).
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <cublas_v2.h>

#include <limits>
#include <numeric>
#include <optional>

namespace convx::cuda {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

void check_cublas(cublasStatus_t s, const char* what) {
  TORCH_CHECK(s == CUBLAS_STATUS_SUCCESS, "convx: cuBLAS ", what, " failed with status ",
              static_cast<int>(s));
}

cudaDataType_t cuda_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return CUDA_R_32F;
    case at::kHalf: return CUDA_R_16F;
    case at::kBFloat16: return CUDA_R_16BF;
    default: TORCH_CHECK(false, "convx: patch GEMM got ", t);
  }
}

// A [batch, rows, cols] operand with one unit stride in its last two dims, as cuBLAS sees it:
// a column-major matrix of the transpose (rows-major data) or of itself.
struct ColMajor {
  cublasOperation_t op;
  int64_t ld;
};
// For the operand X of C^T = X * Y in cuBLAS's column-major terms: the row-major matrix M
// [rows, cols] is, read column-major, M^T with ld = its row stride (op N yields M^T), or, with
// unit row stride, M itself with ld = its column stride (op T yields M^T). None where M has no
// unit stride, or its other stride is below cuBLAS's least leading dimension (a strided view of
// the caller's tensor, a gradient broadcast with zero strides).
std::optional<ColMajor> transposed_view(const Tensor& m) {
  const int64_t rows = m.size(1), cols = m.size(2);
  if (m.stride(2) == 1 || cols == 1) {
    const int64_t ld = rows > 1 ? m.stride(1) : cols;
    if (ld >= std::max<int64_t>(cols, 1)) return ColMajor{CUBLAS_OP_N, ld};
  }
  if (m.stride(1) == 1 || rows == 1) {
    const int64_t ld = cols > 1 ? m.stride(2) : rows;
    if (ld >= std::max<int64_t>(rows, 1)) return ColMajor{CUBLAS_OP_T, ld};
  }
  return std::nullopt;
}

// An input operand cuBLAS can read: m itself, else a contiguous copy (a shared batch, stride 0,
// copied once and shared again).
Tensor readable(const Tensor& m) {
  if (transposed_view(m)) return m;
  if (m.size(0) > 1 && m.stride(0) == 0) return m.select(0, 0).contiguous().unsqueeze(0).expand(m.sizes());
  return m.contiguous();
}

// An output cuBLAS writes as it is: rows-major (unit column stride) with rows that do not overlap.
bool writable(const Tensor& c) {
  return (c.stride(2) == 1 || c.size(2) == 1) && (c.size(1) <= 1 || c.stride(1) >= std::max<int64_t>(c.size(2), 1));
}

// C[b] = A[b] * B[b] for [batch, rows, cols] views (batch stride 0 = shared) that cuBLAS reads
// and writes in place (readable A and B; C or its transpose writable).
void gemm_in_place(Tensor A, Tensor B, Tensor C, bool tf32) {
  if (!writable(C)) {  // C^T = B^T A^T: cuBLAS writes column-major
    std::swap(A, B);
    A = A.transpose(1, 2), B = B.transpose(1, 2), C = C.transpose(1, 2);
  }
  int64_t batch = C.size(0), m = C.size(1);
  const int64_t n = C.size(2), k = A.size(2);
  // One GEMM of batch * m rows when A and C have uniform rows across samples and B is shared.
  if (batch > 1 && B.stride(0) == 0 && A.stride(2) == 1 && A.stride(1) >= k && C.stride(2) == 1 &&
      A.stride(0) == m * A.stride(1) && C.stride(0) == m * C.stride(1)) {
    A = A.reshape({1, batch * m, k});
    C = C.view({1, batch * m, n});
    batch = 1, m = C.size(1);
  }
  const auto xv = transposed_view(B), yv = transposed_view(A);
  TORCH_INTERNAL_ASSERT(xv && yv, "convx: patch GEMM operand left without a unit stride");
  const ColMajor x = *xv, y = *yv;
  const int64_t ldc = m > 1 ? C.stride(1) : n;
  TORCH_INTERNAL_ASSERT(ldc >= std::max<int64_t>(n, 1), "convx: patch GEMM output rows overlap");
  TORCH_CHECK(m <= kIntMax && n <= kIntMax && k <= kIntMax && x.ld <= kIntMax && y.ld <= kIntMax &&
                  ldc <= kIntMax && batch <= kIntMax,
              "convx: patch GEMM sizes beyond cuBLAS's 32-bit range");
  const cublasComputeType_t compute =
      A.scalar_type() == at::kFloat && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.f, beta = 0.f;
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();  // current stream, torch's workspace
  // torch sets the handle's math mode from the matmul TF32 flag; the compute type decides here.
  check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check_cublas(cublasGemmStridedBatchedEx(
                   h, x.op, y.op, int(n), int(m), int(k), &alpha, B.data_ptr(),
                   cuda_type(B.scalar_type()), int(x.ld), B.stride(0), A.data_ptr(),
                   cuda_type(A.scalar_type()), int(y.ld), A.stride(0), &beta, C.data_ptr(),
                   cuda_type(C.scalar_type()), int(ldc), C.stride(0), int(batch), compute,
                   CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

// C[b] = A[b] * B[b] for any strides: operands cuBLAS cannot read in place are copied, and an
// output it cannot write in place (no unit stride) is computed in a contiguous buffer and copied
// into C. The patch GEMM's own matrices and dense NC* / channels-last tensors never copy.
void gemm(const Tensor& A, const Tensor& B, const Tensor& C, bool tf32) {
  if (writable(C) || writable(C.transpose(1, 2))) {
    gemm_in_place(readable(A), readable(B), C, tf32);
    return;
  }
  const Tensor tmp = at::empty(C.sizes(), C.options());
  gemm_in_place(readable(A), readable(B), tmp, tf32);
  C.copy_(tmp);
}

// The fine tensor (N, C, c_1*k_1, ...) as (N, C, c_1, k_1, ..., c_r, k_r): a view (trailing
// pixels beyond c_i * k_i, which a stride-k forward never reads, are left out).
Tensor split_windows(const Tensor& fine, at::IntArrayRef coarse, at::IntArrayRef k) {
  std::vector<int64_t> sizes{fine.size(0), fine.size(1)}, strides{fine.stride(0), fine.stride(1)};
  for (size_t i = 0; i < k.size(); ++i) {
    sizes.push_back(coarse[i]);
    sizes.push_back(k[i]);
    strides.push_back(fine.stride(2 + i) * k[i]);
    strides.push_back(fine.stride(2 + i));
  }
  return fine.as_strided(sizes, strides, fine.storage_offset());
}

// The patch matrix P of the fine tensor in the order of its layout (see the top), and the
// permutation of split_windows' dims that lists P's dims in order.
struct Patches {
  bool rows_are_pixels;        // channels-last: P [N, L, (taps, C)]; else P [N, (C, taps), L]
  bool samples_inner;          // NC* only: P [(C, taps), N, L]
  std::vector<int64_t> order;  // P's dims as dims of split_windows(fine)
  std::vector<int64_t> shape;  // P's full shape in that order
  int64_t N, C, L, T;
};

Patches patches_of(const Tensor& fine, at::IntArrayRef coarse, at::IntArrayRef k,
                   bool samples_inner = false) {
  const int64_t r = k.size();
  Patches p;
  p.rows_are_pixels = patch_rows_are_pixels(fine);
  p.samples_inner = samples_inner && !p.rows_are_pixels;
  p.N = fine.size(0), p.C = fine.size(1);
  p.L = std::accumulate(coarse.begin(), coarse.end(), int64_t(1), std::multiplies<>());
  p.T = std::accumulate(k.begin(), k.end(), int64_t(1), std::multiplies<>());
  if (p.rows_are_pixels) {
    p.order.push_back(0);
    for (int64_t i = 0; i < r; ++i) p.order.push_back(2 + 2 * i);  // coarse pixels
    for (int64_t i = 0; i < r; ++i) p.order.push_back(3 + 2 * i);  // taps
    p.order.push_back(1);
  } else {
    if (!p.samples_inner) p.order.push_back(0);
    p.order.push_back(1);
    for (int64_t i = 0; i < r; ++i) p.order.push_back(3 + 2 * i);
    if (p.samples_inner) p.order.push_back(0);
    for (int64_t i = 0; i < r; ++i) p.order.push_back(2 + 2 * i);
  }
  const Tensor v = split_windows(fine, coarse, k);
  for (int64_t d : p.order) p.shape.push_back(v.size(d));
  return p;
}

Tensor shared(const Tensor& m, int64_t batch) { return m.expand({batch, m.size(1), m.size(2)}); }

// P as per-sample matrices: [N, L, T*C] (rows = pixels) or [N, C*T, L] (with samples_inner a
// view whose rows step over the samples: strides (L, N*L, 1), which cuBLAS reads in place).
Tensor patch_matrix(const Patches& p, const Tensor& P) {
  if (p.rows_are_pixels) return P.view({p.N, p.L, p.T * p.C});
  if (p.samples_inner) return P.view({p.C * p.T, p.N, p.L}).transpose(0, 1);
  return P.view({p.N, p.C * p.T, p.L});
}

// P, contiguous in its order: patch_gather.cu's kernel, a permuted copy for views it declines.
Tensor gather_patches(const Patches& p, const Tensor& fine, at::IntArrayRef coarse, at::IntArrayRef k) {
  Tensor P = at::empty(p.shape, fine.options());
  if (!patch_gather(fine, p.rows_are_pixels, coarse, k, p.samples_inner, P)) {
    P.copy_(split_windows(fine, coarse, k).permute(p.order));
  }
  return P;
}

// The coarse tensor (N, C, c...) as per-sample matrices [N, L, C] (a view in either layout).
Tensor pixel_rows(const Tensor& coarse) {
  std::vector<int64_t> perm{0};
  for (int64_t i = 2; i < coarse.dim(); ++i) perm.push_back(i);
  perm.push_back(1);
  return coarse.permute(perm).reshape({coarse.size(0), -1, coarse.size(1)});
}

// The weight [C_out, C_in, k...] as the matrix the patch order needs: [(taps, C_in), C_out] for
// pixel rows, [C_out, (C_in, taps)] otherwise; a view when the weight's layout allows (else a
// small copy), with a batch dim of stride 0 (shared by every sample).
Tensor weight_matrix(const Tensor& w, bool rows_are_pixels) {
  const int64_t Co = w.size(0), Ci = w.size(1), T = w.numel() / std::max<int64_t>(Co * Ci, 1);
  Tensor m;
  if (rows_are_pixels) {
    std::vector<int64_t> perm;
    for (int64_t i = 2; i < w.dim(); ++i) perm.push_back(i);
    perm.push_back(1);
    perm.push_back(0);
    m = w.permute(perm).reshape({T * Ci, Co});
  } else {
    m = w.reshape({Co, Ci * T});
  }
  return m.unsqueeze(0);
}

// The forward on the gathered patches P (in p's order, with or without samples_inner).
void forward_gemm(const Patches& p, const Tensor& P, const Tensor& weight,
                  const std::optional<Tensor>& bias, const Tensor& output) {
  const bool tf32 = tf32_allowed_for_conv();
  const Tensor Pm = patch_matrix(p, P);
  const Tensor w = shared(weight_matrix(weight, p.rows_are_pixels), p.N);
  const Tensor y = pixel_rows(output);  // [N, L, C_out]
  if (p.rows_are_pixels) {
    gemm(Pm, w, y, tf32);                  // [L, TC] x [TC, Co]
  } else {
    gemm(w, Pm, y.transpose(1, 2), tf32);  // [Co, CT] x [CT, L]
  }
  if (bias.has_value() && bias->defined()) {
    std::vector<int64_t> shape(output.dim(), 1);
    shape[1] = output.size(1);
    output.add_(bias->view(shape));
  }
}

// The weight-grad on the gathered patches P (in p's order: pixel rows, or NC* with samples_inner).
void weight_grad_gemm(const Patches& p, const Tensor& P, const Tensor& grad_output,
                      const Tensor& grad_weight) {
  TORCH_INTERNAL_ASSERT(p.rows_are_pixels || p.samples_inner, "convx: weight-grad patches out of order");
  const auto k = grad_weight.sizes().slice(2);
  const int64_t Co = grad_weight.size(0), NL = p.N * p.L;
  // Summed in float32 (16-bit partial sums would round at each step); a float32 NC* weight-grad
  // is written in place.
  const bool direct = !p.rows_are_pixels && grad_weight.scalar_type() == at::kFloat &&
                      grad_weight.is_contiguous();
  Tensor acc = direct ? grad_weight.view({1, Co, p.C * p.T})
                      : at::empty({1, Co, p.T * p.C}, grad_weight.options().dtype(at::kFloat));
  // One GEMM [Co, (N, L)] x [(N, L), TC or CT]: the coarse operand's (sample, pixel) rows as one
  // uniform dim, a view for channels-last, a copy of [C_out, N, L] (a view for N == 1) for NC*.
  const Tensor dy = p.rows_are_pixels ? pixel_rows(grad_output).reshape({NL, Co}).t()
                                      : grad_output.transpose(0, 1).reshape({Co, NL});
  const Tensor Pm = p.rows_are_pixels ? P.view({1, NL, p.T * p.C})
                                      : P.view({1, p.C * p.T, NL}).transpose(1, 2);
  gemm(dy.unsqueeze(0), Pm, acc, tf32_allowed_for_conv());
  if (direct) return;
  // acc's columns are (taps, C_in) or (C_in, taps): back to [C_out, C_in, k...].
  std::vector<int64_t> shape{Co};
  if (p.rows_are_pixels) {
    shape.insert(shape.end(), k.begin(), k.end());
    shape.push_back(p.C);
    std::vector<int64_t> perm{0, static_cast<int64_t>(k.size()) + 1};
    for (size_t i = 0; i < k.size(); ++i) perm.push_back(1 + i);
    grad_weight.copy_(acc.view(shape).permute(perm));
  } else {
    grad_weight.copy_(acc.view(grad_weight.sizes()));
  }
}

}  // namespace

bool patch_rows_are_pixels(const Tensor& fine) { return fine.size(1) > 1 && fine.stride(1) == 1; }

bool patch_gemm_applies(const ConvArgs& a, const Tensor& fine, const Tensor& weight,
                        const Tensor& coarse) {
  const auto t = fine.scalar_type();
  if (t != at::kHalf && t != at::kBFloat16 && !(t == at::kFloat && tf32_allowed_for_conv())) return false;
  if (a.groups != 1) return false;
  // cuBLAS is deterministic only under a fixed workspace configuration: leave those runs to
  // cuDNN's deterministic engines.
  auto& ctx = at::globalContext();
  if (ctx.deterministicCuDNN() || ctx.deterministicAlgorithms()) return false;
  for (int64_t i = 0; i < a.rank; ++i) {
    const int64_t k = weight.size(2 + i);
    if (a.stride[i] != k || a.padding[i] != 0 || a.dilation[i] != 1) return false;
    if (coarse.size(2 + i) != fine.size(2 + i) / k) return false;
    if (!a.output_padding.empty() && a.output_padding[i] != 0) return false;
  }
  // Any layout: pixel_rows is a view of a dense NC* / channels-last coarse tensor (a unit
  // stride cuBLAS reads in place); gemm copies anything else.
  return fine.numel() > 0 && coarse.numel() > 0;
}

void patch_gemm_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const Tensor& output) {
  const auto coarse = output.sizes().slice(2), k = weight.sizes().slice(2);
  const Patches p = patches_of(input, coarse, k);
  forward_gemm(p, gather_patches(p, input, coarse, k), weight, bias, output);
}

void patch_gemm_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                          const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const auto coarse = grad_output.sizes().slice(2), k = weight.sizes().slice(2);
  const Patches p = patches_of(grad_input, coarse, k);
  Tensor P = at::empty(p.shape, grad_input.options());
  const Tensor Pm = patch_matrix(p, P);
  const Tensor w = shared(weight_matrix(weight, p.rows_are_pixels), p.N);
  const Tensor dy = pixel_rows(grad_output);  // [N, L, C_out]
  if (p.rows_are_pixels) {
    gemm(dy, w.transpose(1, 2), Pm, tf32_allowed_for_conv());                  // [L, Co] x [Co, TC]
  } else {
    gemm(w.transpose(1, 2), dy.transpose(1, 2), Pm, tf32_allowed_for_conv());  // [CT, Co] x [Co, L]
  }
  // Scatter P into the fine tensor, the bias added on the way (one pass): patch_scatter.cu's
  // kernel for dense outputs tiled exactly by the windows, a permuted copy otherwise. Trailing
  // fine pixels beyond the last window (an input-grad of an input not divisible by the stride)
  // receive no window: they are zero, or the bias.
  bool trailing = false;
  for (size_t i = 0; i < k.size(); ++i) trailing = trailing || grad_input.size(2 + i) != coarse[i] * k[i];
  if (!trailing && patch_scatter(P, p.rows_are_pixels, coarse, k, bias, grad_input)) return;
  if (trailing) {
    if (bias.has_value() && bias->defined()) {
      std::vector<int64_t> shape(grad_input.dim(), 1);
      shape[1] = grad_input.size(1);
      grad_input.copy_(bias->view(shape).expand_as(grad_input));
    } else {
      grad_input.zero_();
    }
  }
  std::vector<int64_t> inverse(p.order.size());
  for (size_t i = 0; i < p.order.size(); ++i) inverse[p.order[i]] = i;
  const Tensor src = P.permute(inverse);
  Tensor dst = split_windows(grad_input, coarse, k);
  if (bias.has_value() && bias->defined()) {
    std::vector<int64_t> shape(dst.dim(), 1);
    shape[1] = grad_input.size(1);
    at::add_out(dst, src, bias->view(shape));
  } else {
    dst.copy_(src);
  }
}

void patch_gemm_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                            const Tensor& grad_weight) {
  const auto coarse = grad_output.sizes().slice(2), k = grad_weight.sizes().slice(2);
  const Patches p = patches_of(input, coarse, k, /*samples_inner=*/true);
  weight_grad_gemm(p, gather_patches(p, input, coarse, k), grad_output, grad_weight);
}

// One gather in the weight-grad's order (NC*: [(C, taps), N, L]); the forward reads it as
// per-sample matrices whose rows step over the samples (patch_matrix).
void patch_gemm_conv_and_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                                     const Tensor& grad_output, const Tensor& output,
                                     const Tensor& grad_weight) {
  const auto coarse = output.sizes().slice(2), k = weight.sizes().slice(2);
  const Patches p = patches_of(input, coarse, k, /*samples_inner=*/true);
  const Tensor P = gather_patches(p, input, coarse, k);
  forward_gemm(p, P, weight, std::nullopt, output);
  weight_grad_gemm(p, P, grad_output, grad_weight);
}

}  // namespace convx::cuda
