// The channels-last ring kernel (ops/depthwise_conv/cuda/cl_ring.cuh) run on the CPU through
// shim.h and compared with aten in float64 on the same dtype-rounded operands: forward (3x3 at
// stride 1 and 2, 5x5, 7x7) and the stride-1 data-grad (the rotated filter, padding K - 1 - p,
// negative where p >= K), fp32 / fp16 / bf16, with and without bias; plans from depthwise_conv.cu
// (forward_plan, data_grad_plan) through the launcher's ring_plan / ring_tile / ring_bands, each
// with 0 and 1 steps of lookahead and several grids (one band, a few, one band per step). Outputs
// and shared memory are poisoned (NaN), shared memory exactly sized (ASAN=1 sees overruns).
// Cases cover odd sizes, strips and bands cut by the edges, several rows per step, channel
// chunks with idle lanes (C 260 fp32: 65 vectors in 3 chunks of 32), column tiles, a tile
// narrowed to fit the shared-memory budget (C 960). Run: ring_run.sh
#include "shim.h"
#include <ATen/ATen.h>
#include <cstdio>
#include <string>
#include "ops/common/args.h"
#include "cl_ring.cuh"

namespace convx::cuda {
namespace {
constexpr int kThreads = 256;
#define CONVX_GRID_STRIDE(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
#include "plans.inc"
}  // namespace
}  // namespace convx::cuda
using namespace convx;
using namespace convx::cuda;
using at::Tensor;

static int failures = 0, checked = 0, declined = 0;

template <typename T, int K, int S>
void launch_ring(const T* in, const T* w, const T* bias, T* out, const ClRing& L) {
  g_smem_bytes = ring_smem_bytes(L, K, K, sizeof(T));
  launch(dim3{unsigned(L.blocks)}, dim3{unsigned(L.threads)}, [&] { cl_ring<T, K, K, S>(in, w, bias, out, L); });
}

template <typename T>
bool dispatch(const T* in, const T* w, const T* bias, T* out, const ClRing& L, int k, int s) {
  if (k == 3 && s == 1) return launch_ring<T, 3, 1>(in, w, bias, out, L), true;
  if (k == 3 && s == 2) return launch_ring<T, 3, 2>(in, w, bias, out, L), true;
  if (k == 5 && s == 1) return launch_ring<T, 5, 1>(in, w, bias, out, L), true;
  if (k == 7 && s == 1) return launch_ring<T, 7, 1>(in, w, bias, out, L), true;
  return false;
}

// src (N, H, W, C) channels-last data in T, w [C][K][K] in T; ref (N, C, OH, OW) float64.
template <typename T>
void check_plan(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w, const Tensor& bias,
                const Tensor& ref, const std::string& name, double tol) {
  const Tensor sc = src.permute({0, 2, 3, 1}).contiguous();
  for (int D = 0; D <= 1; ++D) {
    for (int64_t slots : {int64_t(1), int64_t(5), int64_t(1) << 20}) {
      ClRing L{};
      if (!ring_plan(L, P, flip, D, sizeof(T)) || !ring_tile(L, P.k[1], P.k[2], P.S[1], sizeof(T)) ||
          !ring_bands(L, slots)) {
        std::printf("%-40s %-10s declined (shared memory)\n", name.c_str(), what);
        ++declined;
        return;
      }
      Tensor oc = at::full({ref.size(0), ref.size(2), ref.size(3), ref.size(1)}, NAN, src.options());
      dispatch<T>(sc.data_ptr<T>(), w.data_ptr<T>(), bias.defined() ? bias.data_ptr<T>() : nullptr, oc.data_ptr<T>(), L,
                  P.k[1], P.S[1]);
      const Tensor out = oc.permute({0, 3, 1, 2}).to(at::kDouble);
      const double scale = std::max(1.0, ref.abs().max().item<double>());
      const double err = (out - ref).abs().max().item<double>() / scale;
      const bool ok = std::isfinite(err) && err <= tol;
      failures += !ok;
      ++checked;
      if (!ok || slots == 5)
        std::printf("%-40s %-8s D%d slots %-7lld CB%d PX%d PY%d TH%d bands %d wt %d ch %d thr %d  err %.1e %s\n",
                    name.c_str(), what, D, (long long)slots, L.CB, L.PX, L.PY, L.TH, L.bands, L.wtiles, L.chunks,
                    L.threads, err, ok ? "ok" : "FAIL");
    }
  }
}

template <typename T>
void run_dtype(at::ScalarType st, double tol, int64_t N, int64_t C, int64_t H, int64_t W, int64_t k, int64_t s,
               int64_t p, bool has_bias) {
  if (C % (16 / int64_t(sizeof(T))) != 0) return;
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  Tensor x = at::randn({N, C, H, W}, f64).to(st), w = at::randn({C, 1, k, k}, f64).to(st);
  Tensor b = has_bias ? at::randn({C}, f64).to(st) : Tensor();
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), has_bias ? b.to(at::kDouble) : Tensor(), {s, s}, {p, p},
                        {1, 1}, C);
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = k, g.stride[1] = g.stride[2] = s, g.padding[1] = g.padding[2] = p;
  const std::string name = std::string(at::toString(st)) + " N" + std::to_string(N) + " C" + std::to_string(C) + " " +
                           std::to_string(H) + "x" + std::to_string(W) + " k" + std::to_string(k) + " s" +
                           std::to_string(s) + " p" + std::to_string(p) + (has_bias ? " b" : "");
  const Tensor wc = w.contiguous();
  {
    Plan P{};
    Prep Q{};
    forward_plan(g, P, Q);
    check_plan<T>("fwd", P, false, x, wc, b, y, name, tol);
  }
  if (s == 1) {
    Plan P{};
    Prep Q{};
    Tensor gy = at::randn(y.sizes(), f64).to(st);
    Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                     std::nullopt, {s, s}, {p, p}, {1, 1}, false, {0, 0}, C,
                                                     {true, false, false}));
    if (data_grad_plan(g, P, Q)) check_plan<T>("dgrad", P, true, gy, wc, Tensor(), gx, name, tol);
  }
}

void run_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t k, int64_t s, int64_t p, bool bias) {
  at::manual_seed(N * 1000 + C + H + W + k);
  run_dtype<float>(at::kFloat, 1e-5, N, C, H, W, k, s, p, bias);
  run_dtype<at::Half>(at::kHalf, 2e-3, N, C, H, W, k, s, p, bias);
  run_dtype<at::BFloat16>(at::kBFloat16, 1e-2, N, C, H, W, k, s, p, bias);
}

int main() {
  run_case(2, 16, 13, 17, 3, 1, 1, true);   // several rows per step, strips cut by the edge
  run_case(2, 16, 14, 11, 3, 2, 1, true);   // stride 2, odd output
  run_case(1, 8, 9, 10, 3, 2, 0, false);    // stride 2, no padding
  run_case(2, 8, 15, 12, 5, 1, 2, true);
  run_case(1, 16, 19, 21, 7, 1, 3, false);
  run_case(1, 16, 7, 7, 7, 1, 3, true);     // 7x7 planes under a 7x7 filter
  run_case(1, 8, 6, 9, 3, 1, 4, false);     // padding beyond the filter: negative data-grad padding
  run_case(1, 8, 5, 5, 5, 1, 0, true);      // output 1x1
  run_case(1, 260, 5, 40, 3, 1, 1, true);   // fp32 65 vectors: 3 chunks of 32 (idle lanes), column tiles
  run_case(1, 144, 6, 30, 3, 2, 1, false);  // fp32 36 vectors, stride 2 column tiles
  run_case(1, 960, 4, 9, 7, 1, 3, false);   // fp32 / 16-bit 7x7 on 960 channels: no tile fits (declined)
  run_case(2, 960, 7, 7, 3, 1, 1, true);    // MobileNetV2's 7x7 planes: 2 chunks of 60 lanes (fp32: 4)
  run_case(1, 240, 9, 28, 5, 1, 2, false);  // EfficientNet's tile shape
  // the GPU test's cases (python_tests/test_cuda.py, CL_RING_CASES) not above
  run_case(2, 16, 9, 40, 3, 1, 1, true);
  run_case(2, 16, 14, 60, 3, 2, 1, true);
  run_case(2, 8, 15, 30, 5, 1, 2, true);
  run_case(1, 16, 19, 33, 7, 1, 3, false);
  run_case(1, 8, 6, 33, 5, 1, 0, true);
  run_case(1, 960, 4, 30, 7, 1, 3, false);
  run_case(1, 264, 5, 40, 3, 1, 1, true);
  run_case(2, 144, 56, 56, 3, 1, 1, false);
  run_case(2, 96, 112, 112, 3, 2, 1, true);
  run_case(2, 240, 28, 28, 5, 1, 2, false);
  run_case(2, 96, 56, 56, 7, 1, 3, true);
  std::printf("%d checks, %d failures, %d declined\n", checked, failures, declined);
  return failures ? 1 : 0;
}
