#include "ops/front.h"

#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace convx {
namespace {

template <typename T>
std::string str(c10::ArrayRef<T> v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

void check_list(const char* op, const char* name, const std::vector<int64_t>& v, int64_t rank,
                int64_t min_value) {
  TORCH_CHECK(static_cast<int64_t>(v.size()) == rank, op, ": expected ", name, " to have ", rank,
              " element(s) (one per spatial dimension), but got ", str(c10::IntArrayRef(v)));
  for (int64_t x : v) {
    TORCH_CHECK(x >= min_value, op, ": expected ", name, " to be ",
                min_value == 0 ? "non-negative" : "positive", ", but got ", name, "=",
                str(c10::IntArrayRef(v)));
  }
}

void check_hyper(const ConvArgs& a, const char* op, bool transposed) {
  check_list(op, "stride", a.stride, a.rank, 1);
  check_list(op, "padding", a.padding, a.rank, 0);
  check_list(op, "dilation", a.dilation, a.rank, 1);
  TORCH_CHECK(a.groups > 0, op, ": expected groups to be positive, but got groups=", a.groups);
  if (transposed) {
    check_list(op, "output_padding", a.output_padding, a.rank, 0);
    for (int64_t i = 0; i < a.rank; ++i) {
      TORCH_CHECK(a.output_padding[i] < a.stride[i] || a.output_padding[i] < a.dilation[i], op,
                  ": expected output_padding to be smaller than either stride or dilation, but got "
                  "output_padding=", str(c10::IntArrayRef(a.output_padding)), ", stride=",
                  str(c10::IntArrayRef(a.stride)), ", dilation=", str(c10::IntArrayRef(a.dilation)));
    }
  }
}

void check_dtype(const char* op, const char* name, const Tensor& t) {
  auto s = t.scalar_type();
  TORCH_CHECK(s == at::kDouble || s == at::kFloat || s == at::kHalf || s == at::kBFloat16, op,
              ": expected ", name, " to have dtype float64, float32, float16 or bfloat16, but got ", s);
}

void check_same(const char* op, const char* name, const Tensor& t, const char* ref_name,
                const Tensor& ref) {
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), op, ": expected ", name,
              " to have the same dtype as ", ref_name, " (", ref.scalar_type(), "), but got ",
              t.scalar_type());
  TORCH_CHECK(t.device() == ref.device(), op, ": expected ", name, " to be on the same device as ",
              ref_name, " (", ref.device(), "), but got ", t.device());
}

void check_dims(const char* op, const char* name, const Tensor& t, int64_t rank, bool weight) {
  if (weight) {
    TORCH_CHECK(t.dim() == rank + 2, op, ": expected ", name, " to be ", rank + 2,
                "-D, but got ", name, " of size ", str(t.sym_sizes()));
  } else {
    TORCH_CHECK(t.dim() == rank + 1 || t.dim() == rank + 2, op, ": expected ", name, " to be ",
                rank + 1, "-D (unbatched) or ", rank + 2, "-D (batched), but got ", name,
                " of size ", str(t.sym_sizes()));
  }
}

void check_bias(const char* op, const std::optional<Tensor>& bias, const Tensor& input,
                const c10::SymInt& out_channels) {
  if (!bias.has_value() || !bias->defined()) return;
  check_same(op, "bias", *bias, "input", input);
  TORCH_CHECK(bias->dim() == 1 && bias->sym_size(0) == out_channels, op,
              ": expected bias to be 1-D with ", out_channels,
              " elements (the output channels), but got bias of size ", str(bias->sym_sizes()));
}

// The leading common part: ranks, dtypes, devices.
void check_operands(const ConvArgs& a, const Tensor& input, const Tensor& weight, const char* op,
                    const char* input_name) {
  check_dims(op, input_name, input, a.rank, false);
  check_dims(op, "weight", weight, a.rank, true);
  check_dtype(op, input_name, input);
  check_same(op, "weight", weight, input_name, input);
}

// Spatial sizes of a (batched or unbatched) activation.
c10::SymIntArrayRef spatial(const Tensor& t, int64_t rank) {
  return t.sym_sizes().slice(t.dim() - rank);
}
int64_t ksize(const Tensor& w, int64_t i) { return static_size(w, 2 + i); }
c10::SymInt channels(const Tensor& t, int64_t rank) { return t.sym_size(t.dim() - rank - 1); }

void check_kernel_fits(const ConvArgs& a, c10::SymIntArrayRef in, c10::SymIntArrayRef k,
                       const char* op) {
  for (int64_t i = 0; i < a.rank; ++i) {
    auto padded = in[i] + 2 * a.padding[i];
    auto extent = (k[i] - 1) * a.dilation[i] + 1;
    TORCH_CHECK(padded >= extent, op, ": calculated padded input size per channel ", str(in),
                " + 2*padding ", str(c10::IntArrayRef(a.padding)), " is smaller than the dilated "
                "kernel size ", str(k), " (dilation ", str(c10::IntArrayRef(a.dilation)),
                ") in spatial dimension ", i, ": the kernel can't be larger than the padded input");
  }
}

}  // namespace

ConvArgs make_args(int64_t rank, c10::IntArrayRef stride, c10::IntArrayRef padding,
                   c10::IntArrayRef dilation, int64_t groups, c10::IntArrayRef output_padding) {
  ConvArgs a;
  a.rank = rank;
  a.stride = stride.vec();
  a.padding = padding.vec();
  a.dilation = dilation.vec();
  a.groups = groups;
  a.output_padding = output_padding.empty() ? std::vector<int64_t>(rank, 0) : output_padding.vec();
  return a;
}

c10::SymInt conv_output_size(const c10::SymInt& in, int64_t k, int64_t s, int64_t p, int64_t d,
                             const char* op, int64_t dim) {
  auto out = (in + 2 * p - d * (k - 1) - 1) / s + 1;
  TORCH_CHECK(out > 0, op, ": output size is non-positive (", out, ") in spatial dimension ", dim);
  return out;
}

std::vector<c10::SymInt> conv_output_sizes(const ConvArgs& a, const Tensor& input,
                                           const Tensor& weight) {
  std::vector<c10::SymInt> out(input.sym_sizes().begin(), input.sym_sizes().end());
  out[input.dim() - a.rank - 1] = weight.sym_size(0);
  auto in = spatial(input, a.rank);
  for (int64_t i = 0; i < a.rank; ++i) {
    out[input.dim() - a.rank + i] =
        conv_output_size(in[i], ksize(weight, i), a.stride[i], a.padding[i], a.dilation[i],
                         "convx", i);
  }
  return out;
}

std::vector<c10::SymInt> conv_transpose_output_sizes(const ConvArgs& a, const Tensor& input,
                                                     const Tensor& weight) {
  std::vector<c10::SymInt> out(input.sym_sizes().begin(), input.sym_sizes().end());
  out[input.dim() - a.rank - 1] = weight.sym_size(1) * a.groups;
  auto in = spatial(input, a.rank);
  for (int64_t i = 0; i < a.rank; ++i) {
    out[input.dim() - a.rank + i] = (in[i] - 1) * a.stride[i] - 2 * a.padding[i] +
                                    a.dilation[i] * (ksize(weight, i) - 1) +
                                    a.output_padding[i] + 1;
  }
  return out;
}

void check_rank(int64_t rank, const char* op) {
  TORCH_CHECK(rank >= 1 && rank <= 3, op, ": expected rank to be 1, 2 or 3, but got rank=", rank);
}

void check_conv(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                const std::optional<Tensor>& bias, const char* op) {
  check_hyper(a, op, false);
  check_operands(a, input, weight, op, "input");
  auto c_in = channels(input, a.rank);
  TORCH_CHECK(weight.sym_size(0) % a.groups == 0, op, ": expected weight.size(0) (out_channels=",
              weight.sym_size(0), ") to be divisible by groups=", a.groups);
  TORCH_CHECK(c_in == weight.sym_size(1) * a.groups, op, ": expected input to have ",
              weight.sym_size(1) * a.groups, " channels (weight of size ", str(weight.sym_sizes()),
              " with groups=", a.groups, "), but got input of size ", str(input.sym_sizes()));
  check_bias(op, bias, input, weight.sym_size(0));
  check_kernel_fits(a, spatial(input, a.rank), weight.sym_sizes().slice(2), op);
  conv_output_sizes(a, input, weight);  // positivity
}

void check_depthwise(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias, const char* op) {
  check_operands(a, input, weight, op, "input");
  auto c = channels(input, a.rank);
  TORCH_CHECK(weight.sym_size(1) == 1, op, ": expected a depthwise weight of size [C*m, 1, ",
              "*kernel] (dim 1 equal to 1), but got weight of size ", str(weight.sym_sizes()));
  TORCH_CHECK(weight.sym_size(0) % c == 0, op, ": expected weight.size(0) to be a multiple of the ",
              "input channels (", c, "), but got weight of size ", str(weight.sym_sizes()));
  check_conv(a, input, weight, bias, op);
}

void check_conv_transpose(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias, const char* op) {
  check_hyper(a, op, true);
  check_operands(a, input, weight, op, "input");
  auto c_in = channels(input, a.rank);
  TORCH_CHECK(weight.sym_size(0) % a.groups == 0, op, ": expected weight.size(0) (in_channels=",
              weight.sym_size(0), ") to be divisible by groups=", a.groups);
  TORCH_CHECK(c_in == weight.sym_size(0), op, ": expected input to have ", weight.sym_size(0),
              " channels (weight of size ", str(weight.sym_sizes()), "), but got input of size ",
              str(input.sym_sizes()));
  check_bias(op, bias, input, weight.sym_size(1) * a.groups);
  auto out = conv_transpose_output_sizes(a, input, weight);
  for (int64_t i = 0; i < a.rank; ++i) {
    TORCH_CHECK(out[input.dim() - a.rank + i] > 0, op, ": output size is non-positive (",
                str(c10::SymIntArrayRef(out)), ")");
  }
}

void check_input_grad(const ConvArgs& a, c10::SymIntArrayRef input_size, const Tensor& weight,
                      const Tensor& grad_output, const char* op) {
  check_hyper(a, op, false);
  check_operands(a, grad_output, weight, op, "grad_output");
  int64_t n = static_cast<int64_t>(input_size.size());
  TORCH_CHECK(n == grad_output.dim(), op, ": expected input_size to have ", grad_output.dim(),
              " elements (the dims of grad_output), but got input_size=", str(input_size));
  TORCH_CHECK(weight.sym_size(0) % a.groups == 0, op, ": expected weight.size(0) (out_channels=",
              weight.sym_size(0), ") to be divisible by groups=", a.groups);
  TORCH_CHECK(input_size[n - a.rank - 1] == weight.sym_size(1) * a.groups, op,
              ": expected input_size to have ", weight.sym_size(1) * a.groups,
              " channels (weight of size ", str(weight.sym_sizes()), " with groups=", a.groups,
              "), but got input_size=", str(input_size));
  TORCH_CHECK(channels(grad_output, a.rank) == weight.sym_size(0), op,
              ": expected grad_output to have ", weight.sym_size(0),
              " channels (weight.size(0)), but got grad_output of size ", str(grad_output.sym_sizes()));
  if (n == a.rank + 2) {
    TORCH_CHECK(input_size[0] == grad_output.sym_size(0), op, ": expected input_size[0] (batch ",
                input_size[0], ") to equal grad_output.size(0) (", grad_output.sym_size(0), ")");
  }
  auto in = input_size.slice(n - a.rank);
  check_kernel_fits(a, in, weight.sym_sizes().slice(2), op);
  auto go = spatial(grad_output, a.rank);
  for (int64_t i = 0; i < a.rank; ++i) {
    auto expect = conv_output_size(in[i], ksize(weight, i), a.stride[i], a.padding[i],
                                   a.dilation[i], op, i);
    TORCH_CHECK(expect == go[i], op, ": expected grad_output spatial size ", go[i],
                " in dimension ", i, " to equal the convolution output size ", expect,
                " of input_size=", str(input_size));
  }
}

void check_weight_grad(const ConvArgs& a, const Tensor& input, c10::SymIntArrayRef weight_size,
                       const Tensor& grad_output, const char* op) {
  check_hyper(a, op, false);
  check_dims(op, "input", input, a.rank, false);
  check_dtype(op, "input", input);
  check_same(op, "grad_output", grad_output, "input", input);
  TORCH_CHECK(grad_output.dim() == input.dim(), op, ": expected grad_output to have ", input.dim(),
              " dims like input, but got grad_output of size ", str(grad_output.sym_sizes()));
  TORCH_CHECK(static_cast<int64_t>(weight_size.size()) == a.rank + 2, op,
              ": expected weight_size to have ", a.rank + 2, " elements, but got weight_size=",
              str(weight_size));
  for (auto& s : weight_size) {
    TORCH_CHECK(s > 0, op, ": expected weight_size to be positive, but got ", str(weight_size));
  }
  TORCH_CHECK(weight_size[0] % a.groups == 0, op, ": expected weight_size[0] (out_channels=",
              weight_size[0], ") to be divisible by groups=", a.groups);
  TORCH_CHECK(channels(input, a.rank) == weight_size[1] * a.groups, op, ": expected input to have ",
              weight_size[1] * a.groups, " channels (weight_size=", str(weight_size),
              " with groups=", a.groups, "), but got input of size ", str(input.sym_sizes()));
  TORCH_CHECK(channels(grad_output, a.rank) == weight_size[0], op,
              ": expected grad_output to have ", weight_size[0],
              " channels (weight_size[0]), but got grad_output of size ",
              str(grad_output.sym_sizes()));
  if (input.dim() == a.rank + 2) {
    TORCH_CHECK(input.sym_size(0) == grad_output.sym_size(0), op, ": expected grad_output batch ",
                grad_output.sym_size(0), " to equal input batch ", input.sym_size(0));
  }
  auto in = spatial(input, a.rank);
  check_kernel_fits(a, in, weight_size.slice(2), op);
  auto go = spatial(grad_output, a.rank);
  for (int64_t i = 0; i < a.rank; ++i) {
    auto expect = conv_output_size(in[i], weight_size[2 + i].guard_int(__FILE__, __LINE__),
                                   a.stride[i], a.padding[i], a.dilation[i], op, i);
    TORCH_CHECK(expect == go[i], op, ": expected grad_output spatial size ", go[i],
                " in dimension ", i, " to equal the convolution output size ", expect,
                " of input of size ", str(input.sym_sizes()));
  }
}

bool is_channels_last(const Tensor& t) {
  // Channel stride 1 and the spatial dims packed behind it, outermost first: (N, *spatial, C)
  // in memory. Size-1 dims may have any stride.
  if (t.dim() < 3 || t.dim() > 5) return false;
  if (t.dim() == 4) return t.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
  if (t.dim() == 5) return t.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d;
  // rank 1: (N, C, L) with strides (L*C, 1, C); a C of 1 is plain contiguous.
  return t.sym_size(1) > 1 && t.sym_stride(1) == 1 &&
         (t.sym_size(2) == 1 || t.sym_stride(2) == t.sym_size(1));
}

bool prefer_channels_last(const Tensor& a, const Tensor& b) {
  // aten's rule for 2-D and 3-D: input or weight channels-last. For rank 1 the weight is too
  // small for its layout to say anything; only the activation counts.
  if (a.dim() == 3) return is_channels_last(a);
  return is_channels_last(a) || is_channels_last(b);
}

Tensor new_tensor(c10::SymIntArrayRef sizes, const at::TensorOptions& opts, bool channels_last) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  std::vector<c10::SymInt> strides(n);
  if (channels_last && n >= 3) {
    // order in memory: dim0, dims 2..n-1, dim1 (innermost)
    c10::SymInt s = 1;
    strides[1] = s;
    s = s * sizes[1].max(c10::SymInt(1));
    for (int64_t i = n - 1; i >= 2; --i) {
      strides[i] = s;
      s = s * sizes[i].max(c10::SymInt(1));
    }
    strides[0] = s;
  } else {
    c10::SymInt s = 1;
    for (int64_t i = n - 1; i >= 0; --i) {
      strides[i] = s;
      s = s * sizes[i].max(c10::SymInt(1));
    }
  }
  return at::empty_strided_symint(sizes, strides, opts);
}

bool has_layout(const Tensor& t, bool channels_last) {
  const int64_t n = t.dim();
  std::vector<int64_t> order(n);  // dims from innermost to outermost
  if (channels_last && n >= 3) {
    order[0] = 1;
    for (int64_t i = 1; i < n - 1; ++i) order[i] = n - i;
    order[n - 1] = 0;
  } else {
    for (int64_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  }
  int64_t expect = 1;
  for (int64_t d : order) {
    if (t.size(d) != 1 && t.stride(d) != expect) return false;
    expect *= t.size(d);
  }
  return true;
}

Tensor to_layout(const Tensor& t, bool channels_last) {
  if (has_layout(t, channels_last)) return t;
  auto out = new_tensor(t.sym_sizes(), t.options(), channels_last);
  out.copy_(t);
  return out;
}

Geometry geometry(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                  const Tensor& output) {
  Geometry g;
  g.batch = input.size(0);
  g.in_channels = input.size(1);
  g.out_channels = output.size(1);
  g.groups = a.groups;
  const int64_t off = 3 - a.rank;
  for (int64_t i = 0; i < a.rank; ++i) {
    g.input[off + i] = input.size(2 + i);
    g.output[off + i] = output.size(2 + i);
    g.kernel[off + i] = weight.size(2 + i);
    g.stride[off + i] = a.stride[i];
    g.padding[off + i] = a.padding[i];
    g.dilation[off + i] = a.dilation[i];
  }
  return g;
}

}  // namespace convx

namespace convx {

std::string op_name(const char* family, int64_t rank) {
  const std::string f = family, r = std::to_string(rank);
  // The gradient operators put the rank before the suffix: conv2d_input_grad.
  for (const char* suffix : {"_input_grad", "_weight_grad"}) {
    const std::string s = suffix;
    if (f.size() > s.size() && f.compare(f.size() - s.size(), s.size(), s) == 0) {
      return "convx::" + f.substr(0, f.size() - s.size()) + r + "d" + s;
    }
  }
  return "convx::" + f + r + "d";
}

}  // namespace convx
