// The few-channel data-grad gather (ops/conv/cuda/few_channel_gather.cuh) run on the CPU through
// shim.h and compared with aten's conv_transpose2d in float64: random operands rounded to the
// dtype under test, outputs poisoned with NaN (shared memory too, by the shim), odd sizes,
// strides 1-4, padding, output padding, dilation, groups, 1-4 result channels per group, NCHW /
// channels-last / strided views for each operand, misaligned channels-last input, several
// channel passes. The parameters come from the launcher's own prepare(). Run: few_channel_run.sh
#include "shim.h"
#include <ATen/ATen.h>
#include <cmath>
#include <cstdio>
#include <random>
#include "few_channel_gather.cuh"

using namespace convx;
using namespace convx::cuda;
using at::Tensor;

static int failures = 0, checked = 0, declined = 0;

struct Case {
  int N, Ci, Co, G, Hi, Wi, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw;
  int x_layout;  // 0 NCHW, 1 channels-last, 2 channels-last shifted by one element, 3 strided view
  int y_layout;  // 0 NCHW, 1 channels-last, 2 a strided view
  bool w_cl, bias;
};

template <typename T>
void run_one(const Case& c, at::ScalarType st, double tol) {
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  // Operands rounded to the dtype, kept in float64 for the reference.
  Tensor x64 = at::randn({c.N, c.Ci, c.Hi, c.Wi}, f64).to(st).to(at::kDouble);
  Tensor w64 = (at::randn({c.Ci, c.Co / c.G, c.kh, c.kw}, f64) / std::sqrt(double(c.Ci / c.G * c.kh * c.kw)))
                   .to(st).to(at::kDouble);
  Tensor b64 = at::randn({c.Co}, f64).to(st).to(at::kDouble);
  Tensor ref = at::conv_transpose2d(x64, w64, c.bias ? b64 : Tensor(), {c.sh, c.sw}, {c.ph, c.pw},
                                    {c.oph, c.opw}, c.G, {c.dh, c.dw});
  Tensor x = x64.to(st);
  if (c.x_layout == 1) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  if (c.x_layout == 2) {  // channels-last, one element past an aligned start
    Tensor buf = at::empty({x.numel() + 1}, x.options());
    x = buf.narrow(0, 1, x.numel()).view({c.N, c.Hi, c.Wi, c.Ci}).permute({0, 3, 1, 2});
    x.copy_(x64.to(st));
  }
  if (c.x_layout == 3) {  // every other column of a wider tensor
    Tensor wide = at::zeros({c.N, c.Ci, c.Hi, 2 * c.Wi}, x.options());
    x = wide.slice(3, 0, 2 * c.Wi, 2);
    x.copy_(x64.to(st));
  }
  Tensor w = w64.to(st);
  if (c.w_cl) w = w.contiguous(at::MemoryFormat::ChannelsLast);
  Tensor b = b64.to(st);
  const auto Ho = ref.size(2), Wo = ref.size(3);
  Tensor y;
  if (c.y_layout == 0) y = at::full({c.N, c.Co, Ho, Wo}, NAN, x.options());
  if (c.y_layout == 1) y = at::full({c.N, c.Co, Ho, Wo}, NAN, x.options()).contiguous(at::MemoryFormat::ChannelsLast);
  if (c.y_layout == 2) y = at::full({c.N, c.Co + 2, Ho, Wo + 3}, NAN, x.options()).slice(1, 1, c.Co + 1).slice(3, 2, Wo + 2);
  ConvArgs a;  // as make_args builds it (prepare reads no output padding: y's size has it)
  a.rank = 2;
  a.stride = {c.sh, c.sw};
  a.padding = {c.ph, c.pw};
  a.dilation = {c.dh, c.dw};
  a.groups = c.G;
  few_channel::Params p{};
  if (!few_channel::prepare(p, a, x, w, y, 132, 232448)) {  // the H100's
    ++declined;
    std::printf("declined: N%d Ci%d Co%d G%d %dx%d k%dx%d s%dx%d\n", c.N, c.Ci, c.Co, c.G, c.Hi, c.Wi, c.kh, c.kw, c.sh, c.sw);
    return;
  }
  const T* xp = x.const_data_ptr<T>();
  const T* wp = w.const_data_ptr<T>();
  const T* bp = c.bias ? b.const_data_ptr<T>() : nullptr;
  T* yp = y.mutable_data_ptr<T>();
  g_smem_bytes = p.smem;
  const auto body = [&] {
    switch (p.Cog) {
      case 1: few_channel::gather<T, 1>(xp, wp, bp, yp, p); break;
      case 2: few_channel::gather<T, 2>(xp, wp, bp, yp, p); break;
      case 3: few_channel::gather<T, 3>(xp, wp, bp, yp, p); break;
      default: few_channel::gather<T, 4>(xp, wp, bp, yp, p); break;
    }
  };
  launch(dim3{unsigned(p.blocks)}, dim3{unsigned(p.threads)}, body);
  Tensor got = y.to(at::kDouble);
  const double scale = std::max(1.0, ref.abs().max().item<double>());
  const double err = (got - ref).abs().max().item<double>() / scale;  // NaN when a value was not written
  ++checked;
  const bool ok = err <= tol;
  if (!ok) ++failures;
  std::printf("%s %-5s N%d Ci%d Co%d G%d %2dx%-2d k%dx%d s%dx%d p%dx%d op%dx%d d%dx%d x%d y%d wcl%d b%d | Q%d PH%d chunk%d vec%d smem%lld: err %.2e\n",
              ok ? "ok  " : "FAIL", c10::toString(st), c.N, c.Ci, c.Co, c.G, c.Hi, c.Wi, c.kh, c.kw, c.sh, c.sw,
              c.ph, c.pw, c.oph, c.opw, c.dh, c.dw, c.x_layout, c.y_layout, int(c.w_cl), int(c.bias), p.Q,
              p.PH, p.chunk, int(p.x_vec), (long long)p.smem, err);
}

void run(const Case& c) {
  run_one<float>(c, at::kFloat, 1e-5);
  run_one<c10::Half>(c, at::kHalf, 4e-3);
  run_one<c10::BFloat16>(c, at::kBFloat16, 2e-2);
}

int main() {
  at::manual_seed(0);
  // The autoencoder head (batch 2 of 128): 64 -> 3, 14² -> 32², k5 s2 op1, every layout.
  for (int xl = 0; xl < 4; ++xl)
    for (int yl = 0; yl < 3; ++yl) run({2, 64, 3, 1, 14, 14, 5, 5, 2, 2, 0, 0, 1, 1, 1, 1, xl, yl, xl == 1, yl != 1});
  // An RGB head 32 -> 3 k3 s2 p1 op1; a channel count that is not a multiple of 4; 1, 2, 4
  // channels; groups; dilation; stride 1, 3, 4 and mixed; kernels smaller than the stride.
  run({1, 32, 3, 1, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, false, true});
  run({2, 13, 2, 1, 7, 6, 4, 4, 2, 2, 1, 1, 0, 0, 1, 1, 0, 1, false, true});
  run({1, 6, 1, 1, 5, 9, 3, 5, 1, 1, 1, 2, 0, 0, 1, 1, 1, 0, true, false});
  run({1, 8, 4, 1, 6, 5, 3, 3, 3, 3, 1, 0, 2, 1, 1, 1, 0, 2, false, true});
  run({2, 12, 6, 3, 5, 7, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 1, 1, false, true});   // G3, 4 -> 2 per group
  run({1, 16, 8, 2, 6, 6, 3, 3, 2, 2, 2, 1, 0, 1, 2, 2, 3, 0, false, true});   // G2, dilation 2
  run({1, 10, 3, 1, 4, 5, 2, 3, 4, 3, 0, 1, 3, 2, 1, 1, 2, 0, false, true});   // k < s, mixed strides
  run({1, 7, 3, 1, 8, 3, 5, 1, 2, 1, 2, 0, 1, 0, 1, 1, 0, 0, false, false});   // 5x1 filter
  run({1, 4, 3, 1, 3, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2, false, true});   // two tiles across
  run({1, 200, 3, 1, 5, 5, 5, 5, 2, 2, 0, 0, 1, 1, 1, 1, 1, 1, false, true});  // several channel passes
  run({1, 96, 4, 4, 9, 9, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, false, true});   // stride 1, 24 -> 1 per group
  run({1, 20, 1, 1, 3, 4, 2, 2, 2, 2, 0, 0, 0, 0, 3, 1, 1, 0, false, true});   // dilation 3 rows, one channel
  // 144 blocks (more than the H100's 132 SMs): at most half an SM's shared memory, 2 passes of 60.
  run({9, 120, 3, 1, 60, 60, 5, 5, 2, 2, 1, 2, 0, 1, 1, 1, 1, 0, false, true});
  std::printf("%d checked, %d declined, %d failed\n", checked, declined, failures);
  return failures == 0 && declined == 0 ? 0 : 1;
}
