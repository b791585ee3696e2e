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
// (patch_gather.cu, patch_scatter.cu). The channels-last forward needs no gather where the
// fine tensor's strides allow: with the taps of all but the last dim fixed, every window's
// remaining taps are one contiguous run of k_last * C elements at a stride that is uniform over
// two groups of window dims (a strided-batched GEMM's batch and rows), so it runs as one such
// GEMM per outer tap, accumulating into the output (beta = 1).
// The GEMMs run in cuBLAS (torch's handle, stream and workspace: graph-capturable) at the
// precision rules of a convolution, not of a matmul: float32 uses TF32 exactly when
// torch.backends.cudnn.allow_tf32 allows it (cuBLAS would otherwise follow the matmul flag).
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/util/Exception.h>
#include <cublas_v2.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

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
// unit row stride, M itself with ld = its column stride (op T yields M^T).
ColMajor transposed_view(const Tensor& m) {
  const int64_t rows = m.size(1), cols = m.size(2);
  if (m.stride(2) == 1 || cols == 1) {
    const int64_t ld = rows > 1 ? m.stride(1) : cols;
    if (ld >= std::max<int64_t>(cols, 1)) return {CUBLAS_OP_N, ld};
  }
  const int64_t ld = cols > 1 ? m.stride(2) : rows;
  TORCH_INTERNAL_ASSERT(m.stride(1) == 1 || rows == 1, "convx: patch GEMM operand without a unit stride");
  return {CUBLAS_OP_T, std::max<int64_t>(ld, rows)};
}

// C[b] = A[b] * B[b] + beta * C[b] for [batch, rows, cols] views (batch stride 0 = shared).
void gemm(Tensor A, Tensor B, Tensor C, float beta, bool tf32) {
  if (!(C.stride(2) == 1 || C.size(2) == 1)) {  // C^T = B^T A^T: cuBLAS writes column-major
    std::swap(A, B);
    A = A.transpose(1, 2), B = B.transpose(1, 2), C = C.transpose(1, 2);
  }
  int64_t batch = C.size(0), m = C.size(1);
  const int64_t n = C.size(2), k = A.size(2);
  // One GEMM of batch * m rows when A and C have uniform rows across samples and B is shared.
  if (batch > 1 && B.stride(0) == 0 && A.stride(2) == 1 && C.stride(2) == 1 &&
      A.stride(0) == m * A.stride(1) && C.stride(0) == m * C.stride(1)) {
    A = A.reshape({1, batch * m, k});
    C = C.view({1, batch * m, n});
    batch = 1, m = C.size(1);
  }
  const ColMajor x = transposed_view(B), y = transposed_view(A);
  const int64_t ldc = m > 1 ? C.stride(1) : n;
  TORCH_CHECK(m <= kIntMax && n <= kIntMax && k <= kIntMax && x.ld <= kIntMax && y.ld <= kIntMax &&
                  ldc <= kIntMax && batch <= kIntMax,
              "convx: patch GEMM sizes beyond cuBLAS's 32-bit range");
  const cublasComputeType_t compute =
      A.scalar_type() == at::kFloat && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.f;
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
  p.rows_are_pixels = fine.size(1) > 1 && fine.stride(1) == 1;
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

// P as per-sample matrices: [N, L, T*C] (rows = pixels) or [N, C*T, L].
Tensor patch_matrix(const Patches& p, const Tensor& P) {
  return p.rows_are_pixels ? P.view({p.N, p.L, p.T * p.C}) : P.view({p.N, p.C * p.T, p.L});
}

// P, contiguous in its order: patch_gather.cu's kernel, a permuted copy for views it declines.
Tensor gather_patches(const Patches& p, const Tensor& fine, at::IntArrayRef coarse, at::IntArrayRef k) {
  Tensor P = at::empty(p.shape, fine.options());
  if (!patch_gather(fine, p.rows_are_pixels, coarse, k, p.samples_inner, P)) {
    P.copy_(split_windows(fine, coarse, k).permute(p.order));
  }
  return P;
}

// A matrix view cuBLAS can read (one unit stride), else its contiguous copy.
Tensor with_unit_stride(const Tensor& m) {
  const bool ok = m.stride(1) == 1 || m.size(1) == 1 || m.stride(0) == 1 || m.size(0) == 1;
  return ok ? m : m.contiguous();
}

// CONVX_PATCH_GATHER=always (temporary, for the benchmark): the channels-last forward and
// weight-grad gather even where they could read the fine tensor in place.
bool gather_forced() {
  const char* e = std::getenv("CONVX_PATCH_GATHER");
  return e && std::strcmp(e, "always") == 0;
}

// The windows of a channels-last fine tensor read in place (see the top): with the taps of all
// but the last dim fixed (`outer` combinations), window w's remaining taps are the K = k_last * C
// contiguous elements at fine offset batch.fs * b + rows.fs * m (+ the outer taps' offset), and
// its pixel in the coarse tensor is at batch.cs * b + rows.cs * m.
struct Dim { int64_t size, fs, cs; };
struct InPlace { Dim batch, rows; int64_t K, outer; };

// None where the fine tensor's channels and last dim are not dense, the coarse tensor's channels
// are not unit-stride, or the window dims (n, c_1, ..., c_r) do not fold into two groups that
// both tensors step uniformly (e.g. 3-D, or trailing fine rows beyond c * k with N > 1).
std::optional<InPlace> in_place_windows(const Tensor& fine, const Tensor& coarse, at::IntArrayRef k) {
  const int64_t r = k.size(), C = fine.size(1);
  if (fine.stride(1) != 1 || (fine.size(1 + r) > 1 && fine.stride(1 + r) != C)) return std::nullopt;
  if (coarse.stride(1) != 1 && coarse.size(1) > 1) return std::nullopt;
  std::vector<Dim> dims;  // size-1 dims dropped, neighbours folded
  for (int64_t d = 0; d <= r; ++d) {
    const Dim x = d == 0 ? Dim{fine.size(0), fine.stride(0), coarse.stride(0)}
                         : Dim{coarse.size(1 + d), k[d - 1] * fine.stride(1 + d), coarse.stride(1 + d)};
    if (x.size == 1) continue;
    if (!dims.empty() && dims.back().fs == x.fs * x.size && dims.back().cs == x.cs * x.size) {
      dims.back() = Dim{dims.back().size * x.size, x.fs, x.cs};
    } else {
      dims.push_back(x);
    }
  }
  if (dims.size() > 2) return std::nullopt;
  while (dims.size() < 2) dims.insert(dims.begin(), Dim{1, 0, 0});
  // The larger group as the GEMM's rows (or reduction), the other as its batch.
  const bool first = dims[0].size >= dims[1].size;
  return InPlace{first ? dims[1] : dims[0], first ? dims[0] : dims[1], k[r - 1] * C,
                 std::accumulate(k.begin(), k.end() - 1, int64_t(1), std::multiplies<>())};
}

// The fine offset of outer tap combination tau (the last outer dim fastest, as the weight
// matrix's rows (taps, C_in) count them).
int64_t outer_tap_offset(const Tensor& fine, at::IntArrayRef k, int64_t tau) {
  int64_t off = 0;
  for (int64_t d = static_cast<int64_t>(k.size()) - 2; d >= 0; --d) {
    off += (tau % k[d]) * fine.stride(2 + d);
    tau /= k[d];
  }
  return off;
}

// The fine tensor as [batch, rows, K] from offset off (batch indices: `batch` of them).
Tensor fine_operand(const Tensor& fine, const InPlace& w, int64_t off, int64_t batch) {
  return fine.as_strided({batch, w.rows.size, w.K}, {w.batch.fs, w.rows.fs, 1}, fine.storage_offset() + off);
}

// The channels-last forward without a gather: per outer tap, [M, K] x [K, Co] for every batch
// index, accumulated into the output (beta = 1, so 16-bit outputs round once per outer tap).
// wm: the weight as [1, (taps, C_in), C_out]. False, nothing written, where it does not apply.
bool forward_in_place(const Tensor& fine, const Tensor& wm, const Tensor& out, at::IntArrayRef k, bool tf32) {
  const auto w = in_place_windows(fine, out, k);
  if (!w) return false;
  const Tensor y = out.as_strided({w->batch.size, w->rows.size, out.size(1)}, {w->batch.cs, w->rows.cs, 1},
                                  out.storage_offset());
  for (int64_t tau = 0; tau < w->outer; ++tau) {
    gemm(fine_operand(fine, *w, outer_tap_offset(fine, k, tau), w->batch.size),
         shared(wm.narrow(1, tau * w->K, w->K), w->batch.size), y, tau ? 1.f : 0.f, tf32);
  }
  return true;
}

// The channels-last weight-grad without a gather: per outer tap and batch index,
// [Co, M] x [M, K] into float32 partial sums [batch, Co, (taps, C_in)], then their sum over the
// batch (deterministic). Declined (false) where the partials would outgrow the fine tensor
// (more traffic than a gather). acc: [1, Co, (taps, C_in)] float32.
bool weight_grad_in_place(const Tensor& fine, const Tensor& coarse, at::IntArrayRef k, Tensor acc,
                          bool tf32) {
  const auto w = in_place_windows(fine, coarse, k);
  const int64_t Co = coarse.size(1), TC = acc.size(2);
  if (!w || w->batch.size * Co * TC > fine.numel()) return false;
  // CONVX_PATCH_WGRAD_CHUNK=c (temporary, for the benchmark): c batch indices per GEMM call,
  // later chunks accumulating into the same c partials (beta = 1), so that the partials can
  // stay in L2; unset: all at once.
  const int64_t B = w->batch.size;
  int64_t chunk = B;
  if (const char* e = std::getenv("CONVX_PATCH_WGRAD_CHUNK"); e && std::atoll(e) > 0) {
    chunk = std::min<int64_t>(B, std::atoll(e));
  }
  const Tensor part = B == 1 ? acc : at::empty({chunk, Co, TC}, acc.options());
  for (int64_t b0 = 0; b0 < B; b0 += chunk) {
    const int64_t nb = std::min(chunk, B - b0);
    const Tensor x = coarse.as_strided({nb, Co, w->rows.size}, {w->batch.cs, 1, w->rows.cs},
                                       coarse.storage_offset() + b0 * w->batch.cs);
    for (int64_t tau = 0; tau < w->outer; ++tau) {
      gemm(x, fine_operand(fine, *w, outer_tap_offset(fine, k, tau) + b0 * w->batch.fs, nb),
           part.narrow(0, 0, nb).narrow(2, tau * w->K, w->K), b0 ? 1.f : 0.f, tf32);
    }
  }
  if (B > 1) at::sum_out(acc, part, {0}, /*keepdim=*/true);
  return true;
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
  if (!(m.stride(0) == 1 || m.stride(1) == 1)) m = m.contiguous();
  return m.unsqueeze(0);
}

}  // namespace

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
  // stride cuBLAS reads in place) and one copy of anything else.
  return fine.numel() > 0 && coarse.numel() > 0;
}

void patch_gemm_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const Tensor& output) {
  const auto coarse = output.sizes().slice(2), k = weight.sizes().slice(2);
  const bool tf32 = tf32_allowed_for_conv();
  const Patches p = patches_of(input, coarse, k);
  const Tensor wm = weight_matrix(weight, p.rows_are_pixels);
  if (!(p.rows_are_pixels && !gather_forced() && forward_in_place(input, wm, output, k, tf32))) {
    const Tensor P = patch_matrix(p, gather_patches(p, input, coarse, k));
    const Tensor w = shared(wm, p.N);
    const Tensor y = pixel_rows(output);  // [N, L, C_out]
    if (p.rows_are_pixels) {
      gemm(P, w, y, 0.f, tf32);                  // [L, TC] x [TC, Co]
    } else {
      gemm(w, P, y.transpose(1, 2), 0.f, tf32);  // [Co, CT] x [CT, L]
    }
  }
  if (bias.has_value() && bias->defined()) {
    std::vector<int64_t> shape(output.dim(), 1);
    shape[1] = output.size(1);
    output.add_(bias->view(shape));
  }
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
    gemm(dy, w.transpose(1, 2), Pm, 0.f, tf32_allowed_for_conv());                  // [L, Co] x [Co, TC]
  } else {
    gemm(w.transpose(1, 2), dy.transpose(1, 2), Pm, 0.f, tf32_allowed_for_conv());  // [CT, Co] x [Co, L]
  }
  // Scatter P into the fine tensor, the bias added on the way (one pass): patch_scatter.cu's
  // kernel for dense outputs, a permuted copy otherwise.
  if (patch_scatter(P, p.rows_are_pixels, coarse, k, bias, grad_input)) return;
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
  const bool tf32 = tf32_allowed_for_conv();
  const Patches p = patches_of(input, coarse, k, /*samples_inner=*/true);
  const int64_t Co = grad_weight.size(0), NL = p.N * p.L;
  // Summed in float32 (16-bit partial sums would round at each step); a float32 NC* weight-grad
  // is written in place.
  const bool direct = !p.rows_are_pixels && grad_weight.scalar_type() == at::kFloat &&
                      grad_weight.is_contiguous();
  Tensor acc = direct ? grad_weight.view({1, Co, p.C * p.T})
                      : at::empty({1, Co, p.T * p.C}, grad_weight.options().dtype(at::kFloat));
  if (!(p.rows_are_pixels && !gather_forced() && weight_grad_in_place(input, grad_output, k, acc, tf32))) {
    const Tensor P = gather_patches(p, input, coarse, k);
    // One GEMM [Co, (N, L)] x [(N, L), TC or CT]: the coarse operand's (sample, pixel) rows as
    // one uniform dim, a view for channels-last, a copy of [C_out, N, L] (a view for N == 1)
    // for NC*.
    const Tensor dy = p.rows_are_pixels ? with_unit_stride(pixel_rows(grad_output).reshape({NL, Co})).t()
                                        : with_unit_stride(grad_output.transpose(0, 1).reshape({Co, NL}));
    const Tensor Pm = p.rows_are_pixels ? P.view({1, NL, p.T * p.C})
                                        : P.view({1, p.C * p.T, NL}).transpose(1, 2);
    gemm(dy.unsqueeze(0), Pm, acc, 0.f, tf32);
  }
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

}  // namespace convx::cuda
