// The depthwise CUDA kernels' sources (nc_stream.cuh, nc_stride2_dgrad.cuh, nc_plane.cuh, nc_plane_cp.cuh, nc_small_planes.cuh, nc_depth3d.cuh, cl_depth3d.cuh, depth3d_regs.cuh, cl_row1d.cuh, tc_row1d.cuh, tc_rows_nc.cuh, row1d.cuh, row_warp.cuh, tc_wgrad1d.cuh, tc_wgrad3d.cuh, tc_wgrad2d.cuh, nc_tiled.cuh, cl_tiled.cuh, cl_wgrad.cu (its weight-grads), the plans of
// depthwise_conv.cu) run on the CPU through shim.h and compared with aten in float64, with
// poisoned outputs and workspaces: the index arithmetic, tiles, phases, shared-memory layout,
// barriers and fixed-order reductions of every specialisation, without a GPU. The launch glue
// below mirrors the launchers (nc_stream.cu, nc_stride2_dgrad.cu, nc_plane.cu, nc_plane_cp.cu, nc_small_planes.cu, nc_gather.cu, cl_gather.cu, nc_wgrad.cu, cl_wgrad.cu). Not a
// substitute for python_tests/test_cuda.py on a GPU. Run: cpp_tests/cuda_on_cpu/run.sh
#include "shim.h"
#include <ATen/ATen.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include "ops/common/args.h"

#include "nc_stream.cuh"
#include "nc_plane.cuh"
#include "nc_plane_cp.cuh"
#include "nc_small_planes.cuh"
#include "nc_tiled.cuh"
#include "cl_tiled.cuh"
#include "nc_wgrad_stream.cuh"
#include "nc_wgrad_s2d.cuh"  // mb16
#include "row1d.cuh"
#include "row_warp.cuh"
#include <string>
#include "nc_depth3d.cuh"
#include "cl_depth3d.cuh"
#include "cl_row1d.cuh"
#include "nc_stride2_dgrad.cuh"
#include "cl_stride2_dgrad.cuh"
#include "tc_row1d.cuh"
#include "tc_wgrad1d.cuh"
#include "tc_rows_nc.cuh"
#include "tc7_nc.cuh"  // tc7n
#include "tc_wgrad3d.cuh"
#include "tc_wgrad2d.cuh"
#include "walk2d.cuh"
#include "nc_wgrad_cp.cuh"
#include "tc_cl2d.cuh"
#include "cl_tile2d.cuh"  // cl7 (session 14)
#include "cl_band_wgrad2d.cuh"  // w7 (session 13)
#include "depth3d_regs.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"
namespace convx::cuda {
namespace {
constexpr int kThreads = 256;
#define CONVX_GRID_STRIDE(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
#include "plans.inc"
}  // namespace
}  // namespace convx::cuda
#include "cl_wgrad_k.inc"
using namespace convx;
using namespace convx::cuda;
using at::Tensor;
static int failures = 0;
static int64_t cl_out_numel = 0;  // elements written by the channels-last gather under test
static int cls2_cases = 0;  // problems cl_stride2_dgrad took

template <typename T, int KH, int KW, int S, int R>
bool nc_run(const T* in, const float* w, const T* bias, T* out, const Plan& P) {
  NcTile L{};
  const int64_t planes = P.N * P.out_c * P.q[0];
  if (!choose_nc_tile(L, P, R, P.k[1], P.k[2], P.S[1], P.S[2], planes, 4)) return false;
  L.blocks = L.groups * L.tilesH * L.tilesW * P.phases;
  g_smem_bytes = size_t(L.TZ) * L.rows * L.cols * 4;
  launch(dim3{2}, dim3{unsigned(L.TX * L.TY * L.TZ)}, [&] { nc_gather<T, KH, KW, S, R>(in, w, bias, out, P, L); });
  return true;
}
template <typename T>
bool nc_dispatch(const T* in, const float* w, const T* bias, T* out, const Plan& P, const char** which) {
  const int kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
  if (kw == 31 && s == 1) { *which = "Rx31"; return nc_run<T, 0, 31, 1, 8>(in, w, bias, out, P); }
  *which = "generic";
  return nc_run<T, 0, 0, 0, 4>(in, w, bias, out, P);
}
// nc_stream.cu's specialisations, each with every tile its launcher may pick (stream_strip, both
// fp32 band heights), through the kernel the launcher uses for it (stream_vec: nc_stream_vec,
// else nc_stream).
template <typename T, int KH, int KW, int S, int R, int TH, bool VEC = stream_vec<T, KH>()>
bool st_run(const T* in, const float* w, const T* bias, T* out, const Plan& P) {
  if constexpr (VEC) {
    NcStreamVec L{};
    if (!stream_vec_items(L, P, R, TH)) return false;
    launch(dim3{unsigned(ceil_div(L.items, kStreamThreads))}, dim3{kStreamThreads}, [&] {
      nc_stream_vec<T, KH, KW, S, R, TH, stream_min_blocks<T, KH, KW>()>(in, w, bias, out, P, L);
    });
  } else {
    NcStream L{};
    if (!stream_items(L, P, R, TH)) return false;
    launch(dim3{unsigned(ceil_div(L.items, kStreamThreads))}, dim3{kStreamThreads},
           [&] { nc_stream<T, KH, KW, S, R, TH>(in, w, bias, out, P, L); });
  }
  return true;
}
// Calls f(tile name, run) for each tile of the filter's specialisation, where run(in, w, bias,
// out, P) launches it.
template <typename T, int KH, int KW, int S, int R, int TH, bool VEC = stream_vec<T, KH>(), typename F>
void st_one(F& f) {
  const std::string name = "R" + std::to_string(R) + "xTH" + std::to_string(TH) + (VEC ? " vec" : "");
  f(name, st_run<T, KH, KW, S, R, TH, VEC>);
}
template <typename T, int KH, int KW, int S, typename F>
void st_tiles(F& f) {
  constexpr int R = stream_strip<T, KH, KW>();
  constexpr int tall = stream_band_tall<T, KH, KW>(), shrt = stream_band_short<T, KH, KW>();
  st_one<T, KH, KW, S, R, tall>(f);
  if constexpr (shrt != tall) st_one<T, KH, KW, S, R, shrt>(f);
}
template <typename T, typename F>
bool st_dispatch(const Plan& P, const char** which, F&& f) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KH, KW, S)                                                                   \
  if (kh == KH && kw == KW && s == S) {                                                 \
    *which = "st" #KH "x" #KW "s" #S;                                                   \
    st_tiles<T, KH, KW, S>(f);                                                          \
    return true;                                                                        \
  }
  C_(1, 2, 1) C_(1, 3, 1) C_(1, 4, 1) C_(1, 15, 1) C_(1, 31, 1) C_(2, 2, 1) C_(3, 3, 1) C_(4, 4, 1)
  C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2) C_(5, 5, 2) C_(7, 7, 2)
#undef C_
  return false;
}
// nc_plane.cu's specialisations (the layer's own filter in T, flip: rotated), on `blocks` blocks
// (0: the launcher's one block per group; fewer make each block walk several groups through the
// prefetch). false when choose_nc_plane declines the plan.
static int np_runs = 0;
template <typename T, int KH, int KW, int S, int TH>
bool np_run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, unsigned blocks) {
  NcPlane L{};
  if (!choose_nc_plane(L, P, KH, KW, S, TH, sizeof(T), flip)) return false;
  g_smem_bytes = size_t(L.smem);
  launch(dim3{blocks ? std::min(blocks, L.groups) : L.groups}, dim3{kPlaneThreads},
         [&] { nc_plane<T, KH, KW, S, kPlaneStrip, TH>(in, w, bias, out, L); });
  ++np_runs;
  return true;
}
template <typename T>
bool np_dispatch(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, unsigned blocks, int th) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KH, KW, S)                                                                          \
  if (kh == KH && kw == KW && s == S)                                                          \
    return th == 1 ? np_run<T, KH, KW, S, 1>(in, w, flip, bias, out, P, blocks)                \
                   : np_run<T, KH, KW, S, 2>(in, w, flip, bias, out, P, blocks);
  C_(2, 2, 1) C_(3, 3, 1) C_(4, 4, 1) C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2) C_(5, 5, 2) C_(7, 7, 2)
#undef C_
  return false;
}
// nc_small_planes.cu's specialisations (the layer's own filter in T, flip: rotated) at any plane
// size whose block fits (the launcher takes output planes up to 14 x 14). false when
// choose_nc_small_planes declines.
static int sp_runs = 0;
template <typename T, int KH, int KW, int S>
bool sp_run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P) {
  NcSmallPlanes L{};
  if (!choose_nc_small_planes(L, P, KH, KW, S, sizeof(T), flip)) return false;
  g_smem_bytes = size_t(L.smem);
  launch(dim3{unsigned(ceil_div(L.planes, L.pb))}, dim3{kSmallPlaneThreads},
         [&] { nc_small_planes<T, KH, KW, S, kSmallPlaneStrip>(in, w, bias, out, L); });
  ++sp_runs;
  return true;
}
template <typename T>
bool sp_dispatch(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KH, KW, S) if (kh == KH && kw == KW && s == S) return sp_run<T, KH, KW, S>(in, w, flip, bias, out, P);
  C_(2, 2, 1) C_(3, 3, 1) C_(4, 4, 1) C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2) C_(5, 5, 2) C_(7, 7, 2)
#undef C_
  return false;
}
static int row_taken = 0, row_declined = 0;  // row1d launches / 15- and 31-tap plans it declined
// row1d.cu's launcher (15 / 31 taps, R = row_outputs), on at most max_blocks blocks: 1 block
// makes every warp walk many items with the prefetch, 2^30 gives one warp per item.
template <typename T, int K>
bool row_run(const T* in, const float* w, const T* bias, T* out, const Plan& P, unsigned max_blocks) {
  constexpr int R = row_outputs<K>();
  Row1d L{};
  if (!row1d_items(L, P, R)) return false;
  const unsigned blocks = unsigned(std::min<int64_t>(ceil_div(L.items, kRowWarps), max_blocks));
  g_smem_bytes = row_smem_bytes<K, R>();
  launch(dim3{blocks}, dim3{kRowThreads}, [&] { row1d<T, K, R>(in, w, bias, out, P, L); });
  return true;
}
template <typename T, typename F>
void row_dispatch(const Plan& P, F&& f) {
  if (P.k[2] != 31) return;  // the launcher's forward / data-grad: 31 taps
  for (unsigned mb : {1u, 1u << 30}) {
    auto run = [mb](const T* in, const float* w, const T* bias, T* out, const Plan& Q) {
      return row_run<T, 31>(in, w, bias, out, Q, mb);
    };
    f(std::string(mb == 1 ? "row1d 1 block" : "row1d"), run);
  }
}
void check(const char* what, const Tensor& out, const Tensor& ref, const std::string& name, double tol = 1e-4);
Tensor to_cl(const Tensor& t);
Tensor from_cl(const Tensor& t);
static int rw_taken = 0;  // row_warp launches checked
// row_warp.cu's launcher (2, 3, 4, 15 taps) with the vector count it uses, one warp per
// 32-thread block (the shim's barrier is then the warp's), on at most max_blocks blocks: 1 makes
// the warp walk every item, 2^30 gives one warp per item. w: the layer's filter in T, tap t of the
// correlation w[row * K + wbase + wstep * t].
template <typename T, int K, int U>
bool rw_run(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P, unsigned max_blocks) {
  RowWarp L{};
  if (!row_warp_items(L, P, 16 / int(sizeof(T)), U)) return false;
  L.wbase = wbase;
  L.wstep = wstep;
  const unsigned blocks = unsigned(std::min<int64_t>(L.items, max_blocks));
  launch(dim3{blocks}, dim3{32}, [&] { row_warp<T, K, U, 4>(in, w, bias, out, L); });
  return true;
}
template <typename T, int K, typename F>
void rw_each(F& f) {
  for (unsigned mb : {1u, 1u << 30}) {
    const std::string tag = std::string(mb == 1 ? "row_warp 1 warp" : "row_warp") + " u";
    f(tag + std::to_string(row_warp_vectors<K>()),
      [mb](const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& Q) {
        return rw_run<T, K, row_warp_vectors<K>()>(in, w, wbase, wstep, bias, out, Q, mb);
      });
  }
}
template <typename T, typename F>
void rw_dispatch(const Plan& P, F&& f) {
  if (P.k[2] == 2) rw_each<T, 2>(f);
  if (P.k[2] == 3) rw_each<T, 3>(f);
  if (P.k[2] == 4) rw_each<T, 4>(f);
  if (P.k[2] == 15) rw_each<T, 15>(f);
}
// row_warp on src and the filter wt (T) as allocated and on copies of src, wt and of the output
// one element past a 16-byte boundary (with odd row lengths every row has another input / output
// misalignment).
template <typename T>
void rw_check(const char* what, const Plan& P, const Prep& Q, const Tensor& src, const Tensor& wt, const Tensor& bias,
              const Tensor& ref, const std::string& name, double tol) {
  if (P.in[0] != 1 || P.in[1] != 1) return;  // 1-D rows only
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  Tensor w1 = at::full({wt.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  w1.narrow(0, 1, wt.numel()).copy_(wt.flatten());
  for (int off : {0, 1}) {
    const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
    const T* wq = off ? w1.data_ptr<T>() + 1 : wt.data_ptr<T>();
    rw_dispatch<T>(P, [&](const std::string& tile, auto run) {
      Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
      o.fill_(NAN);
      if (run(ip, wq, Q.base[2][0], Q.step[2], bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P)) {
        ++rw_taken;
        check((std::string(what) + " " + tile + (off ? " off1" : "")).c_str(), o, ref, name, tol);
      } else {
        std::printf("%-44s %-34s declined\n", name.c_str(), (std::string(what) + " " + tile).c_str());
      }
    });
  }
}
// row_warp.cu's weight-grad (2, 3, 4 taps): with one chunk per channel the blocks write gw (as
// the launcher), else partials poisoned, then the ordered chunk sum; one warp per block
// (per-warp item counts differ, and the shim's shuffles are block-wide).
template <typename T, int K>
Tensor rww_run(const T* x, const T* gy, const Plan& P) {
  RowWarpW L{};
  if (!row_warp_wgrad_items(L, P, 16 / int(sizeof(T)), row_warp_vectors<K>())) return Tensor();
  Tensor gw = at::full({P.out_c * K}, NAN, c10::CppTypeToScalarType<T>::value);
  if (L.chunks == 1) {  // the launcher's direct path: the blocks write gw
    launch(dim3{unsigned(P.out_c)}, dim3{32},
           [&] { row_warp_wgrad<T, K, row_warp_vectors<K>()>(x, gy, nullptr, gw.data_ptr<T>(), L); });
    return gw;
  }
  Tensor part = at::full({P.out_c, int64_t(L.chunks), K}, NAN, at::kFloat);
  launch(dim3{unsigned(P.out_c * L.chunks)}, dim3{32},
         [&] { row_warp_wgrad<T, K, row_warp_vectors<K>()>(x, gy, part.data_ptr<float>(), gw.data_ptr<T>(), L); });
  launch(dim3{unsigned(ceil_div(P.out_c * K, 256))}, dim3{256},
         [&] { sum_slots<T>(part.data_ptr<float>(), gw.data_ptr<T>(), P.out_c, L.chunks, K); });
  return gw;
}
// row1d.cu's weight-grad (15 / 31 taps): partials poisoned, then the ordered chunk sum; an
// undefined tensor when the launcher declines.
template <typename T, int K>
Tensor roww_run(const T* x, const T* gy, const Plan& P) {
  constexpr int R = row_wgrad_outputs<K>();
  Row1dW L{};
  if (!row1d_wgrad_items(L, P, R)) return Tensor();
  Tensor part = at::full({P.out_c, int64_t(L.chunks), K}, NAN);
  g_smem_bytes = row_wgrad_smem_bytes<K, R>();
  launch(dim3{unsigned(P.out_c * L.chunks)}, dim3{kRowThreads},
         [&] { row1d_wgrad<T, K, R>(x, gy, part.data_ptr<float>(), P, L); });
  Tensor gw = at::full({P.out_c * K}, NAN, at::TensorOptions().dtype<T>());
  launch(dim3{unsigned(ceil_div(P.out_c * K, 256))}, dim3{256},
         [&] { sum_slots<T>(part.data_ptr<float>(), gw.data_ptr<T>(), P.out_c, L.chunks, K); });
  return gw;
}
// cl_gather.cu's specialisations: f(tile, run) with each tile the launchers may use for the
// filter; false when they do not take it. launch_cl_gather: V = 4 (kClVec), fp32
// weights, R = cl_outputs. launch_cl_gather16 (16-bit, cl16_specialised: 3x3 at stride 1):
// 16-bit weights, V = 8.
template <typename T, typename WT, int KH, int KW, int S, int V>
bool cl_run(const T* in, const WT* w, const T* bias, T* out, const Plan& P) {
  constexpr int R = cl_outputs<KH, KW, V, S>(), MB = cl_min_blocks<KW, R, V>();
  ClTile L = choose_cl_tile(P, V, R);
  launch(dim3{3}, dim3{cl_block_threads(L)}, [&] { cl_gather<T, WT, KH, KW, S, V, R, MB>(in, w, bias, out, P, L); });
  L.i32 = false;  // the 64-bit block decomposition, which only huge shapes take
  std::vector<T> first(out, out + cl_out_numel), again(cl_out_numel, T(NAN));
  launch(dim3{3}, dim3{cl_block_threads(L)}, [&] { cl_gather<T, WT, KH, KW, S, V, R, MB>(in, w, bias, again.data(), P, L); });
  if (std::memcmp(first.data(), again.data(), cl_out_numel * sizeof(T)) != 0) {
    std::printf("cl_gather: 64-bit block decomposition differs\n");
    ++failures;
  }
  return true;
}
template <int KH, int KW, int S, int V>
std::string cl_tile_name() {
  return "V" + std::to_string(V) + "R" + std::to_string(cl_outputs<KH, KW, V, S>());
}
template <typename T, typename F>
bool cl_dispatch(const Plan& P, F&& f) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
  using W = at::opmath_type<T>;
#define C_(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return f(cl_tile_name<KH, KW, S, 4>(), cl_run<T, W, KH, KW, S, 4>), true;
  C_(1, 2, 1) C_(1, 3, 1) C_(1, 4, 1) C_(1, 15, 1) C_(1, 31, 1) C_(2, 2, 1) C_(3, 3, 1) C_(4, 4, 1) C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2) C_(5, 5, 2) C_(7, 7, 2)
#undef C_
  if (kw == 31 && s == 1) return f(cl_tile_name<0, 31, 1, 4>(), cl_run<T, W, 0, 31, 1, 4>), true;
  return false;
}
// cl_stride2_dgrad.cu's tiles (V channels, R q-columns, TH q-rows, MB blocks per SM: the
// launcher's fp32 R4xTH1, bf16 R4xTH2 and fp16 R4xTH4, each run here in fp32 and fp16), each on
// the whole grid: f(tile, run).
template <typename T, int V, int R, int TH, int MB>
bool cls2_run(const T* in, const float* w, const T* bias, T* out, const Plan& P) {
  const ClS2Tile L = choose_cl_s2_tile(P, V, R, TH);
  launch(dim3{unsigned(L.blocks)}, dim3{cl_s2_threads(L)}, [&] { cl_stride2_dgrad<T, V, R, TH, MB>(in, w, bias, out, P, L); });
  return true;
}
template <typename T, typename F>
bool cls2_dispatch(const Plan& P, F&& f) {
  if (!cl_s2_covers(P) || P.out_c % 4 != 0) return false;
  f(std::string("s2cl R4xTH1"), cls2_run<T, 4, 4, 1, 2>);
  f(std::string("s2cl R4xTH2"), cls2_run<T, 4, 4, 2, 2>);
  f(std::string("s2cl R4xTH4"), cls2_run<T, 4, 4, 4, 2>);
  return true;
}
template <typename T, typename F>
bool cl16_dispatch(const Plan& P, F&& f) {
  if (!cl16_specialised(P)) return false;
  f(cl_tile_name<3, 3, 1, 8>(), cl_run<T, T, 3, 3, 1, 8>);
  return true;
}
// cl_row1d.cu's specialisations (channels-last 1-D rows): f(tile, run) with the launcher's tile
// (ClRowTile); false when the plan or filter is not covered.
static int clr_taken = 0;
template <typename T, int K>
bool clr_run(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P) {
  using Tile = ClRowTile<T, K>;
  int64_t rows = 0;
  ClRow1d L{};
  if (!cl_row1d_plan(P, rows) || !cl_row1d_tile(L, rows, P.in[2], P.out[2], P.pad[2][0], P.out_c, Tile::V, Tile::R))
    return false;
  const bool flip = wstep < 0;
  if (wbase != (flip ? K - 1 : 0)) return false;  // the launcher takes the filter as stored or rotated
  const dim3 grid{Tile::FLAT ? static_cast<unsigned>(ceil_div(int64_t(L.items), kClRowThreads)) : L.blocks};
  launch(grid, dim3{Tile::FLAT ? unsigned(kClRowThreads) : cl_row1d_threads(L)}, [&] {
    if (flip) {
      cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, true, Tile::FLAT>(in, w, bias, out, L);
    } else {
      cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, false, Tile::FLAT>(in, w, bias, out, L);
    }
  });
  ++clr_taken;
  return true;
}
template <typename T, typename F>
bool clr_dispatch(const Plan& P, F&& f) {
  int64_t rows = 0;
  if (!cl_row1d_plan(P, rows)) return false;
#define C_(K)                                                                                               \
  if (P.k[2] == K) {                                                                                        \
    f("clrow V" + std::to_string(ClRowTile<T, K>::V) + "R" + std::to_string(ClRowTile<T, K>::R), clr_run<T, K>); \
    return true;                                                                                            \
  }
  C_(2) C_(3) C_(4) C_(15) C_(31)
#undef C_
  return false;
}
// cl_row1d on (N, L, C) memory: src (N, C, L) as a channels-last copy, the filter wt (T) as
// allocated (16-byte aligned), the forward's bias or none.
template <typename T>
void clr_check(const char* what, const Plan& P, const Prep& Q, const Tensor& src, const Tensor& wt, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol) {
  const Tensor sc = to_cl(src);
  clr_dispatch<T>(P, [&](const std::string& tile, auto run) {
    Tensor oc = at::full(to_cl(ref).sizes(), NAN, src.options());
    if (run(sc.data_ptr<T>(), wt.data_ptr<T>(), Q.base[2][0], Q.step[2], bias.defined() ? bias.data_ptr<T>() : nullptr,
            oc.data_ptr<T>(), P))
      check((std::string(what) + " " + tile).c_str(), from_cl(oc), ref, name, tol);
  });
}
// cl_depth3d.cu's specialisations (channels-last depth streaming): f(tile, run) with one depth
// segment per column (target 1) and with the most segments (a huge target); run returns false
// when the launcher declines.
static int cl3_taken = 0;
template <typename T, int KD, int KH, int KW, int S>
bool cl3_run(const T* in, const float* w, const T* bias, T* out, const Plan& P, int64_t target) {
  constexpr int V = kClVec, R = cl_depth3d_strip<KD>();
  ClDepth3d L{};
  if (!cl_depth3d_items(L, P, KD, R, V, target)) return false;
  launch(dim3{unsigned(ceil_div(L.items, kClDepthThreads))}, dim3{kClDepthThreads},
         [&] { cl_depth3d<T, KD, KH, KW, S, V, R>(in, w, bias, out, P, L); });
  ++cl3_taken;
  return true;
}
template <typename T, typename F>
bool cl3_dispatch(const Plan& P, F&& f) {
  const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KD, KH, KW, S)                                                                                  \
  if (kd == KD && kh == KH && kw == KW && s == S) {                                                        \
    for (int64_t target : {int64_t(1), int64_t(1) << 40})                                                  \
      f(std::string("cl3d " #KD "x" #KH "x" #KW "s" #S) + (target == 1 ? " seg1" : " segs"),               \
        [target](const T* i, const float* w, const T* b, T* o, const Plan& Pl) {                           \
          return cl3_run<T, KD, KH, KW, S>(i, w, b, o, Pl, target);                                        \
        });                                                                                                \
    return true;                                                                                           \
  }
  C_(3, 3, 3, 1) C_(3, 3, 3, 2) C_(3, 2, 2, 1) C_(5, 3, 3, 1) C_(5, 3, 3, 2) C_(5, 2, 2, 1)
#undef C_
  return false;
}
template <typename T, int KH, int KW, int S, int R>
Tensor ncw_run(const T* x, const T* gy, const Plan& P) {
  constexpr int NV = KW;
  NcTile L{};
  const int kh = P.k[1];
  const int64_t fixed = (kTileThreads / 32) * NV * 4;
  if (!choose_nc_tile(L, P, R, kh, KW, S, S, P.out_c, 4, fixed, int64_t(kh) * KW * 4)) return Tensor();
  const int64_t npl = P.N * P.q[0], base = L.groups * L.tilesH * L.tilesW;
  int64_t chunks = std::clamp<int64_t>(ceil_div(2048, base), 1, npl);
  const int64_t chunk = ceil_div(npl, chunks);
  chunks = ceil_div(npl, chunk);
  const int64_t slots = L.tilesH * L.tilesW * chunks, taps = int64_t(P.k[0]) * kh * KW;
  Tensor part = at::full({P.out_c, slots, taps}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  g_smem_bytes = size_t(fixed) + size_t(L.TZ) * (size_t(L.rows) * L.cols + size_t(kh) * KW) * 4;
  launch(dim3{3}, dim3{unsigned(L.TX * L.TY * L.TZ)}, [&] { nc_wgrad<T, KH, KW, S, R>(x, gy, pp, P, L, chunk, chunks); });
  return part.sum(1);
}
// ---- streaming NC weight-grad (nc_wgrad_stream.cuh), mirrors run_stream of nc_wgrad.cu ----
// Grid of at most 3 blocks so that the kernel's block loop is walked too.
template <typename T, int KH, int KW, int S>
Tensor ncws_run(const T* x, const T* gy, const Plan& P) {
  NcWgradTile L{};
  if (!choose_nc_wgrad(L, P, wgrad_cols<KH>(), wgrad_rows<KH>(), S, KH, KW)) return Tensor();
  const int64_t taps = int64_t(P.k[0]) * KH * KW;
  Tensor part = at::full({P.out_c, int64_t(L.chunks), taps}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned grid = unsigned(std::min<int64_t>(P.out_c * L.chunks, 3));
  launch(dim3{grid}, dim3{unsigned(L.threads)}, [&] { nc_wgrad_stream<T, KH, KW, S>(x, gy, pp, P, L); });
  return part.sum(1);
}
// The NC weight-grad as nc_wgrad.cu dispatches it; *which names the kernel.
template <typename T>
Tensor ncw_dispatch(const T* x, const T* gy, const Plan& P, const char** which) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
  *which = "wgrad nc stream";
#define C_(KH, KW, S) if (kh == KH && kw == KW && s == S) return ncws_run<T, KH, KW, S>(x, gy, P);
  C_(1, 2, 1) C_(1, 3, 1) C_(1, 4, 1) C_(1, 15, 1) C_(1, 31, 1) C_(3, 3, 1) C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2)
  C_(5, 5, 2) C_(7, 7, 2)
#undef C_
  *which = "wgrad nc tiled";
  if (kw == 31 && s == 1) return ncw_run<T, 0, 31, 1, 8>(x, gy, P);
  return Tensor();
}
// ---- end streaming NC weight-grad ----
// ---- depth-streaming NCDHW kernels (nc_depth3d.cuh), mirror nc_depth3d.cu ----
// Forward / data-grad: f(tile, run) for the launcher's tile of the specialisation, with one
// depth segment per column (target 1) and with the most segments (a huge target).
template <typename T, int KD, int KH, int KW, int S>
bool d3_run(const T* in, const float* w, const T* bias, T* out, const Plan& P, int64_t target) {
  constexpr int R = depth3d_strip<T, KD>(), TH = depth3d_band<T, KD>();
  NcDepth3d L{};
  if (!depth3d_items(L, P, KD, R, TH, target)) return false;
  launch(dim3{unsigned(ceil_div(L.items, kDepthThreads))}, dim3{kDepthThreads},
         [&] { nc_depth3d<T, KD, KH, KW, S, R, TH>(in, w, bias, out, P, L); });
  return true;
}
template <typename T, typename F>
bool d3_dispatch(const Plan& P, const char** which, F&& f) {
  const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KD, KH, KW, S)                                                                       \
  if (kd == KD && kh == KH && kw == KW && s == S) {                                             \
    *which = "d3 " #KD "x" #KH "x" #KW "s" #S;                                                  \
    const std::string tile = "R" + std::to_string(depth3d_strip<T, KD>()) + "xTH" + std::to_string(depth3d_band<T, KD>()); \
    for (int64_t target : {int64_t(1), int64_t(1) << 40})                                       \
      f(tile + (target == 1 ? " seg1" : " segs"), [target](const T* i, const float* w, const T* b, T* o, const Plan& Pl) { \
        return d3_run<T, KD, KH, KW, S>(i, w, b, o, Pl, target);                                \
      });                                                                                       \
    return true;                                                                                \
  }
  C_(3, 3, 3, 1) C_(3, 3, 3, 2) C_(3, 2, 2, 1) C_(5, 3, 3, 1) C_(5, 3, 3, 2) C_(5, 2, 2, 1)
#undef C_
  return false;
}
// Weight-grad: the partial kernel on a poisoned workspace, grid of at most 3 blocks (the block
// loop is walked); an undefined tensor when the launcher declines.
template <typename T, int KD, int KH, int KW, int S>
Tensor ncw3_run(const T* x, const T* gy, const Plan& P, int* segs) {
  constexpr int R = wgrad3d_strip<T, S>(), TH = wgrad3d_band<T, KD, S>();
  NcWgrad3d L{};
  if (!choose_wgrad3d(L, P, KD, R, TH, S, KH, KW)) return Tensor();
  *segs = L.segs;
  constexpr int64_t taps = KD * KH * KW;
  Tensor part = at::full({P.out_c, int64_t(L.chunks), taps}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned grid = unsigned(std::min<int64_t>(P.out_c * L.chunks, 3));
  launch(dim3{grid}, dim3{unsigned(L.threads)}, [&] { nc_wgrad_depth3d<T, KD, KH, KW, S, R, TH>(x, gy, pp, P, L); });
  return part.sum(1);
}
template <typename T>
Tensor ncw3_dispatch(const T* x, const T* gy, const Plan& P, int* segs) {
  const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KD, KH, KW, S) if (kd == KD && kh == KH && kw == KW && s == S) return ncw3_run<T, KD, KH, KW, S>(x, gy, P, segs);
  C_(3, 3, 3, 1) C_(3, 3, 3, 2) C_(5, 3, 3, 1) C_(5, 3, 3, 2)
#undef C_
  return Tensor();
}
// ---- end depth-streaming NCDHW kernels ----
// cl_wgrad.cu's run<>: the partial kernel, then sum_chunks (both on poisoned buffers).
template <typename T, int KH, int KW, int S, bool pairs = false>
Tensor clw_run(const T* x, const T* gy, const Plan& P, bool wide_index) {
  using Shape = ClwShape<T, KH, KW, pairs>;
  constexpr int VW = Shape::VW, R = Shape::R, RH = Shape::RH;
  if (P.out_c % VW != 0) return Tensor();
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, (R - 1) * S + KW, 0, ctiles, chunks)) return Tensor();
  if (wide_index) L.i32 = false;  // the 64-bit item decomposition, which only huge shapes take
  const int64_t taps = int64_t(P.k[0]) * P.k[1] * KW, n = P.out_c * taps;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_partial<T, KH, KW, S, VW, R, RH>(x, gy, pp, P, L); });
  const auto dt = std::is_same_v<T, float> ? at::kFloat : at::kHalf;
  Tensor gw = at::full({n}, NAN, dt);
  T* gp = reinterpret_cast<T*>(gw.data_ptr());
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<T>(pp, gp, chunks, n); });
  return gw;
}
// cl_wgrad.cu's run_k31 for fp32 (one channel x 32 outputs), then sum_chunks (poisoned buffers).
Tensor clw_long32_run(const float* x, const float* gy, const Plan& P, bool wide_index) {
  constexpr int VW = kLong32Vw, R = kLong32R;
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, R - 1 + 31, 0, ctiles, chunks)) return Tensor();
  if (wide_index) L.i32 = false;
  const int64_t n = P.out_c * P.k[0] * 31;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_partial<float, 1, 31, 1, VW, R, 1>(x, gy, pp, P, L); });
  Tensor gw = at::full({n}, NAN, at::kFloat);
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<float>(pp, gw.data_ptr<float>(), chunks, n); });
  return gw;
}
// cl_wgrad.cu's run_short16<> (16-bit 1-D rows of 2-4 taps), then sum_chunks (poisoned buffers).
static int clws_taken = 0;
template <int KW>
Tensor clws_run(const at::Half* x, const at::Half* gy, const Plan& P) {
  constexpr int VW = kShort16Vw, R = kShort16R;
  if (P.out_c % VW != 0) return Tensor();
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, R - 1 + KW, 0, ctiles, chunks, 132 * kShort16Blocks, 64)) return Tensor();
  const int64_t n = P.out_c * KW;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads},
         [&] { cl_wgrad_partial<at::Half, 1, KW, 1, VW, R, 1, kShort16Blocks>(x, gy, pp, P, L); });
  Tensor gw = at::full({n}, NAN, at::kHalf);
  at::Half* gp = gw.data_ptr<at::Half>();
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<at::Half>(pp, gp, chunks, n); });
  ++clws_taken;
  return gw;
}
// cl_wgrad.cu's run_depth3d<>: the depth-streaming partial kernel, then sum_chunks (poisoned
// buffers); `segs` as many depth segments as the launcher allows (a huge target), else its own.
template <typename T, int KD, int KH, int KW, int S>
Tensor clw3_run(const T* x, const T* gy, const Plan& P, bool wide_index, int* segs) {
  using Shape = Clw3Shape<T, KD, KH, KW>;
  constexpr int VW = Shape::VW, R = Shape::R;
  if (P.k[0] != KD || P.S[0] != 1 || P.out_c % VW != 0) return Tensor();
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, (R - 1) * S + KW, KD, ctiles, chunks)) return Tensor();
  if (wide_index) L.i32 = false;
  *segs = L.segs;
  constexpr int64_t taps = KD * KH * KW;
  const int64_t n = P.out_c * taps;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_depth3d<T, KD, KH, KW, S, VW, R>(x, gy, pp, P, L); });
  const auto dt = std::is_same_v<T, float> ? at::kFloat : at::kHalf;
  Tensor gw = at::full({n}, NAN, dt);
  T* gp = reinterpret_cast<T*>(gw.data_ptr());
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<T>(pp, gp, chunks, n); });
  return gw;
}
template <typename T>
Tensor clw3_dispatch(const T* x, const T* gy, const Plan& P, bool wide_index, int* segs) {
  const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define C_(KD, KH, KW, S) if (kd == KD && kh == KH && kw == KW && s == S) return clw3_run<T, KD, KH, KW, S>(x, gy, P, wide_index, segs);
  C_(3, 3, 3, 1) C_(3, 3, 3, 2) C_(5, 3, 3, 1) C_(5, 3, 3, 2)
#undef C_
  return Tensor();
}
static int clw3_taken = 0;
// The weight-grad as cl_wgrad.cu's launcher runs it for the shape (undefined: not taken).
template <typename T>
Tensor clw_dispatch(const T* x, const T* gy, const Plan& P, bool wide_index) {
  const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
  if constexpr (std::is_same_v<T, float>) {  // run_k31: fp32 1 x 31 on the one-channel tile
    if (kh == 1 && kw == 31 && s == 1) return clw_long32_run(x, gy, P, wide_index);
  }
#define C_(KH, KW, S) \
  if ((kh == KH || (KH == 0 && kh != 1)) && kw == KW && s == S) return clw_run<T, KH, KW, S>(x, gy, P, wide_index);
  C_(1, 2, 1) C_(1, 3, 1) C_(1, 4, 1) C_(1, 15, 1) C_(1, 31, 1) C_(3, 3, 1) C_(5, 5, 1) C_(7, 7, 1) C_(3, 3, 2)
  C_(5, 5, 2) C_(7, 7, 2) C_(0, 31, 1)
#undef C_
  return Tensor();
}

Tensor prep(const Tensor& w, Plan& P, Prep& Q, bool cl) {
  Q.wrows = P.wrows;
  Q.cl = cl;
  P.wphase = P.wrows * Q.T[0] * Q.T[1] * Q.T[2];
  Tensor wp = at::full({Q.phases * P.wphase}, NAN, at::kFloat);
  Tensor wc = w.contiguous();
  launch(dim3{1}, dim3{64}, [&] { prepare_weights<float>(wc.data_ptr<float>(), wp.data_ptr<float>(), Q); });
  return wp;
}
// The prepared weights of the 16-bit fast path: the 16-bit filter's own values.
Tensor prep16(const Tensor& wh, Plan& P, Prep& Q) {
  Q.wrows = P.wrows;
  Q.cl = true;
  P.wphase = P.wrows * Q.T[0] * Q.T[1] * Q.T[2];
  Tensor wp = at::full({Q.phases * P.wphase}, NAN, at::kHalf);
  Tensor wc = wh.contiguous();
  launch(dim3{1}, dim3{64}, [&] { prepare_weights<at::Half, at::Half>(wc.data_ptr<at::Half>(), wp.data_ptr<at::Half>(), Q); });
  return wp;
}
Tensor to_cl(const Tensor& t) {  // (N, C, *s) -> memory (N, *s, C) as a contiguous tensor
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < t.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return t.permute(perm).contiguous();
}
Tensor from_cl(const Tensor& t) {
  std::vector<int64_t> perm{0, t.dim() - 1};
  for (int64_t d = 1; d < t.dim() - 1; ++d) perm.push_back(d);
  return t.permute(perm);
}
void check(const char* what, const Tensor& out, const Tensor& ref, const std::string& name, double tol) {
  const double scale = std::max(1.0, ref.abs().max().item<double>());
  const bool nan = out.isnan().any().item<bool>();
  const double err = (out.to(at::kDouble) - ref).abs().max().item<double>() / scale;
  const bool bad = nan || err > tol;
  if (bad) ++failures;
  std::printf("%-44s %-34s err %.1e%s\n", name.c_str(), what, err, nan ? " NaN!" : (bad ? " FAIL" : ""));
}

// On x and gy as allocated and on copies one element past a 16-byte boundary.
template <typename T>
void roww_check(const char* what, const Plan& P, const Tensor& x, const Tensor& gy, const Tensor& ref, const std::string& name,
                double tol) {
  if (P.k[2] != 15 && P.k[2] != 31) return;
  for (int off : {0, 1}) {
    Tensor x1 = at::full({x.numel() + 1}, NAN, x.options()), g1 = at::full({gy.numel() + 1}, NAN, gy.options());
    x1.narrow(0, 1, x.numel()).copy_(x.flatten());
    g1.narrow(0, 1, gy.numel()).copy_(gy.flatten());
    const T* xp = off ? x1.data_ptr<T>() + 1 : x.contiguous().data_ptr<T>();
    const T* gp = off ? g1.data_ptr<T>() + 1 : gy.contiguous().data_ptr<T>();
    Tensor r = P.k[2] == 15 ? roww_run<T, 15>(xp, gp, P) : roww_run<T, 31>(xp, gp, P);
    const std::string tag = std::string(what) + " row1d" + (off ? " off1" : "");
    if (r.defined()) {
      ++row_taken;
      check(tag.c_str(), r.view(ref.sizes()), ref, name, tol);
    } else {
      ++row_declined;
      std::printf("%-44s %-34s declined\n", name.c_str(), tag.c_str());
    }
  }
}
// row_warp's weight-grad on x and gy as allocated and on copies one element past a 16-byte boundary.
template <typename T>
void rww_check(const char* what, const Plan& P, const Tensor& x, const Tensor& gy, const Tensor& ref, const std::string& name,
               double tol) {
  if (P.k[2] < 2 || P.k[2] > 4 || P.in[0] != 1 || P.in[1] != 1) return;
  for (int off : {0, 1}) {
    Tensor x1 = at::full({x.numel() + 1}, NAN, x.options()), g1 = at::full({gy.numel() + 1}, NAN, gy.options());
    x1.narrow(0, 1, x.numel()).copy_(x.flatten());
    g1.narrow(0, 1, gy.numel()).copy_(gy.flatten());
    const T* xp = off ? x1.data_ptr<T>() + 1 : x.contiguous().data_ptr<T>();
    const T* gp = off ? g1.data_ptr<T>() + 1 : gy.contiguous().data_ptr<T>();
    Tensor r = P.k[2] == 2 ? rww_run<T, 2>(xp, gp, P) : P.k[2] == 3 ? rww_run<T, 3>(xp, gp, P) : rww_run<T, 4>(xp, gp, P);
    const std::string tag = std::string(what) + " row_warp" + (off ? " off1" : "");
    if (r.defined()) {
      ++rw_taken;
      check(tag.c_str(), r.view(ref.sizes()), ref, name, tol);
    } else {
      std::printf("%-44s %-34s declined\n", name.c_str(), tag.c_str());
    }
  }
}
// Every nc_stream (kDepth3d: nc_depth3d) tile and load mode, and row1d's launches, on src (read)
// as allocated and on copies of src and of the output one element past a 16-byte boundary (rows
// and stores misaligned for the vector paths).
template <typename T, bool kDepth3d = false>
void st_check(const char* what, const Plan& P, const Tensor& src, const Tensor& wp, const Tensor& bias, const Tensor& ref,
              const std::string& name, double tol) {
  const char* which = "";
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  for (int off : {0, 1}) {
    const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
    auto one = [&](const std::string& tile, auto run) {
      Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
      o.fill_(NAN);
      if (run(ip, wp.data_ptr<float>(), bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P))
        check((std::string(what) + " " + which + " " + tile + (off ? " off1" : "")).c_str(), o, ref, name, tol);
    };
    if constexpr (kDepth3d) {
      d3_dispatch<T>(P, &which, one);
    } else {
      st_dispatch<T>(P, &which, one);
      row_dispatch<T>(P, [&](const std::string& tile, auto run) {
        Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
        o.fill_(NAN);
        if (run(ip, wp.data_ptr<float>(), bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P)) {
          ++row_taken;
          check((std::string(what) + " " + tile + (off ? " off1" : "")).c_str(), o, ref, name, tol);
        } else {
          ++row_declined;
          std::printf("%-44s %-34s declined\n", name.c_str(), (std::string(what) + " " + tile).c_str());
        }
      });
    }
  }
}

// nc_plane on src as allocated and on copies of src and of the output one element past a 16-byte
// boundary (the group spans' vectors then start mid-vector at both ends), with one block per group
// and with 3 blocks walking the groups, one and two output rows per thread.
template <typename T>
void np_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& wt, const Tensor& bias,
              const Tensor& ref, const std::string& name, double tol) {
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  for (int off : {0, 1}) {
    for (unsigned blocks : {0u, 3u}) {
     for (int th : {1, 2}) {
      const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
      Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
      o.fill_(NAN);
      NcPlane L{};
      if (np_dispatch<T>(ip, wt.data_ptr<T>(), flip, bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P,
                         blocks, th)) {
        choose_nc_plane(L, P, P.k[1], P.k[2], P.S[1], th, sizeof(T), flip);
        const std::string tag = std::string(what) + " plane th" + std::to_string(th) + " pb" + std::to_string(L.pb) +
                                " pitch" + std::to_string(L.pitch) + " g" + std::to_string(L.groups) + (blocks ? " b3" : "") +
                                (off ? " off1" : "");
        check(tag.c_str(), o, ref, name, tol);
      }
     }
    }
  }
}

// nc_plane_cp.cu's specialisations (16-bit 3x3 at stride 1 / 2, TH 4, 16-byte chunks; fp32 and
// 16-bit 5x5 at stride 1, TH 4, 8-byte chunks) on `blocks` blocks (0: one per group) of the
// launcher's size, at any plane size, bands skewed as the launcher does (5x5) or the other way.
// false when choose_nc_plane_cp declines; *lo the layout.
static int cp_runs = 0, cp_staged = 0, cp_skewed = 0;
template <typename T, int K, int S, int TH, int CH>
bool cp_run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, unsigned blocks, bool skew,
            NcPlaneCp* lo) {
  NcPlaneCp L{};
  if (!choose_nc_plane_cp(L, P, K, K, S, TH, sizeof(T), CH, in, out, flip, skew)) return false;
  g_smem_bytes = size_t(L.smem);
  const unsigned threads = unsigned(std::min<int64_t>(kCpThreads, ceil_div(int64_t(L.pb) * L.items.d, 32) * 32));
  launch(dim3{blocks ? std::min(blocks, L.groups) : L.groups}, dim3{threads},
         [&] { nc_plane_cp<T, K, K, S, TH, CH>(in, w, bias, out, L); });
  ++cp_runs;
  cp_staged += !L.direct;
  cp_skewed += L.bs != TH * L.pitch;
  *lo = L;
  return true;
}
template <typename T>
bool cp_dispatch(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, unsigned blocks,
                 bool other_skew, NcPlaneCp* lo) {
  if (P.k[1] != P.k[2] || P.S[1] != P.S[2]) return false;
  const bool skew = (P.k[1] == 5) != other_skew;
  if (P.k[1] == 5 && P.S[1] == 1) return cp_run<T, 5, 1, 4, 8>(in, w, flip, bias, out, P, blocks, skew, lo);
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    if (P.k[1] != 3) return false;
    if (P.S[1] == 1) return cp_run<T, 3, 1, 4, 16>(in, w, flip, bias, out, P, blocks, skew, lo);
    if (P.S[1] == 2) return cp_run<T, 3, 2, 4, 16>(in, w, flip, bias, out, P, blocks, skew, lo);
    return false;
  }
}
// nc_plane_cp on src as allocated and on copies of src and / or the output one element past a
// 16-byte boundary (a misaligned output is staged and stored as a span; a misaligned input
// declines: rows not in 16-byte chunks), one block per group and 3 blocks walking the groups.
template <typename T>
void cp_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& wt, const Tensor& bias,
              const Tensor& ref, const std::string& name, double tol) {
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  for (int off : {0, 1, 2, 3}) {
    for (unsigned blocks : {0u, 3u}) for (int v : {0, 1}) {  // v: bands as the launcher skews them, the other way
      const T* ip = off & 1 ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
      Tensor o = off & 2 ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
      o.fill_(NAN);
      NcPlaneCp L{};
      if (cp_dispatch<T>(ip, wt.data_ptr<T>(), flip, bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P,
                         blocks, v == 1, &L)) {
        const std::string tag = std::string(what) + " cp pb" + std::to_string(L.pb) + " pitch" +
                                std::to_string(L.pitch) + " bs" + std::to_string(L.bs) +
                                (L.direct ? " direct" : " staged") + " g" + std::to_string(L.groups) +
                                (blocks ? " b3" : "") + (off & 1 ? " in+1" : "") +
                                (off & 2 ? " out+1" : "");
        check(tag.c_str(), o, ref, name, tol);
      }
    }
  }
}

// nc_small_planes on src as allocated and on copies of src and of the output one element past a
// 16-byte boundary (the block spans' vectors then start mid-vector at both ends).
template <typename T>
void sp_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& wt, const Tensor& bias,
              const Tensor& ref, const std::string& name, double tol) {
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  for (int off : {0, 1}) {
    const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
    Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
    o.fill_(NAN);
    NcSmallPlanes L{};
    if (sp_dispatch<T>(ip, wt.data_ptr<T>(), flip, bias.defined() ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P)) {
      choose_nc_small_planes(L, P, P.k[1], P.k[2], P.S[1], sizeof(T), flip);
      const std::string tag = std::string(what) + " small planes pb" + std::to_string(L.pb) + "x" +
                              std::to_string(ceil_div(L.planes, L.pb)) + (off ? " off1" : "");
      check(tag.c_str(), o, ref, name, tol);
    }
  }
}

// ---- NCHW stride-2 data-grad writing whole rows (nc_stride2_dgrad.cuh), mirrors nc_stride2_dgrad.cu ----
static int s2_taken = 0, s2_declined = 0;
template <typename T, int TAPS, int P0, int P1, int R, int TH>
bool s2_run(const T* in, const float* w, const T* bias, T* out, const Plan& P) {
  NcS2 L{};
  if (!nc_stride2_items(L, P, TAPS, P0, P1, R, TH, in, out, sizeof(T))) return false;
  // x86 forgives misaligned vectors: the launcher must have refused them
  constexpr int SV = 2 * R < 16 / int(sizeof(T)) ? 2 * R : 16 / int(sizeof(T));
  if (reinterpret_cast<uintptr_t>(in) % (R * sizeof(T)) || reinterpret_cast<uintptr_t>(out) % (SV * sizeof(T))) {
    ++failures;
    std::printf("nc_stride2_dgrad took a misaligned row (R %d)\n", R);
  }
  launch(dim3{unsigned(ceil_div(L.items, kS2Threads))}, dim3{kS2Threads},
         [&] { nc_stride2_dgrad<T, TAPS, P0, P1, R, TH>(in, w, bias, out, P, L); });
  return true;
}
// f(tile, run) for the launcher's tile of its sub-filter shapes (2x2 pads (1, 0), 1x1 (0, 0)).
template <typename T, int TAPS, int P0, int P1, typename F>
void s2_tiles(F& f) {
  constexpr int R = s2_strip<T>();
  f("s2 R" + std::to_string(R) + "xTH" + std::to_string(kS2Band), s2_run<T, TAPS, P0, P1, R, kS2Band>);
}
template <typename T, typename F>
void s2_dispatch(const Plan& P, F&& f) {
  if (P.phases != 4 || P.k[1] != P.k[2]) return;
  const int taps = P.k[1], p0 = P.pad[1][0], p1 = P.pad[1][1];
  if (taps == 2 && p0 == 1 && p1 == 0) s2_tiles<T, 2, 1, 0>(f);
  if (taps == 1 && p0 == 0 && p1 == 0) s2_tiles<T, 1, 0, 0>(f);
}
// The launcher's tile on NaN-poisoned outputs, with and without bias (ref + bias), on src and
// output as allocated and on copies one element past a 16-byte boundary (src, output, both;
// taken only where the tile's vectors stay aligned, s2_run).
template <typename T>
void s2_check(const char* what, const Plan& P, const Tensor& src, const Tensor& wp, const Tensor& bias, const Tensor& ref,
              const std::string& name, double tol) {
  const auto opts = src.options();
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  const Tensor ref_b = ref.dim() == 4 ? ref + bias.to(at::kDouble).view({1, -1, 1, 1}) : ref;
  for (int off : {0, 1, 2, 3}) {
    const T* ip = off & 1 ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
    for (bool with_bias : {false, true}) {
      if (with_bias && off) continue;
      s2_dispatch<T>(P, [&](const std::string& tile, auto run) {
        Tensor o = off & 2 ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
        o.fill_(NAN);
        const std::string tag = std::string(what) + " " + tile + (with_bias ? " bias" : "") +
                                (off & 1 ? " in+1" : "") + (off & 2 ? " out+1" : "");
        if (run(ip, wp.data_ptr<float>(), with_bias ? bias.data_ptr<T>() : nullptr, o.data_ptr<T>(), P)) {
          ++s2_taken;
          check(tag.c_str(), o, with_bias ? ref_b : ref, name, tol);
        } else {
          ++s2_declined;
          std::printf("%-44s %-34s declined\n", name.c_str(), tag.c_str());
        }
      });
    }
  }
}
// ---- end stride-2 data-grad ----

// row_warp and cl_row1d read the layer's own filter in T (no preparation): fp32, fp16 and bf16
// against float64 on the same T-rounded data and filter (ref(dtype)); cl_row1d where the
// launcher's channels-last vectors fit (multiplier 1, C a multiple of 16 bytes' elements).
template <typename F>
void own_checks(const Plan& P, const Prep& Q, bool dgrad, const Tensor& src, const Tensor& w, const Tensor& bias, F&& ref,
                bool m1, int64_t C, const std::string& name) {
  auto one = [&](auto tag, at::ScalarType t, const char* what, double tol, int64_t V) {
    using T = decltype(tag);
    const Tensor st = src.to(t), wt = w.to(t).contiguous(), bt = bias.defined() ? bias.to(t) : Tensor();
    const Tensor r = ref(t);
    const std::string tagw = std::string(dgrad ? "dgrad" : "fwd") + what + " own-w";
    rw_check<T>(tagw.c_str(), P, Q, st, wt, bt, r, name, tol);
    np_check<T>(tagw.c_str(), P, dgrad, st, wt, bt, r, name, tol);
    cp_check<T>(tagw.c_str(), P, dgrad, st, wt, bt, r, name, tol);
    sp_check<T>(tagw.c_str(), P, dgrad, st, wt, bt, r, name, tol);
    if (m1 && C % V == 0) clr_check<T>(tagw.c_str(), P, Q, st, wt, bt, r, name, tol);
  };
  one(float{}, at::kFloat, "", 1e-4, 4);
  one(at::Half{}, at::kHalf, "16", 2e-3, 8);
  one(at::BFloat16{}, at::kBFloat16, "bf16", 1e-2, 8);
}

static bool g_rows_only = false;  // HARNESS_ONLY=rows: the 1-D run_case entries alone

void run_case(int rank, int64_t N, int64_t C, int64_t m, std::vector<int64_t> size, std::vector<int64_t> k,
              std::vector<int64_t> s, std::vector<int64_t> p) {
  if (g_rows_only && rank != 1) return;
  at::manual_seed(1);
  std::vector<int64_t> xs{N, C};
  xs.insert(xs.end(), size.begin(), size.end());
  std::vector<int64_t> ws{C * m, 1};
  ws.insert(ws.end(), k.begin(), k.end());
  Tensor x = at::randn(xs), w = at::randn(ws), b = at::randn({C * m});
  std::vector<int64_t> dil(rank, 1), op(rank, 0);
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), s, p, dil, false, op, C);
  Tensor gy = at::randn(y.sizes());
  auto grads = at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, s, p, dil,
                                        false, op, C, {true, true, false});
  Tensor gx_ref = std::get<0>(grads), gw_ref = std::get<1>(grads);
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C * m, g.groups = C;
  for (int d = 0; d < rank; ++d) {
    const int D = 3 - rank + d;
    g.input[D] = size[d], g.output[D] = y.size(2 + d), g.kernel[D] = k[d], g.stride[D] = s[d], g.padding[D] = p[d];
  }
  std::string name = "r" + std::to_string(rank) + " N" + std::to_string(N) + " C" + std::to_string(C) + " m" +
                     std::to_string(m) + " k" + std::to_string(k.back()) + " s" + std::to_string(s.back()) +
                     " p" + std::to_string(p.back()) + " sz" + std::to_string(size.back());
  const char* which = "";
  if (N == 0) {  // batch 0: no items, the launcher declines (the entry points return before it)
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    NcStream L{};
    const bool refused = !stream_items(L, P, 4, 8);
    if (!refused) ++failures;
    std::printf("%-44s %-10s %s\n", name.c_str(), "stream", refused ? "no items: declined" : "FAIL: took batch 0");
    return;
  }
  {  // forward NC
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    Tensor wp = prep(w, P, Q, false);
    Tensor out = at::full(y.sizes(), NAN);
    nc_dispatch<float>(x.data_ptr<float>(), wp.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), P, &which);
    check((std::string("fwd ") + which).c_str(), out, y, name);
    st_check<float>("fwd", P, x, wp, b, y, name, 1e-4);
    own_checks(P, Q, false, x, w, b, [&](at::ScalarType t) {
      return at::convolution(x.to(t).to(at::kDouble), w.to(t).to(at::kDouble), b.to(t).to(at::kDouble), s, p, dil, false,
                             op, C);
    }, m == 1, C, name);
    // Half storage, float accumulation: against float64 on the same half-rounded data.
    Tensor xh = x.to(at::kHalf), bh = b.to(at::kHalf);
    Tensor yh = at::convolution(xh.to(at::kDouble), w.to(at::kDouble), bh.to(at::kDouble), s, p, dil, false, op, C);
    st_check<at::Half>("fwd16", P, xh, wp, bh, yh, name, 2e-3);
    st_check<float, true>("fwd", P, x, wp, b, y, name, 1e-4);
    st_check<at::Half, true>("fwd16", P, xh, wp, bh, yh, name, 2e-3);
    if (m == 1 && C % 4 == 0) {
      Tensor wt = prep(w, P, Q, true);
      Tensor xc = to_cl(x), xch = to_cl(xh);
      cl_dispatch<float>(P, [&](const std::string& tile, auto run) {
        Tensor oc = at::full(to_cl(y).sizes(), NAN);
        cl_out_numel = oc.numel();
        if (run(xc.data_ptr<float>(), wt.data_ptr<float>(), b.data_ptr<float>(), oc.data_ptr<float>(), P))
          check(("fwd cl " + tile).c_str(), from_cl(oc), y, name);
      });
      cl3_dispatch<float>(P, [&](const std::string& tile, auto run) {
        Tensor oc = at::full(to_cl(y).sizes(), NAN);
        if (run(xc.data_ptr<float>(), wt.data_ptr<float>(), b.data_ptr<float>(), oc.data_ptr<float>(), P))
          check(("fwd " + tile).c_str(), from_cl(oc), y, name);
      });
      if (C % 8 == 0) {  // 16-bit channels-last takes 16-byte aligned channel rows
        cl_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
          Tensor oc = at::full(to_cl(y).sizes(), NAN, at::kHalf);
          cl_out_numel = oc.numel();
          if (run(xch.data_ptr<at::Half>(), wt.data_ptr<float>(), bh.data_ptr<at::Half>(), oc.data_ptr<at::Half>(), P))
            check(("fwd16 cl " + tile).c_str(), from_cl(oc), yh, name, 2e-3);
        });
        cl3_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
          Tensor oc = at::full(to_cl(y).sizes(), NAN, at::kHalf);
          if (run(xch.data_ptr<at::Half>(), wt.data_ptr<float>(), bh.data_ptr<at::Half>(), oc.data_ptr<at::Half>(), P))
            check(("fwd16 " + tile).c_str(), from_cl(oc), yh, name, 2e-3);
        });
        // the fast path: 16-bit weights, against float64 on the 16-bit filter
        Tensor wh = w.to(at::kHalf), wp16 = prep16(wh, P, Q);
        Tensor yhh = at::convolution(xh.to(at::kDouble), wh.to(at::kDouble), bh.to(at::kDouble), s, p, dil, false, op, C);
        cl16_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
          Tensor oc = at::full(to_cl(y).sizes(), NAN, at::kHalf);
          cl_out_numel = oc.numel();
          if (run(xch.data_ptr<at::Half>(), wp16.data_ptr<at::Half>(), bh.data_ptr<at::Half>(), oc.data_ptr<at::Half>(), P))
            check(("fwd16 cl16 " + tile).c_str(), from_cl(oc), yhh, name, 2e-3);
        });
      }
    }
  }
  {  // data-grad
    Plan P{}; Prep Q{};
    if (data_grad_plan(g, P, Q)) {
      Tensor wp = prep(w, P, Q, false);
      Tensor out = at::full(x.sizes(), NAN);
      nc_dispatch<float>(gy.data_ptr<float>(), wp.data_ptr<float>(), nullptr, out.data_ptr<float>(), P, &which);
      check((std::string("dgrad ") + which).c_str(), out, gx_ref, name);
      st_check<float>("dgrad", P, gy, wp, Tensor(), gx_ref, name, 1e-4);
      own_checks(P, Q, true, gy, w, Tensor(), [&](at::ScalarType t) {
        return std::get<0>(at::convolution_backward(gy.to(t).to(at::kDouble), x.to(at::kDouble), w.to(t).to(at::kDouble),
                                                    std::nullopt, s, p, dil, false, op, C, {true, false, false}));
      }, m == 1, C, name);
      Tensor gyh = gy.to(at::kHalf);
      Tensor gxh = std::get<0>(at::convolution_backward(gyh.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                        s, p, dil, false, op, C, {true, false, false}));
      st_check<at::Half>("dgrad16", P, gyh, wp, Tensor(), gxh, name, 2e-3);
      s2_check<float>("dgrad", P, gy, wp, b.narrow(0, 0, C), gx_ref, name, 1e-4);
      s2_check<at::Half>("dgrad16", P, gyh, wp, b.narrow(0, 0, C).to(at::kHalf), gxh, name, 2e-3);
      {
        Tensor gyb = gy.to(at::kBFloat16);
        Tensor gxb = std::get<0>(at::convolution_backward(gyb.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, s, p, dil, false, op, C, {true, false, false}));
        s2_check<at::BFloat16>("dgradbf16", P, gyb, wp, b.narrow(0, 0, C).to(at::kBFloat16), gxb, name, 1e-2);
      }
      st_check<float, true>("dgrad", P, gy, wp, Tensor(), gx_ref, name, 1e-4);
      st_check<at::Half, true>("dgrad16", P, gyh, wp, Tensor(), gxh, name, 2e-3);
      if (m == 1 && C % 4 == 0) {
        Tensor wt = prep(w, P, Q, true);
        Tensor gc = to_cl(gy);
        cl_dispatch<float>(P, [&](const std::string& tile, auto run) {
          Tensor oc = at::full(to_cl(x).sizes(), NAN);
          cl_out_numel = oc.numel();
          if (run(gc.data_ptr<float>(), wt.data_ptr<float>(), nullptr, oc.data_ptr<float>(), P))
            check(("dgrad cl " + tile).c_str(), from_cl(oc), gx_ref, name);
        });
        cl3_dispatch<float>(P, [&](const std::string& tile, auto run) {
          Tensor oc = at::full(to_cl(x).sizes(), NAN);
          if (run(gc.data_ptr<float>(), wt.data_ptr<float>(), nullptr, oc.data_ptr<float>(), P))
            check(("dgrad " + tile).c_str(), from_cl(oc), gx_ref, name);
        });
        if (cl_s2_covers(P) && gx_ref.dim() == 4) {  // the stride-2 data-grad writing both column phases, with and without bias (transposed conv)
          const Tensor bc = b.narrow(0, 0, C).contiguous();
          const Tensor ref_b = gx_ref + bc.to(at::kDouble).view({1, -1, 1, 1});
          const Tensor gh = gy.to(at::kHalf), gch = to_cl(gh), bh = bc.to(at::kHalf);
          const Tensor gr = std::get<0>(at::convolution_backward(gh.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                                 std::nullopt, s, p, dil, false, op, C, {true, false, false}));
          const Tensor gr_b = gr + bh.to(at::kDouble).view({1, -1, 1, 1});
          for (bool wb : {false, true}) {
            cls2_dispatch<float>(P, [&](const std::string& tile, auto run) {
              Tensor oc = at::full(to_cl(x).sizes(), NAN);
              run(gc.data_ptr<float>(), wt.data_ptr<float>(), wb ? bc.data_ptr<float>() : nullptr, oc.data_ptr<float>(), P);
              check(("dgrad " + tile + (wb ? " bias" : "")).c_str(), from_cl(oc), wb ? ref_b : gx_ref, name);
            });
            if (C % 8 == 0)
              cls2_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
                Tensor oc = at::full(to_cl(x).sizes(), NAN, at::kHalf);
                run(gch.data_ptr<at::Half>(), wt.data_ptr<float>(), wb ? bh.data_ptr<at::Half>() : nullptr,
                    oc.data_ptr<at::Half>(), P);
                check(("dgrad16 " + tile + (wb ? " bias" : "")).c_str(), from_cl(oc), wb ? gr_b : gr, name, 2e-3);
              });
          }
          ++cls2_cases;
        }
        if (C % 8 == 0) {  // half storage: against float64 on the same half-rounded gradient
          Tensor gh = gy.to(at::kHalf), gch = to_cl(gh);
          auto gr = at::convolution_backward(gh.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, s, p,
                                             dil, false, op, C, {true, false, false});
          cl_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
            Tensor oc = at::full(to_cl(x).sizes(), NAN, at::kHalf);
            cl_out_numel = oc.numel();
            if (run(gch.data_ptr<at::Half>(), wt.data_ptr<float>(), nullptr, oc.data_ptr<at::Half>(), P))
              check(("dgrad16 cl " + tile).c_str(), from_cl(oc), std::get<0>(gr), name, 2e-3);
          });
          cl3_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
            Tensor oc = at::full(to_cl(x).sizes(), NAN, at::kHalf);
            if (run(gch.data_ptr<at::Half>(), wt.data_ptr<float>(), nullptr, oc.data_ptr<at::Half>(), P))
              check(("dgrad16 " + tile).c_str(), from_cl(oc), std::get<0>(gr), name, 2e-3);
          });
          // the fast path: 16-bit weights, against float64 on the 16-bit filter
          Tensor wh = w.to(at::kHalf), wp16 = prep16(wh, P, Q);
          auto gr16 = at::convolution_backward(gh.to(at::kDouble), x.to(at::kDouble), wh.to(at::kDouble), std::nullopt, s,
                                               p, dil, false, op, C, {true, false, false});
          cl16_dispatch<at::Half>(P, [&](const std::string& tile, auto run) {
            Tensor oc = at::full(to_cl(x).sizes(), NAN, at::kHalf);
            cl_out_numel = oc.numel();
            if (run(gch.data_ptr<at::Half>(), wp16.data_ptr<at::Half>(), nullptr, oc.data_ptr<at::Half>(), P))
              check(("dgrad16 cl16 " + tile).c_str(), from_cl(oc), std::get<0>(gr16), name, 2e-3);
          });
        }
      }
    }
  }
  {  // weight-grad
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    Tensor r = ncw_dispatch<float>(x.data_ptr<float>(), gy.data_ptr<float>(), P, &which);
    if (r.defined()) check(which, r.view(gw_ref.sizes()), gw_ref, name);
    roww_check<float>("wgrad", P, x, gy, gw_ref, name, 1e-4);
    {  // half storage: against float64 on the same half-rounded data
      Tensor xh = x.to(at::kHalf), gh = gy.to(at::kHalf);
      auto gr = at::convolution_backward(gh.to(at::kDouble), xh.to(at::kDouble), w.to(at::kDouble), std::nullopt, s, p, dil,
                                         false, op, C, {false, true, false});
      roww_check<at::Half>("wgrad16", P, xh, gh, std::get<1>(gr), name, 2e-3);
      rww_check<at::Half>("wgrad16", P, xh, gh, std::get<1>(gr), name, 2e-3);
      Tensor xb = x.to(at::kBFloat16), gb = gy.to(at::kBFloat16);
      auto grb = at::convolution_backward(gb.to(at::kDouble), xb.to(at::kDouble), w.to(at::kDouble), std::nullopt, s, p,
                                          dil, false, op, C, {false, true, false});
      rww_check<at::BFloat16>("wgradbf16", P, xb, gb, std::get<1>(grb), name, 1e-2);
    }
    rww_check<float>("wgrad", P, x, gy, gw_ref, name, 1e-4);
    {  // depth-streaming NCDHW weight-grad, fp32 and half storage (float accumulation)
      int segs = 0;
      Tensor r3 = ncw3_dispatch<float>(x.data_ptr<float>(), gy.data_ptr<float>(), P, &segs);
      const std::string tag = "wgrad d3 segs" + std::to_string(segs);
      if (r3.defined()) check(tag.c_str(), r3.view(gw_ref.sizes()), gw_ref, name);
      Tensor xh = x.to(at::kHalf), gh = gy.to(at::kHalf);
      Tensor r3h = ncw3_dispatch<at::Half>(xh.data_ptr<at::Half>(), gh.data_ptr<at::Half>(), P, &segs);
      if (r3h.defined()) {
        const Tensor ref16 = std::get<1>(at::convolution_backward(gh.to(at::kDouble), xh.to(at::kDouble), w.to(at::kDouble),
                                                                  std::nullopt, s, p, dil, false, op, C, {false, true, false}));
        check((tag + " 16").c_str(), r3h.view(ref16.sizes()), ref16, name, 2e-3);
        // x and dy one element past a 16-byte boundary (the 16-bit row loads' misaligned path)
        Tensor x1 = at::full({xh.numel() + 1}, NAN, xh.options()), g1 = at::full({gh.numel() + 1}, NAN, gh.options());
        x1.narrow(0, 1, xh.numel()).copy_(xh.flatten());
        g1.narrow(0, 1, gh.numel()).copy_(gh.flatten());
        Tensor r3m = ncw3_dispatch<at::Half>(x1.data_ptr<at::Half>() + 1, g1.data_ptr<at::Half>() + 1, P, &segs);
        check((tag + " 16 off1").c_str(), r3m.view(ref16.sizes()), ref16, name, 2e-3);
      }
    }
    if (m == 1) {
      Tensor xc = to_cl(x), gc = to_cl(gy);
      for (bool wide : {false, true}) {
        const Tensor rc = clw_dispatch<float>(xc.data_ptr<float>(), gc.data_ptr<float>(), P, wide);
        if (rc.defined()) check(wide ? "wgrad cl64" : "wgrad cl", rc.view(gw_ref.sizes()), gw_ref, name);
      }
      // the two-channel tile of 15 / 31-tap rows (tried first for even channel counts), fp32 and half
      if (P.k[0] == 1 && P.k[1] == 1 && (P.k[2] == 15 || P.k[2] == 31) && P.S[2] == 1 && C % 2 == 0) {
        Tensor xh = xc.to(at::kHalf), gh = gc.to(at::kHalf);
        const Tensor ref16 = std::get<1>(at::convolution_backward(from_cl(gh).to(at::kDouble), from_cl(xh).to(at::kDouble),
                                                                  w.to(at::kDouble), std::nullopt, s, p, dil, false, op, C,
                                                                  {false, true, false}));
        for (bool wide : {false, true}) {
          const Tensor ra = P.k[2] == 15 ? clw_run<float, 1, 15, 1, true>(xc.data_ptr<float>(), gc.data_ptr<float>(), P, wide)
                                         : clw_run<float, 1, 31, 1, true>(xc.data_ptr<float>(), gc.data_ptr<float>(), P, wide);
          check(wide ? "wgrad cl pairs64" : "wgrad cl pairs", ra.view(gw_ref.sizes()), gw_ref, name);
        }

        const Tensor rh = P.k[2] == 15 ? clw_run<at::Half, 1, 15, 1, true>(xh.data_ptr<at::Half>(), gh.data_ptr<at::Half>(), P, false)
                                       : clw_run<at::Half, 1, 31, 1, true>(xh.data_ptr<at::Half>(), gh.data_ptr<at::Half>(), P, false);
        check("wgrad16 cl pairs", rh.view(ref16.sizes()), ref16, name, 2e-3);
      }
      // Half storage, float accumulation: against float64 on the same half-rounded data.
      Tensor xh = xc.to(at::kHalf), gh = gc.to(at::kHalf);
      auto gr = at::convolution_backward(from_cl(gh).to(at::kDouble), from_cl(xh).to(at::kDouble), w.to(at::kDouble),
                                         std::nullopt, s, p, dil, false, op, C, {false, true, false});
      const Tensor gw16_ref = std::get<1>(gr);
      // depth-streaming channels-last weight-grad: fp32 (32- and 64-bit item split), half
      for (bool wide : {false, true}) {
        int segs = 0;
        const Tensor r3 = clw3_dispatch<float>(xc.data_ptr<float>(), gc.data_ptr<float>(), P, wide, &segs);
        if (!r3.defined()) continue;
        ++clw3_taken;
        const std::string tag = std::string(wide ? "wgrad cl d3 64" : "wgrad cl d3") + " segs" + std::to_string(segs);
        check(tag.c_str(), r3.view(gw_ref.sizes()), gw_ref, name);
      }
      int segs = 0;
      const Tensor r3h = clw3_dispatch<at::Half>(xh.data_ptr<at::Half>(), gh.data_ptr<at::Half>(), P, false, &segs);
      if (r3h.defined()) {
        ++clw3_taken;
        check(("wgrad16 cl d3 segs" + std::to_string(segs)).c_str(), r3h.view(gw16_ref.sizes()), gw16_ref, name, 2e-3);
      }
      // 16-bit 1-D rows of 2-4 taps: the launcher's short tile (4 channels per lane, strips of 8)
      if (P.k[0] == 1 && P.k[1] == 1 && P.k[2] >= 2 && P.k[2] <= 4 && P.S[2] == 1) {
        const at::Half* xq = xh.data_ptr<at::Half>();
        const at::Half* gq = gh.data_ptr<at::Half>();
        const Tensor rs = P.k[2] == 2 ? clws_run<2>(xq, gq, P) : P.k[2] == 3 ? clws_run<3>(xq, gq, P) : clws_run<4>(xq, gq, P);
        if (rs.defined()) check("wgrad16 cl short16", rs.view(gw16_ref.sizes()), gw16_ref, name, 2e-3);
      }
    }
  }
}

// nc_stream's FastDiv against the hardware division: every divisor up to 2^16 and around powers of
// two up to 2^31, numerators at the ends of the range and around multiples of the divisor.
void check_fast_div() {
  std::vector<uint32_t> ds;
  for (uint32_t d = 1; d <= (1u << 16); ++d) ds.push_back(d);
  for (int k = 17; k <= 31; ++k)
    for (int64_t e = -3; e <= 3; ++e) ds.push_back(uint32_t(std::min<int64_t>((int64_t(1) << k) + e, int64_t(1) << 31)));
  int64_t bad = 0;
  for (uint32_t d : ds) {
    const FastDiv f = fast_div(d);
    const uint32_t top = (1u << 31) - 1;
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1 < top ? 2 * d - 1 : top, top, top - 1, top / d * d, top / d * d - 1,
                       uint32_t(uint64_t(d) * 12345 % (top + 1u)), uint32_t((uint64_t(d) * 2654435761u) % (top + 1u))}) {
      if (n > top) continue;
      uint32_t t = n;
      const uint32_t r = f.split(t);
      if (t != n / d || r != n % d) ++bad;
    }
  }
  if (bad) ++failures;
  std::printf("%-44s %-34s %s (%lld wrong)\n", "FastDiv", "divisors 1..2^16, ~2^17..2^31", bad ? "FAIL" : "ok", (long long)bad);
}

// nc_plane's plans: a 112x112 plane does not fit a block's shared memory (declines to nc_stream), a
// 56x56 one takes one plane per group, multiplier 2 and 3-D decline.
void check_np_limits() {
  auto plan = [](std::vector<int64_t> size, int64_t m, int rank) {
    Geometry g;
    g.batch = 2, g.in_channels = 4, g.out_channels = 4 * m, g.groups = 4;
    for (int d = 0; d < rank; ++d) {
      const int D = 3 - rank + d;
      g.input[D] = size[d], g.output[D] = size[d], g.kernel[D] = 3, g.stride[D] = 1, g.padding[D] = 1;
    }
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    return P;
  };
  NcPlane L{};
  const bool big = choose_nc_plane(L, plan({112, 112}, 1, 2), 3, 3, 1, 2, 4, false);
  const bool mid = choose_nc_plane(L, plan({56, 56}, 1, 2), 3, 3, 1, 2, 4, false) && L.pb == 1;
  const bool mult = choose_nc_plane(L, plan({7, 7}, 2, 2), 3, 3, 1, 2, 4, false);
  const bool d3 = choose_nc_plane(L, plan({3, 7, 7}, 1, 3), 3, 3, 1, 2, 4, false);
  NcSmallPlanes Ls{};
  const bool s_big = choose_nc_small_planes(Ls, plan({112, 112}, 1, 2), 3, 3, 1, 4, false);
  const bool s_mid = choose_nc_small_planes(Ls, plan({56, 56}, 1, 2), 3, 3, 1, 4, false) && Ls.pb == 1;
  const bool s_mult = choose_nc_small_planes(Ls, plan({7, 7}, 2, 2), 3, 3, 1, 4, false);
  const bool ok = !big && mid && !mult && !d3 && !s_big && s_mid && !s_mult;
  if (!ok) ++failures;
  std::printf("%-44s %-34s %s\n", "nc_plane limits", "112^2/m2/3-D decline, 56^2 pb 1", ok ? "ok" : "FAIL");
}


// tc_row1d.cuh (tensor-core 16-bit rows, the MMA through the shim's warp exchange): forward and
// data-grad of one 1-D problem in fp16 and bf16, on 16-bit data and filter, against float64;
// NCL at 1, 2, 3 and 8 (the launcher's) tiles per warp (one warp per 32-thread block), input and output as allocated
// and one element past a 16-byte boundary (every window / output misalignment with odd rows);
// channels-last when C % 8 == 0 (blocks of 32 channels, the last group partial when C % 32 != 0).
static int tc_taken = 0;
template <typename T, int KS>
void tc_ncl_run(const T* in, const T* w, const T* bias, T* out, const TcRow& L) {
  g_smem_bytes = tc_smem_bytes<KS>(1);
  launch(dim3{L.items}, dim3{32}, [&] { tc_row1d<T, KS>(in, w, bias, out, L); });
}
template <typename T, int KS>
void tc_cl_run(const T* in, const T* w, const T* bias, T* out, const TcRowCl& L) {
  g_smem_bytes = tc_cl_smem_bytes<KS, KS == 3>();  // the launcher's variant (3 k-steps: ldmatrix)
  launch(dim3{L.blocks}, dim3{kTcClThreads}, [&] { tc_row1d_cl<T, KS, KS == 3>(in, w, bias, out, L); });
}
template <typename T>
void tc_check(const char* what, const Plan& P, const Prep& Q, const Tensor& src, const Tensor& w16, const Tensor& bias,
              const Tensor& ref, const std::string& name, double tol) {
  const auto opts = src.options();
  const T* wp = w16.data_ptr<T>();
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const int K = P.k[2], wbase = Q.base[2][0], wstep = Q.step[2];
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts), out1 = at::full({ref.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  for (int tps : {1, 2, 3, kTcTilesPerWarp}) {
    for (int off : {0, 1}) {
      TcRow L{};
      int KS = 0;
      if (!tc_row1d_items(L, P, K, wbase, wstep, tps, KS)) {
        std::printf("%-44s %-34s declined\n", name.c_str(), what);
        return;
      }
      const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
      Tensor o = off ? out1.narrow(0, 1, ref.numel()).view(ref.sizes()) : at::full(ref.sizes(), NAN, opts);
      o.fill_(NAN);
      if (KS == 2) tc_ncl_run<T, 2>(ip, wp, bp, o.data_ptr<T>(), L);
      else if (KS == 3) tc_ncl_run<T, 3>(ip, wp, bp, o.data_ptr<T>(), L);
      else if (KS == 4) tc_ncl_run<T, 4>(ip, wp, bp, o.data_ptr<T>(), L);
      else { std::printf("%-44s %-34s KS %d not built\n", name.c_str(), what, KS); ++failures; return; }
      ++tc_taken;
      check((std::string(what) + " tc KS" + std::to_string(KS) + " tps" + std::to_string(tps) + (off ? " off1" : "")).c_str(),
            o, ref, name, tol);
    }
  }
  if (P.out_c % 8 != 0) return;
  Tensor xc = to_cl(src);
  // runs of 1, 2, 3 and 4 tiles per block (conf, session 13: the launcher's 2, or 4 for 3 k-steps on
  // rows of at most 4 tiles; the 3-k-step variant stages by ldmatrix)
  for (int tps : {1, kTcClTilesPerBlock, 3, kTcClTilesPerRowBlock}) {
    TcRowCl L{};
    int KS = 0;
    if (!tc_row1d_cl_blocks(L, P, K, wbase, wstep, tps, KS)) {
      std::printf("%-44s %-34s cl declined\n", name.c_str(), what);
      return;
    }
    Tensor oc = at::full(to_cl(ref).sizes(), NAN, opts);
    if (KS == 2) tc_cl_run<T, 2>(xc.data_ptr<T>(), wp, bp, oc.data_ptr<T>(), L);
    else if (KS == 3) tc_cl_run<T, 3>(xc.data_ptr<T>(), wp, bp, oc.data_ptr<T>(), L);
    else if (KS == 4) tc_cl_run<T, 4>(xc.data_ptr<T>(), wp, bp, oc.data_ptr<T>(), L);
    else { ++failures; return; }
    ++tc_taken;
    check((std::string(what) + " tc cl KS" + std::to_string(KS) + " tps" + std::to_string(tps)).c_str(), from_cl(oc),
          ref, name, tol);
  }
}
// One 1-D problem: N x C rows of length Lx, K taps, padding p (forward and data-grad).
template <typename T>
void tc_case(int64_t N, int64_t C, int64_t Lx, int64_t K, int64_t p, double tol) {
  at::manual_seed(2);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, Lx}).to(dt), w = at::randn({C, 1, K}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), {1}, {p}, {1}, false, {0}, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1}, {p}, {1}, false, {0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[2] = Lx, g.output[2] = y.size(2), g.kernel[2] = K, g.stride[2] = 1, g.padding[2] = p;
  const std::string name = std::string(dt == at::kHalf ? "tc fp16" : "tc bf16") + " N" + std::to_string(N) + " C" +
                           std::to_string(C) + " k" + std::to_string(K) + " p" + std::to_string(p) + " L" + std::to_string(Lx);
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    tc_check<T>("fwd", P, Q, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (data_grad_plan(g, P, Q)) tc_check<T>("dgrad", P, Q, gy, w, Tensor(), gx, name, tol);
}

// tc_rows_nc.cuh (tensor-core 2-D / 3-D NC(D)HW rows, 16-bit): forward and data-grad of one
// problem in fp16 and bf16 against float64 on the same rounded data, input as allocated and one
// element past a 16-byte boundary (single-element staging), block targets 1 and 4096 (one and
// several depth / h segments per column).
static int tcn_taken = 0;
template <typename T, int KD, int KH, int KS, int MT = 1, bool CL = false>
void tcn_run(const T* in, const T* w, const T* bias, T* out, const TcRowsNc& L) {
  g_smem_bytes = tcn_smem_bytes<T, KD, KH, KS, MT>(L.kw, L.pitch);
  launch(dim3{L.items}, dim3{unsigned(32 * L.nw)}, [&] { tc_rows_nc<T, KD, KH, KS, MT, CL>(in, w, bias, out, L); });
}
template <typename T>
void tcn_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w16, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol) {
  const auto opts = src.options();
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  Tensor src1 = at::full({src.numel() + 1}, NAN, opts);
  src1.narrow(0, 1, src.numel()).copy_(src.flatten());
  const int mt = sizeof(T) == 4 ? 2 : 1;  // fp32: two M-tiles per step, as the launcher
  for (int64_t target : {1, 4096}) {
    for (int off : {0, 1}) {
      const T* ip = off ? src1.data_ptr<T>() + 1 : src.data_ptr<T>();
      TcRowsNc L{};
      int KD = 0, KH = 0, KS = 0;
      if (!tc_rows_nc_plan(L, P, flip, ip, target, KD, KH, KS, mt)) {
        std::printf("%-44s %-34s declined FAIL\n", name.c_str(), what);
        ++failures;
        return;
      }
      Tensor o = at::full(ref.sizes(), NAN, opts);
      T* op = o.data_ptr<T>();
      const T* wp = w16.data_ptr<T>();
      if constexpr (std::is_same_v<T, float>) {
        if (KD == 1 && KH == 31 && KS == 5) tcn_run<T, 1, 31, 5, 2>(ip, wp, bp, op, L);
        else { std::printf("%-44s %-34s not built FAIL\n", name.c_str(), what); ++failures; return; }
      } else if (KD == 5 && KH == 3 && KS == 1) tcn_run<T, 5, 3, 1>(ip, wp, bp, op, L);
      else if (KD == 1 && KH == 7 && KS == 1) tcn_run<T, 1, 7, 1>(ip, wp, bp, op, L);
      else if (KD == 1 && KH == 31 && KS == 3) tcn_run<T, 1, 31, 3>(ip, wp, bp, op, L);
      else { std::printf("%-44s %-34s not built FAIL\n", name.c_str(), what); ++failures; return; }
      ++tcn_taken;
      check((std::string(what) + " tcn vec" + std::to_string(L.vec) + " nw" + std::to_string(L.nw) + " ch" +
             std::to_string(L.chunks) + " items" + std::to_string(L.items) + (off ? " off1" : "")).c_str(),
            o, ref, name, tol);
      if constexpr (std::is_same_v<T, float>) {  // channels-last (TF32): one 4-byte copy per value
        if (off == 0) {
          const Tensor sc = to_cl(src);
          TcRowsNc Lc{};
          if (!tc_rows_nc_plan(Lc, P, flip, sc.data_ptr<T>(), target, KD, KH, KS, mt, true)) {
            std::printf("%-44s %-34s cl declined FAIL\n", name.c_str(), what);
            ++failures;
            return;
          }
          Tensor oc = at::full(to_cl(ref).sizes(), NAN, opts);
          tcn_run<T, 1, 31, 5, 2, true>(sc.data_ptr<T>(), wp, bp, oc.data_ptr<T>(), Lc);
          ++tcn_taken;
          check((std::string(what) + " tcn cl items" + std::to_string(Lc.items)).c_str(), from_cl(oc), ref, name, tol);
        }
      }
    }
  }
}
// One 2-D (D = 0) or 3-D problem: N x C, spatial sizes, kernel, padding (forward and data-grad).
template <typename T>
void tcn_case(int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t kd, int64_t kh, int64_t kw, int64_t pd,
              int64_t ph, int64_t pw, double tol) {
  at::manual_seed(3);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  const bool three = D > 0;
  std::vector<int64_t> xs{N, C}, ws{C, 1}, pad, one;
  if (three) xs.push_back(D), ws.push_back(kd), pad.push_back(pd), one.push_back(1);
  xs.insert(xs.end(), {H, W});
  ws.insert(ws.end(), {kh, kw});
  pad.insert(pad.end(), {ph, pw});
  one.insert(one.end(), {1, 1});
  std::vector<int64_t> zero(one.size(), 0);
  Tensor x = at::randn(xs).to(dt), w = at::randn(ws).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), one, pad, one, false, zero, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   one, pad, one, false, zero, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  const int o = three ? 0 : 1;
  for (int d = o; d < 3; ++d) {
    g.input[d] = x.size(2 + d - o), g.output[d] = y.size(2 + d - o), g.kernel[d] = w.size(2 + d - o);
    g.padding[d] = pad[d - o];
  }
  const std::string name = std::string(dt == at::kFloat ? "tcn tf32" : dt == at::kHalf ? "tcn fp16" : "tcn bf16") + " N" + std::to_string(N) + " C" +
                           std::to_string(C) + " " + std::to_string(D) + "x" + std::to_string(H) + "x" +
                           std::to_string(W) + " k" + std::to_string(kd) + std::to_string(kh) + "x" + std::to_string(kw) +
                           " p" + std::to_string(pd) + std::to_string(ph) + "," + std::to_string(pw);
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    tcn_check<T>("fwd", P, false, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (data_grad_plan(g, P, Q)) tcn_check<T>("dgrad", P, true, gy, w, Tensor(), gx, name, tol);
}

// depth3d_regs.cuh (16-bit 5x3x3, filter in registers, input staged in shared memory):
// depth3d_nc_units / depth3d_cl_smem forward and data-grad of one 3-D problem in NCDHW and NDHWC
// against float64 on the same rounded data, block targets 1 and 2^40 (one and the most depth
// segments per column); the plans of want = false (and NDHWC channels not a multiple of 8) must
// be declined. (Misaligned tensors, declined by the launcher, are python_tests' `off1` cases.)
static int d3s_taken = 0;
template <typename T>
void d3r_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w16, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol, bool want) {
  const auto opts = src.options();
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const T* wp = w16.data_ptr<T>();
  for (bool cl : {false, true}) {
    const Tensor s0 = cl ? to_cl(src) : src.contiguous();
    const T* ip = s0.data_ptr<T>();
    const bool c8 = P.out_c % 8 == 0;  // NDHWC: 16-byte channel pieces
    for (int64_t target : {int64_t(1), int64_t(1) << 40}) {
      const std::string tag = std::string(what) + (cl ? " cl smem" : " nc units") + (target == 1 ? " seg1" : " segs");
      Tensor o = at::full(cl ? to_cl(ref).sizes() : ref.sizes(), NAN, opts);
      T* op = o.data_ptr<T>();
      bool taken = false;
      std::string info;
      if (cl) {
        D3sBlocks B{};
        if (depth3d_cl_smem_blocks(B, P, 5, target)) {
          launch(dim3{B.blocks}, dim3{kD3rThreads}, [&] { depth3d_cl_smem<T, 5>(ip, wp, flip, bp, op, P, B); });
          taken = true;
          info = " segs" + std::to_string(B.segs) + " blocks" + std::to_string(B.blocks);
        }
      } else {
        D3uBlocks B{};
        if (depth3d_nc_units_blocks(B, P, 5, target)) {
          g_smem_bytes = d3u_smem_bytes(B.strips * kD3rR, B.U, B.nr, sizeof(T));
          launch(dim3{B.blocks}, dim3{unsigned(B.U * B.nr * B.strips)},
                 [&] { depth3d_nc_units<T, 5>(ip, wp, flip, bp, op, P, B); });
          taken = true;
          info = " segs" + std::to_string(B.blocks / B.ublocks) + " U" + std::to_string(B.U) + " nr" +
                 std::to_string(B.nr) + " blocks" + std::to_string(B.blocks);
        }
      }
      const bool expect = want && (!cl || c8);
      if (taken != expect) {
        std::printf("%-44s %-34s %s FAIL\n", name.c_str(), tag.c_str(), taken ? "taken, expected declined" : "declined");
        ++failures;
      } else if (!taken) {
        std::printf("%-44s %-34s declined\n", name.c_str(), tag.c_str());
      } else {
        ++d3s_taken;
        check((tag + info).c_str(), cl ? from_cl(o) : o, ref, name, tol);
      }
    }
  }
}
// cl_wgrad_d3r (cl_wgrad.cu, NDHWC 16-bit 5x3x3 weight-grad) as run_d3r launches it, with 32- and
// 64-bit item indices, then sum_chunks; undefined when it declines.
static int clwr_taken = 0;
// wave > 0: cl_wgrad_d3s (staged in shared memory; channels a multiple of 8) on a grid of `wave`
// blocks in all, instead.
template <typename T>
Tensor clwr_run(const T* x, const T* gy, const Plan& P, bool wide_index, int* segs, int64_t wave = 0) {
  if (P.k[0] != 5 || P.k[1] != 3 || P.k[2] != 3 || P.pad[2][0] != 1 || P.q[2] != P.in[2] || P.q[2] % 8 != 0)
    return Tensor();
  if (wave > 0 && P.out_c % 8 != 0) return Tensor();
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (wave > 0 ? !choose_d3s_tile(L, P, wave, ctiles, chunks) : !choose_clw_tile(L, P, 1, 8, 10, 5, ctiles, chunks))
    return Tensor();
  if (wide_index) L.i32 = false;
  *segs = L.segs;
  const int64_t n = P.out_c * 45;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  if (wave > 0)
    launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_d3s<T, 5>(x, gy, pp, P, L); });
  else
    launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_d3r<T, 5>(x, gy, pp, P, L); });
  Tensor gw = at::full({n}, NAN, c10::CppTypeToScalarType<T>::value);
  T* gp = gw.data_ptr<T>();
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<T>(pp, gp, chunks, n); });
  return gw;
}
template <typename T>
void d3r_case(int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t pd, int64_t ph, int64_t pw, bool bias,
              double tol, bool want) {
  at::manual_seed(5);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, D, H, W}).to(dt), w = at::randn({C, 1, 5, 3, 3}).to(dt), b = at::randn({C}).to(dt);
  const std::vector<int64_t> pad{pd, ph, pw}, one{1, 1, 1}, zero{0, 0, 0};
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), bias ? b.to(at::kDouble) : Tensor(), one, pad, one,
                             false, zero, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   one, pad, one, false, zero, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  for (int d = 0; d < 3; ++d) {
    g.input[d] = x.size(2 + d), g.output[d] = y.size(2 + d), g.kernel[d] = w.size(2 + d);
    g.padding[d] = pad[d];
  }
  const std::string name = std::string(dt == at::kHalf ? "d3r fp16" : "d3r bf16") + " N" + std::to_string(N) + " C" +
                           std::to_string(C) + " " + std::to_string(D) + "x" + std::to_string(H) + "x" +
                           std::to_string(W) + " p" + std::to_string(pd) + std::to_string(ph) + std::to_string(pw) +
                           (bias ? " bias" : "");
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    d3r_check<T>("fwd", P, false, x, w, bias ? b : Tensor(), y, name, tol, want);
  }
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    Tensor gw = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                     std::nullopt, one, pad, one, false, zero, C, {false, true, false}));
    const Tensor xc = to_cl(x), gc = to_cl(gy);
    // d3r with 32- / 64-bit item indices; d3s with one block per channel tile (every item walked
    // by one block, the staging running on across items) and with 1000 (one item each, segments)
    for (int v = 0; v < 4; ++v) {
      const bool wide = v == 1;
      const int64_t wave = v == 2 ? 1 : (v == 3 ? 1000 : 0);
      int segs = 0;
      Tensor r = clwr_run<T>(xc.data_ptr<T>(), gc.data_ptr<T>(), P, wide, &segs, wave);
      const std::string tag = std::string(wave ? "wgrad cl d3s wave" + std::to_string(wave) : "wgrad cl d3r") +
                              (wide ? " i64" : "") + " segs" + std::to_string(segs);
      if (!r.defined()) {
        const bool miss = want && (wave == 0 || P.out_c % 8 == 0);
        std::printf("%-44s %-34s declined%s\n", name.c_str(), tag.c_str(), miss ? " FAIL" : "");
        if (miss) ++failures;
        continue;
      }
      ++clwr_taken;
      check(tag.c_str(), r.view(gw.sizes()), gw, name, tol * 4);
    }
  }
  Plan P{}; Prep Q{};
  if (data_grad_plan(g, P, Q)) d3r_check<T>("dgrad", P, true, gy, w, Tensor(), gx, name, tol, want);
}

// ---- tc_wgrad1d.cu's tensor-core weight-grads (15 / 31-tap 1-D rows, fp16 / bf16) ----
static int tcw_taken = 0;
// The launcher's kernel (several chunks: the last block of each channel / group sums), on poisoned partials and gw; `target`
// blocks (so one and several chunks are both walked). Undefined when it declines.
template <typename T, int K>
Tensor tcw_run(const T* x, const T* gy, const Plan& P, bool cl, int64_t target, int64_t* chunks) {
  Tensor gw = at::full({P.out_c * K}, NAN, c10::CppTypeToScalarType<T>::value);
  Tensor part, counters;
  if (cl) {
    if constexpr (K != 31) {
      return Tensor();  // the launcher takes 31-tap (N, L, C) rows only
    } else {
      TcwCl L{};
      if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(gy) % 16 != 0 ||
          !tcw_cl_items(L, P, target)) return Tensor();
      *chunks = L.chunks;
      part = at::full({P.out_c * L.chunks * K}, NAN, at::kFloat);
      counters = at::zeros({int64_t(L.groups)}, at::kInt);
      g_smem_bytes = tcw_cl_smem_bytes<K>();
      launch(dim3{L.groups * L.chunks}, dim3{kTcwThreads}, [&] {
        tcw_cl<T, K>(x, gy, part.data_ptr<float>(), reinterpret_cast<unsigned*>(counters.data_ptr<int>()), gw.data_ptr<T>(), L);
      });
    }
  } else {
    TcwRows L{};
    if (!tcw_rows_items(L, P, target)) return Tensor();
    *chunks = L.chunks;
    part = at::full({P.out_c * L.chunks * K}, NAN, at::kFloat);
    counters = at::zeros({P.out_c}, at::kInt);
    g_smem_bytes = tcw_smem_bytes<K>();
    launch(dim3{unsigned(P.out_c * L.chunks)}, dim3{kTcwThreads}, [&] {
      tcw_rows<T, K>(x, gy, part.data_ptr<float>(), reinterpret_cast<unsigned*>(counters.data_ptr<int>()), gw.data_ptr<T>(), P, L);
    });
  }
  // every block counted itself once: each channel's (group's) counter ends at the chunk count
  if (*chunks > 1 && counters.ne(int(*chunks)).any().item<bool>()) {
    ++failures;
    std::printf("tcw: a counter is not %lld after the launch\n", static_cast<long long>(*chunks));
  }
  return gw;
}
// One 1-D problem (N, C, L, K, padding) in both layouts and both 16-bit types, against float64 on
// the same rounded data; NCL also on copies one element past a 16-byte boundary (windows staged
// from mid-vector), (N, L, C) there must decline (and for 15 taps: the launcher leaves those to
// cl_wgrad_partial). Waves of 1, the launcher's and 4096 blocks: one chunk (gw written by the
// kernel), the launcher's split and the most chunks.
template <typename T>
void tcw_case(int64_t N, int64_t C, int64_t Lx, int K, int pad, double tol) {
  at::manual_seed(7);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, Lx}).to(dt), w = at::randn({C, 1, K});
  Tensor y = at::conv1d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, pad, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1}, {pad}, {1}, false, {0}, C,
                                                          {false, true, false})).view({C * K});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[2] = Lx, g.output[2] = y.size(2), g.kernel[2] = K, g.padding[2] = pad;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  const std::string name = std::string(dt == at::kHalf ? "fp16" : "bf16") + " N" + std::to_string(N) + " C" +
                           std::to_string(C) + " L" + std::to_string(Lx) + " k" + std::to_string(K) + " p" +
                           std::to_string(pad);
  for (bool cl : {false, true}) {
    const Tensor xm = cl ? to_cl(x) : x.contiguous(), gm = cl ? to_cl(gy) : gy.contiguous();
    for (int off : {0, 1}) {
      Tensor x1 = at::full({xm.numel() + 1}, NAN, xm.options()), g1 = at::full({gm.numel() + 1}, NAN, gm.options());
      x1.narrow(0, 1, xm.numel()).copy_(xm.flatten());
      g1.narrow(0, 1, gm.numel()).copy_(gm.flatten());
      const T* xp = off ? x1.data_ptr<T>() + 1 : xm.data_ptr<T>();
      const T* gp = off ? g1.data_ptr<T>() + 1 : gm.data_ptr<T>();
      for (int64_t target : {int64_t(1), cl ? kTcwClWave : kTcwRowsWave, int64_t(4096)}) {
        int64_t chunks = 0;
        const Tensor r = K == 15 ? tcw_run<T, 15>(xp, gp, P, cl, target, &chunks) : tcw_run<T, 31>(xp, gp, P, cl, target, &chunks);
        const std::string tag = std::string("wgrad tc ") + (cl ? "nlc" : "ncl") + (off ? " off1" : "") + " chunks " +
                                std::to_string(chunks);
        if (r.defined()) {
          ++tcw_taken;
          check(tag.c_str(), r, ref, name, tol);
        } else {
          const bool expected = cl && (K != 31 || off || C % 8 != 0);
          if (!expected) ++failures;
          std::printf("%-44s %-34s declined%s\n", name.c_str(), tag.c_str(), expected ? "" : " FAIL");
        }
      }
    }
  }
}
void tcw_cases() {
  // Conformer-like 31 taps 'same' (vector staging in the rows, several segments, 2 warps' worth of
  // items), lengths not a multiple of 8 (windows from mid-vector, rows' ends inside a vector),
  // rows shorter than a 16-output block, padding 0 and beyond the filter, causal 15 taps (output
  // L + 14), channels a multiple of 8 but not of 16 ((N, L, C): a half-empty channel group),
  // channels not a multiple of 8 ((N, L, C) declines), many short rows (NCL in chunks).
  tcw_case<at::BFloat16>(3, 16, 1000, 31, 15, 1e-2);
  tcw_case<at::Half>(2, 8, 333, 31, 15, 2e-3);
  tcw_case<at::Half>(20, 8, 70, 15, 14, 2e-3);
  tcw_case<at::BFloat16>(2, 24, 9, 15, 7, 1e-2);
  tcw_case<at::Half>(2, 8, 5, 31, 15, 2e-3);
  tcw_case<at::Half>(1, 16, 600, 15, 0, 2e-3);
  tcw_case<at::BFloat16>(2, 8, 300, 31, 40, 1e-2);
  tcw_case<at::Half>(2, 8, 530, 15, 14, 2e-3);
  tcw_case<at::Half>(2, 3, 77, 31, 15, 2e-3);
  tcw_case<at::BFloat16>(66, 2, 20, 15, 7, 1e-2);  // 66 items per channel: NCL in 2 chunks
  tcw_case<at::BFloat16>(40, 8, 60, 31, 15, 1e-2);  // (N, L, C) in 10 chunks: the last block's sum, 8 + 2
  std::printf("tc_wgrad1d: %d launches checked\n", tcw_taken);
}
// ---- tc_wgrad3d.cu's tensor-core weight-grad (KD x 3 x 3, fp16 / bf16, NCDHW and NDHWC) ----
static int tcw3_taken = 0;
// The launcher's kernel and (several chunks) sum_slots on poisoned partials and gw, with
// `target` blocks; undefined when the plan is declined.
template <typename T, int KD>
Tensor tcw3_run(const T* x, const T* gy, const Plan& P, bool cl, bool aligned, int64_t target, int64_t* chunks,
                bool* vec) {
  Tcw3 L{};
  if (!tcw3_plan(L, P, cl, target, aligned)) return Tensor();
  constexpr int NV = 9 * KD;
  Tensor gw = at::full({P.out_c * NV}, NAN, c10::CppTypeToScalarType<T>::value);
  Tensor part = at::full({P.out_c * L.chunks * NV}, NAN, at::kFloat);
  *chunks = L.chunks;
  *vec = L.vec;
  g_smem_bytes = tcw3_smem_bytes<KD>(cl);
  launch(dim3{L.groups * L.chunks}, dim3{unsigned(cl ? kTcw3ClThreads : kTcw3Threads)}, [&] {
    if constexpr (KD == 5) {  // tcw3_plan takes NDHWC for KD 5 only
      if (cl) return tcw3_cl<T, KD>(x, gy, part.data_ptr<float>(), gw.data_ptr<T>(), L);
    }
    tcw3_nc<T, KD>(x, gy, part.data_ptr<float>(), gw.data_ptr<T>(), L);
  });
  if (L.chunks > 1) {
    launch(dim3{unsigned(ceil_div(P.out_c * NV, 256))}, dim3{256},
           [&] { sum_slots<T>(part.data_ptr<float>(), gw.data_ptr<T>(), P.out_c, L.chunks, NV); });
  }
  return gw;
}
// One problem in both layouts against float64 on the same rounded data, as allocated and one
// element past a 16-byte boundary (NCDHW: staged value by value; NDHWC: declined), with 1 and
// 4096 blocks' worth of chunks. `takes`: whether the plan is one the kernel covers (NDHWC: also
// KD 5 and channels a multiple of 8).
template <typename T>
void tcw3_case(int64_t N, int64_t C, std::array<int64_t, 3> sz, int KD, std::array<int64_t, 3> pad, int64_t stride,
               bool takes, double tol) {
  at::manual_seed(11);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, sz[0], sz[1], sz[2]}).to(dt), w = at::randn({C, 1, KD, 3, 3});
  Tensor y = at::conv3d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), stride, {pad[0], pad[1], pad[2]}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(
      gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, {stride, stride, stride},
      {pad[0], pad[1], pad[2]}, {1, 1, 1}, false, {0, 0, 0}, C, {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  for (int d = 0; d < 3; ++d) {
    g.input[d] = sz[d], g.output[d] = y.size(2 + d), g.kernel[d] = d == 0 ? KD : 3, g.padding[d] = pad[d];
    g.stride[d] = stride;
  }
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ldx%ld k%dx3x3 p%ld,%ld,%ld s%ld", dt == at::kHalf ? "fp16" : "bf16",
                long(N), long(C), long(sz[0]), long(sz[1]), long(sz[2]), KD, long(pad[0]), long(pad[1]), long(pad[2]),
                long(stride));
  for (bool cl : {false, true}) {
    const Tensor xm = cl ? to_cl(x) : x.contiguous(), gm = cl ? to_cl(gy) : gy.contiguous();
    for (int off : {0, 1}) {
      Tensor x1 = at::full({xm.numel() + 1}, NAN, xm.options()), g1 = at::full({gm.numel() + 1}, NAN, gm.options());
      x1.narrow(0, 1, xm.numel()).copy_(xm.flatten());
      g1.narrow(0, 1, gm.numel()).copy_(gm.flatten());
      const T* xp = off ? x1.data_ptr<T>() + 1 : xm.data_ptr<T>();
      const T* gp = off ? g1.data_ptr<T>() + 1 : gm.data_ptr<T>();
      for (int64_t target : {1, 4096}) {
        int64_t chunks = 0;
        bool vec = false;
        const Tensor r = KD == 5 ? tcw3_run<T, 5>(xp, gp, P, cl, off == 0, target, &chunks, &vec)
                                 : tcw3_run<T, 3>(xp, gp, P, cl, off == 0, target, &chunks, &vec);
        const std::string tag = std::string("wgrad tc3d ") + (cl ? "ndhwc" : vec ? "ncdhw vec" : "ncdhw values") +
                                " chunks " + std::to_string(chunks);
        const bool expect = takes && !(cl && (off || C % 8 != 0 || KD != 5));
        if (r.defined() != expect) ++failures;
        if (r.defined()) {
          ++tcw3_taken;
          check(tag.c_str(), r, ref, name, tol);
        } else {
          std::printf("%-44s %-34s declined%s\n", name, tag.c_str(), expect ? " FAIL" : "");
        }
      }
    }
  }
}
void tcw3_cases() {
  // X3D's k5x3x3 'same' on aligned rows (NCDHW 16-byte staging; 2 depth and 2 row tiles cut by
  // the sizes; NDHWC 2 channel groups), k3 on 24-wide rows, no padding on odd widths (NCDHW value
  // staging), padding k - 1 on both filters (output wider than the input), two column tiles,
  // batch 3 in chunks across samples; stride 2, padding beyond k - 1 and NDHWC k3 decline.
  tcw3_case<at::BFloat16>(1, 16, {9, 10, 16}, 5, {2, 1, 1}, 1, true, 1e-2);
  tcw3_case<at::Half>(2, 8, {4, 5, 24}, 3, {1, 1, 1}, 1, true, 2e-3);
  tcw3_case<at::Half>(1, 8, {7, 6, 19}, 5, {0, 0, 0}, 1, true, 2e-3);
  tcw3_case<at::BFloat16>(1, 3, {3, 4, 8}, 3, {2, 2, 2}, 1, true, 1e-2);
  tcw3_case<at::Half>(1, 8, {5, 3, 72}, 5, {4, 2, 1}, 1, true, 2e-3);
  tcw3_case<at::BFloat16>(3, 8, {2, 9, 7}, 3, {1, 0, 1}, 1, true, 1e-2);
  tcw3_case<at::Half>(1, 8, {5, 6, 8}, 3, {1, 1, 1}, 2, false, 2e-3);
  tcw3_case<at::Half>(1, 8, {5, 6, 8}, 3, {1, 3, 1}, 1, false, 2e-3);
  std::printf("tc_wgrad3d: %d launches checked\n", tcw3_taken);
  if (tcw3_taken == 0) ++failures;
}
// ---- tc_wgrad2d.cu's tensor-core weight-grad (5x5 / 7x7, fp16 / bf16, NCHW and NHWC) ----
static int tcw2_taken = 0;
// The launcher's kernel (its last blocks summing the chunks) on poisoned partials and gw, with
// `target` blocks; undefined when the plan is declined.
template <typename T, int K>
Tensor tcw2_run(const T* x, const T* gy, const Plan& P, bool cl, int64_t target, int64_t* chunks, int* vec) {
  Tcw2 L{};
  if (!tcw2_plan(L, P, cl, target, reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy))) return Tensor();
  constexpr int NV = K * K;
  Tensor gw = at::full({P.out_c * NV}, NAN, c10::CppTypeToScalarType<T>::value);
  Tensor part = at::full({P.out_c * L.chunks * NV}, NAN, at::kFloat);
  Tensor counters = at::zeros({int64_t(L.groups)}, at::kInt);
  *chunks = L.chunks;
  *vec = cl ? 8 : L.vec;
  g_smem_bytes = cl ? tcw2_cl_smem_bytes<K>(L) : tcw2_nc_smem_bytes(L);
  if (cl ? g_smem_bytes > size_t(tcw2_cl_smem_max<K>()) : g_smem_bytes > 48 * 1024) ++failures;
  unsigned* cnt = reinterpret_cast<unsigned*>(counters.data_ptr<int>());
  auto go = [&](auto nj) {
    constexpr int NJ = decltype(nj)::value;
    launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(kTcw2Threads)}, [&] {
      if (cl) {
        tcw2_cl<T, K, NJ>(x, gy, part.data_ptr<float>(), cnt, gw.data_ptr<T>(), L);
      } else {
        tcw2_nc<T, K, NJ>(x, gy, part.data_ptr<float>(), cnt, gw.data_ptr<T>(), L);
      }
    });
  };
  if (L.nj == 1) {
    go(std::integral_constant<int, 1>{});
  } else if (L.nj == 2) {
    go(std::integral_constant<int, 2>{});
  } else {
    go(std::integral_constant<int, 4>{});
  }
  if (L.chunks > 1 && !(counters == int(L.chunks)).all().item<bool>()) ++failures;
  return gw;
}
// One problem in both layouts against float64 on the same rounded data, as allocated and one
// element past a 16-byte boundary (NCHW: value by value staging unless the rows are even; NHWC:
// declined), with 1 and 2048 blocks' worth of chunks. `takes`: whether the plan is one the kernel
// covers (NHWC: also channels a multiple of 8).
template <typename T>
void tcw2_case(int64_t N, int64_t C, int64_t H, int64_t W, int K, int64_t ph, int64_t pw, int64_t stride, bool takes,
               double tol) {
  at::manual_seed(12);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), stride, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(
      gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, {stride, stride}, {ph, pw}, {1, 1},
      false, {0, 0}, C, {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = stride;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld s%ld", dt == at::kHalf ? "fp16" : "bf16", long(N),
                long(C), long(H), long(W), K, long(ph), long(pw), long(stride));
  for (bool cl : {false, true}) {
    const Tensor xm = cl ? to_cl(x) : x.contiguous(), gm = cl ? to_cl(gy) : gy.contiguous();
    for (int off : {0, 1}) {
      Tensor x1 = at::full({xm.numel() + 1}, NAN, xm.options()), g1 = at::full({gm.numel() + 1}, NAN, gm.options());
      x1.narrow(0, 1, xm.numel()).copy_(xm.flatten());
      g1.narrow(0, 1, gm.numel()).copy_(gm.flatten());
      const T* xp = off ? x1.data_ptr<T>() + 1 : xm.data_ptr<T>();
      const T* gp = off ? g1.data_ptr<T>() + 1 : gm.data_ptr<T>();
      for (int64_t target : {1, 2048}) {
        int64_t chunks = 0;
        int vec = 0;
        // (K 3: the plan declines whatever the template)
        const Tensor r = K == 7 ? tcw2_run<T, 7>(xp, gp, P, cl, target, &chunks, &vec)
                                : tcw2_run<T, 5>(xp, gp, P, cl, target, &chunks, &vec);
        const std::string tag = std::string("wgrad tc2d ") + (cl ? "nhwc" : "nchw") + " vec " + std::to_string(vec) +
                                " chunks " + std::to_string(chunks);
        const bool expect = takes && !(cl && (off || C % 8 != 0));
        if (r.defined() != expect) ++failures;
        if (r.defined()) {
          ++tcw2_taken;
          check(tag.c_str(), r, ref, name, tol);
        } else {
          std::printf("%-44s %-34s declined%s\n", name, tag.c_str(), expect ? " FAIL" : "");
        }
      }
    }
  }
}
void tcw2_cases() {
  // ConvNeXt-like 7x7 'same' on 16-byte rows (NCHW one row tile of 40, NHWC three of 14; 4 column
  // steps); 5x5 on 28-wide rows (8-byte vectors, 2 steps), 2 NHWC channel groups; 5x5 on 12-wide
  // rows (4-byte vectors, one step), odd height; rows wider than 64 (two column tiles, 4-byte
  // vectors), no padding; odd widths (value by value) with padding K - 1 (output wider than the
  // input); one output row; 7x7 planes, batch 3 in chunks across samples; 3 channels (NHWC
  // declines); 70 rows (NCHW two row tiles of 35) on 24-wide rows; 3x3, stride 2 and padding beyond
  // K - 1 decline.
  tcw2_case<at::BFloat16>(2, 8, 40, 56, 7, 3, 3, 1, true, 1e-2);
  tcw2_case<at::Half>(2, 16, 28, 28, 5, 2, 2, 1, true, 2e-3);
  tcw2_case<at::Half>(1, 8, 13, 12, 5, 2, 2, 1, true, 2e-3);
  tcw2_case<at::BFloat16>(1, 8, 9, 70, 5, 0, 0, 1, true, 1e-2);
  tcw2_case<at::Half>(1, 8, 11, 19, 7, 6, 6, 1, true, 2e-3);
  tcw2_case<at::Half>(1, 8, 5, 21, 5, 0, 4, 1, true, 2e-3);
  tcw2_case<at::BFloat16>(3, 8, 7, 7, 7, 3, 3, 1, true, 1e-2);
  tcw2_case<at::Half>(1, 3, 9, 16, 5, 2, 2, 1, true, 2e-3);
  tcw2_case<at::BFloat16>(1, 8, 70, 24, 5, 2, 2, 1, true, 1e-2);
  tcw2_case<at::Half>(1, 8, 13, 12, 3, 1, 1, 1, false, 2e-3);
  tcw2_case<at::Half>(1, 8, 9, 16, 5, 2, 2, 2, false, 2e-3);
  tcw2_case<at::Half>(1, 8, 9, 16, 5, 5, 1, 1, false, 2e-3);
  std::printf("tc_wgrad2d: %d launches checked\n", tcw2_taken);
  if (tcw2_taken == 0) ++failures;
}
// cl_wgrad.cu's run_rows2d<>: 16-bit 2-D channels-last weight-grads through rows_as_depth (the
// rows streamed as depth) on cl_wgrad_depth3d or (pipe) cl_wgrad_rows, then sum_chunks, on
// poisoned buffers, with 32- and 64-bit item splits; max_lanes as the launcher passes it.
static int clwr2_taken = 0;
template <typename T, int K, int VW, int R, bool pipe = false>
Tensor clwr2_run(const T* x, const T* gy, const Plan& P2, bool wide_index, int64_t max_lanes, int* segs) {
  const Plan P = rows_as_depth(P2);
  if (P.out_c % VW != 0) return Tensor();
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, R - 1 + K, K, ctiles, chunks, kWgradWave, max_lanes)) return Tensor();
  if (wide_index) L.i32 = false;
  *segs = L.segs;
  const int64_t n = P.out_c * K * K;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  const unsigned threads = unsigned(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  if constexpr (pipe) {
    launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_rows<T, K, K, VW, R>(x, gy, pp, P, L); });
  } else {
    launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{threads}, [&] { cl_wgrad_depth3d<T, K, 1, K, 1, VW, R>(x, gy, pp, P, L); });
  }
  Tensor gw = at::full({n}, NAN, c10::CppTypeToScalarType<T>::value);
  T* gp = reinterpret_cast<T*>(gw.data_ptr());
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<T>(pp, gp, chunks, n); });
  ++clwr2_taken;
  return gw;
}
template <typename T, int K, int VW, int R, bool pipe = false>
void clwr2_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t max_lanes, double tol) {
  at::manual_seed(13);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  const Tensor xc = to_cl(x), gc = to_cl(gy);
  for (bool wide : {false, true}) {
    int segs = 0;
    const Tensor r = clwr2_run<T, K, VW, R, pipe>(xc.data_ptr<T>(), gc.data_ptr<T>(), P, wide, max_lanes, &segs);
    char name[128];
    std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld", dt == at::kHalf ? "fp16" : "bf16", long(N),
                  long(C), long(H), long(W), K, long(ph), long(pw));
    const std::string tag = std::string(pipe ? "wgrad rows2d pipe vw" : "wgrad rows2d vw") + std::to_string(VW) + " r" + std::to_string(R) + " lanes" +
                            std::to_string(max_lanes) + " segs" + std::to_string(segs) + (wide ? " i64" : "");
    if (!r.defined()) {
      std::printf("%-40s %-44s declined FAIL\n", name, tag.c_str());
      ++failures;
      continue;
    }
    check(tag.c_str(), r, ref, name, tol);
  }
}
// nc_wgrad.cu's run_stream with one chunk per channel: nc_wgrad_stream writing the 16-bit
// weight-grad itself (O = T), on a poisoned buffer; every block of the grid walked.
template <typename T, int K>
void ncwd_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t p, double tol) {
  at::manual_seed(14);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {p, p}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {p, p}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = g.padding[2] = p, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  NcWgradTile L{};
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld", dt == at::kHalf ? "fp16" : "bf16", long(N), long(C),
                long(H), long(W), K, long(p));
  if (!choose_nc_wgrad(L, P, wgrad_cols<K>(), wgrad_rows<K>(), 1, K, K) || L.chunks != 1) {
    std::printf("%-40s wgrad nc direct: not one chunk FAIL\n", name);
    ++failures;
    return;
  }
  Tensor gw = at::full({C * K * K}, NAN, dt);
  T* gp = reinterpret_cast<T*>(gw.data_ptr());
  const Tensor xc = x.contiguous(), gc = gy.contiguous();
  launch(dim3{unsigned(C)}, dim3{unsigned(L.threads)}, [&] { nc_wgrad_stream<T, K, K, 1, T>(xc.data_ptr<T>(), gc.data_ptr<T>(), gp, P, L); });
  check("wgrad nc direct", gw, ref, name, tol);
  ++clwr2_taken;
}
void clwr2_cases() {
  // nc_wgrad_stream writing the weight-grad itself (one chunk per channel)
  ncwd_case<at::Half, 3>(8, 20, 7, 7, 1, 2e-3);
  ncwd_case<at::BFloat16, 5>(3, 9, 9, 11, 2, 1e-2);
  ncwd_case<at::Half, 3>(2, 2100, 5, 6, 0, 2e-3);
  // run_rows16's three tiles, channel tiles of at most 32 lanes: MobileNetV2-like 7x7 planes (C 960:
  // 8 channel tiles, strips cut by the edge), odd sizes with strips and columns cut by the edges, no
  // padding, padding K - 1 (output larger than the input), columns cut into several depth
  // segments (H 40), channel tiles with idle lanes (C 40 / 18 / 7)
  clwr2_case<at::Half, 3, 2, 4, true>(2, 960, 7, 7, 1, 1, 32, 2e-3);
  clwr2_case<at::BFloat16, 3, 2, 4, true>(3, 18, 6, 5, 2, 2, 32, 1e-2);
  clwr2_case<at::Half, 3, 2, 4, true>(2, 40, 7, 3, 0, 0, 32, 2e-3);
  clwr2_case<at::Half, 3, 4, 4, false>(3, 24, 13, 11, 1, 1, 32, 2e-3);
  clwr2_case<at::BFloat16, 3, 4, 4, false>(1, 16, 40, 9, 0, 0, 32, 1e-2);
  clwr2_case<at::Half, 3, 4, 4, false>(2, 144, 10, 14, 2, 2, 32, 2e-3);
  clwr2_case<at::Half, 5, 1, 7, true>(2, 24, 14, 13, 2, 2, 32, 2e-3);
  clwr2_case<at::BFloat16, 5, 1, 7, true>(1, 7, 30, 17, 4, 4, 32, 1e-2);
  clwr2_case<at::Half, 5, 1, 7, true>(2, 40, 11, 14, 2, 0, 32, 2e-3);
  clwr2_case<at::BFloat16, 5, 1, 7, true>(2, 240, 28, 28, 2, 2, 32, 1e-2);
  clwr2_case<at::Half, 5, 1, 7, true>(1, 16, 9, 5, 0, 2, 32, 2e-3);
  std::printf("rows2d: %d launches checked\n", clwr2_taken);
}

// ---- mb16 (session 13): cl_wgrad_s2d, the 16-bit 2-D 3x3 / 5x5 channels-last weight-grad staged
// in shared memory (cl_wgrad.cu's run_s2d): the partial kernel, then sum_chunks, on poisoned
// buffers; `chunks` > 0 caps the grid so that a block walks several items (the staging running on
// from one item into the next). ----
static int s2d_taken = 0;
template <typename T, int K>
void s2d_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t cap, double tol) {
  at::manual_seed(16);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[128];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld", dt == at::kHalf ? "fp16" : "bf16", long(N),
                long(C), long(H), long(W), K, long(ph), long(pw));
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_s2d_tile<K>(L, P, ctiles, chunks)) {
    std::printf("%-40s wgrad s2d declined FAIL\n", name);
    ++failures;
    return;
  }
  if (cap > 0) chunks = std::min(chunks, cap);
  const Tensor xc = to_cl(x), gc = to_cl(gy);
  const int64_t n = C * K * K;
  Tensor part = at::full({chunks, n}, NAN, at::kFloat);
  float* pp = part.data_ptr<float>();
  launch(dim3{unsigned(ctiles), unsigned(chunks)}, dim3{unsigned(ClS2dShape<K>::THREADS)},
         [&] { cl_wgrad_s2d<T, K>(xc.data_ptr<T>(), gc.data_ptr<T>(), pp, P, L); });
  Tensor gw = at::full({n}, NAN, dt);
  T* gp = reinterpret_cast<T*>(gw.data_ptr());
  dim3 sgrid, sblock;
  sgrid.x = unsigned(ceil_div(n, kSumCols)), sblock.x = unsigned(kSumCols * kSumSlices);
  launch(sgrid, sblock, [&] { sum_chunks<T>(pp, gp, chunks, n); });
  const std::string tag = "wgrad s2d blocks" + std::to_string(L.strips) + " segs" + std::to_string(L.segs) +
                          " items" + std::to_string(L.items) + " chunks" + std::to_string(chunks);
  check(tag.c_str(), gw, ref, name, tol);
  ++s2d_taken;
}
// nc_wgrad.cu's run_s2d: nc_wgrad_s2d on a poisoned buffer, one chunk writing the weight-grad
// itself, several chunks their partials (summed here); grid capped at `grid` blocks (0: all).
template <typename T, int K>
void ncs2d_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t grid, double tol) {
  at::manual_seed(17);
  const int64_t pw = (K - 1) / 2;
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[128];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld", dt == at::kHalf ? "fp16" : "bf16", long(N),
                long(C), long(H), long(W), K, long(ph), long(pw));
  const Tensor xc = x.contiguous(), gc = gy.contiguous();
  NcS2dTile L{};
  if (!choose_nc_s2d<K>(L, P, reinterpret_cast<uintptr_t>(xc.data_ptr()), reinterpret_cast<uintptr_t>(gc.data_ptr()),
                        2)) {
    std::printf("%-40s wgrad nc s2d declined FAIL\n", name);
    ++failures;
    return;
  }
  const int64_t blocks = C * L.chunks;
  const unsigned gx = unsigned(grid > 0 ? std::min(grid, blocks) : blocks);
  Tensor r;
  if (L.chunks == 1) {
    r = at::full({C * K * K}, NAN, dt);
    T* rp = reinterpret_cast<T*>(r.data_ptr());
    g_smem_bytes = size_t(kNcS2dRing) * L.slot * 2;
    launch(dim3{gx}, dim3{unsigned(L.threads)}, [&] { nc_wgrad_s2d<T, K, T>(xc.data_ptr<T>(), gc.data_ptr<T>(), rp, P, L); });
  } else {
    Tensor part = at::full({C, int64_t(L.chunks), K * K}, NAN, at::kFloat);
    float* pp = part.data_ptr<float>();
    g_smem_bytes = size_t(kNcS2dRing) * L.slot * 2;
    launch(dim3{gx}, dim3{unsigned(L.threads)}, [&] { nc_wgrad_s2d<T, K>(xc.data_ptr<T>(), gc.data_ptr<T>(), pp, P, L); });
    r = part.sum(1).view({-1});
  }
  const std::string tag = "wgrad nc s2d sp" + std::to_string(L.SP) + " pb" + std::to_string(L.PB) + " chunks" +
                          std::to_string(L.chunks) + " grid" + std::to_string(gx);
  check(tag.c_str(), r, ref, name, tol);
  ++s2d_taken;
}
// ---- mb (session 14): nc_wgrad.cu's run_s2d for 3x3: nc_wgrad_s2d_ranges dealt to `resident`
// blocks ((channel, step) units in contiguous ranges), whole channels a block writing a poisoned
// weight-grad, else poisoned partials [blocks][cmax][taps] summed by nc_s2d_sum.
template <typename T, int K>
void ncs2d_ranges_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t resident, double tol) {
  at::manual_seed(17);
  const int64_t pw = (K - 1) / 2;
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[128];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld", dt == at::kHalf ? "fp16" : "bf16", long(N),
                long(C), long(H), long(W), K, long(ph), long(pw));
  const Tensor xc = x.contiguous(), gc = gy.contiguous();
  NcS2dTile L{};
  if (!choose_nc_s2d<K>(L, P, reinterpret_cast<uintptr_t>(xc.data_ptr()), reinterpret_cast<uintptr_t>(gc.data_ptr()), 2)) {
    std::printf("%-40s wgrad nc s2d ranges declined FAIL\n", name);
    ++failures;
    return;
  }
  deal_nc_s2d(L, C, resident);
  const bool whole = nc_s2d_whole_channels(L, C);
  Tensor r = at::full({C * K * K}, NAN, dt);
  T* rp = reinterpret_cast<T*>(r.data_ptr());
  g_smem_bytes = size_t(kNcS2dRing) * L.slot * 2;
  if (whole) {
    launch(dim3{unsigned(L.blocks)}, dim3{unsigned(L.threads)},
           [&] { nc_wgrad_s2d_ranges<T, K, T>(xc.data_ptr<T>(), gc.data_ptr<T>(), rp, P, L); });
  } else {
    Tensor part = at::full({int64_t(L.blocks), int64_t(L.cmax), K * K}, NAN, at::kFloat);
    float* pp = part.data_ptr<float>();
    launch(dim3{unsigned(L.blocks)}, dim3{unsigned(L.threads)},
           [&] { nc_wgrad_s2d_ranges<T, K>(xc.data_ptr<T>(), gc.data_ptr<T>(), pp, P, L); });
    launch(dim3{unsigned((C * K * K + 255) / 256)}, dim3{256u}, [&] { nc_s2d_sum<T>(pp, rp, C, L, K * K); });
  }
  const std::string tag = "wgrad nc s2d ranges sp" + std::to_string(L.SP) + " pb" + std::to_string(L.PB) + " blocks" +
                          std::to_string(L.blocks) + " cmax" + std::to_string(L.cmax) + (whole ? " whole" : "");
  check(tag.c_str(), r, ref, name, tol);
  ++s2d_taken;
}
// ---- end mb (session 14) ----
void s2d_cases() {
  // 3x3: odd sizes (a column block cut by the edge), several channel tiles (C 144) and a partial
  // one (C 40: idle lanes, zero pieces), two column blocks (W 60 > 56), padding 0 and 2, the rows
  // cut into segments, a capped grid (several items per block)
  s2d_case<at::Half, 3>(2, 48, 13, 11, 1, 1, 0, 2e-3);
  s2d_case<at::BFloat16, 3>(1, 144, 9, 60, 1, 1, 0, 1e-2);
  s2d_case<at::Half, 3>(3, 40, 7, 5, 0, 0, 0, 2e-3);
  s2d_case<at::Half, 3>(2, 56, 6, 9, 2, 2, 3, 2e-3);
  s2d_case<at::BFloat16, 3>(5, 96, 11, 14, 1, 0, 2, 1e-2);
  // 5x5: EfficientNet-like 28x28 C 240 (5 tiles), odd sizes, two column blocks (W 30 > 28),
  // padding 0 and 4, a capped grid
  s2d_case<at::BFloat16, 5>(2, 240, 28, 28, 2, 2, 0, 1e-2);
  s2d_case<at::Half, 5>(2, 16, 14, 13, 2, 2, 0, 2e-3);
  s2d_case<at::Half, 5>(1, 24, 9, 30, 0, 4, 0, 2e-3);
  s2d_case<at::BFloat16, 5>(3, 8, 12, 7, 4, 1, 2, 1e-2);
  // NCHW 5x5 (nc_wgrad_s2d): 28x28 (8-byte copies, two samples a step, an odd sample count: a half
  // step), 4-byte copies, padding 0 in height, several chunks (partials), a grid of 3 blocks walking
  // the (channel, chunk) pairs
  ncs2d_case<at::BFloat16, 5>(5, 4, 28, 28, 2, 0, 1e-2);
  ncs2d_case<at::Half, 5>(6, 2, 9, 12, 4, 3, 2e-3);
  ncs2d_case<at::Half, 5>(9, 3, 14, 14, 0, 0, 2e-3);
  ncs2d_case<at::Half, 5>(40, 1, 28, 28, 2, 0, 2e-3);
  // ---- mb (session 14): NCHW 3x3 (nc_wgrad_s2d_ranges) dealt to `resident` blocks: MobileNetV2-like
  // 56x56 (16-byte copies, one sample a step) over 4 blocks (channels split across blocks, a block
  // meeting 2 channels) and 3 blocks, odd heights (whole channels a block), 4-byte copies (width 6),
  // padding 0 in height, more resident blocks than units, one block for everything
  ncs2d_ranges_case<at::Half, 3>(3, 5, 56, 56, 1, 4, 2e-3);
  ncs2d_ranges_case<at::Half, 3>(8, 1, 56, 56, 1, 3, 2e-3);
  ncs2d_ranges_case<at::Half, 3>(4, 6, 13, 16, 1, 5, 2e-3);
  ncs2d_ranges_case<at::BFloat16, 3>(7, 3, 11, 6, 0, 100, 1e-2);
  ncs2d_ranges_case<at::BFloat16, 3>(9, 2, 20, 24, 1, 7, 1e-2);
  ncs2d_ranges_case<at::Half, 3>(5, 7, 9, 28, 1, 1, 2e-3);
  ncs2d_ranges_case<at::BFloat16, 3>(6, 5, 30, 32, 2, 3, 1e-2);
  // ---- end mb (session 14) ----
  std::printf("s2d: %d launches checked\n", s2d_taken);
  if (s2d_taken == 0) ++failures;
}
// ---- end mb16 ----

// ---- column-walking 7x7 kernels (walk2d.cuh), mirror walk_wgrad2d.cu / walk_conv2d.cu ----
static int walk_taken = 0;
// The kernel on NaN-poisoned partials with `target` blocks and bands of `rows` rows, then the
// ordered chunk sum.
template <typename T, bool CL>
Tensor walk_run(const T* x, const T* gy, const Plan& P, int64_t target, int rows, int* chunks) {
  Walk2d L{};
  if (!walk2d_plan(L, P, 7, CL, target, rows)) return Tensor();
  *chunks = L.chunks;
  Tensor part = at::full({P.in_c, int64_t(L.chunks), 49}, NAN, at::kFloat);
  Tensor gw = at::full({P.in_c * 49}, NAN, c10::CppTypeToScalarType<T>::value);
  float* pp = part.data_ptr<float>();
  launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(kWalkThreads)},
         [&] { walk_wgrad2d<T, 7, CL>(x, gy, pp, L); });
  const int64_t n = P.in_c * 49;
  launch(dim3{unsigned((n + 255) / 256)}, dim3{256u},
         [&] { sum_slots<T>(pp, gw.data_ptr<T>(), P.in_c, L.chunks, 49); });
  return gw;
}
// One 7x7 problem in both layouts against float64 on the same rounded data, with 1 block per
// channel (group) and with as many chunks as the items allow, bands of 16 and of 4 rows. Both
// layouts of both kernels run here, also those dispatch does not route (walk_conv2d: NHWC only).
template <typename T>
void walk_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, double tol) {
  at::manual_seed(13);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, 7, 7});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(
      gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, {1, 1}, {ph, pw}, {1, 1},
      false, {0, 0}, C, {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = 7, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k7 p%ld,%ld",
                dt == at::kHalf ? "fp16" : dt == at::kBFloat16 ? "bf16" : "fp32", long(N), long(C), long(H), long(W),
                long(ph), long(pw));
  for (bool cl : {false, true}) {
    const Tensor xm = cl ? to_cl(x) : x.contiguous(), gm = cl ? to_cl(gy) : gy.contiguous();
    for (int64_t target : {int64_t(1), int64_t(1) << 30}) for (int rows : {kWalkBandRows, 4}) {
      int chunks = 0;
      const Tensor r = cl ? walk_run<T, true>(xm.data_ptr<T>(), gm.data_ptr<T>(), P, target, rows, &chunks)
                          : walk_run<T, false>(xm.data_ptr<T>(), gm.data_ptr<T>(), P, target, rows, &chunks);
      const std::string tag = std::string("wgrad walk ") + (cl ? "nhwc" : "nchw") + " rows " + std::to_string(rows) +
                              " chunks " + std::to_string(chunks);
      if (!r.defined()) {
        ++failures;
        std::printf("%-44s %-34s declined FAIL\n", name, tag.c_str());
        continue;
      }
      ++walk_taken;
      check(tag.c_str(), r.to(at::kDouble), ref, name, tol);
    }
  }
}
void walk_cases() {
  // ConvNeXt's 'same' padding on a plane of two bands (17 rows: 9 + 8), strips cut by the row's
  // end (W 22, 10), 40 channels (NHWC: a full and a partial group of 32); padding 0 (output
  // smaller than the input), 6 (output wider: rows and columns of zeros at both ends), unequal
  // paddings, one output row, a plane smaller than the filter's reach,
  // 20 samples (NCHW: 3 chunks of 128 items), 14 x 14 in fp16 / bf16; rows a multiple of 4 wide
  // at padding 3 and 7
  walk_case<float>(2, 40, 17, 22, 3, 3, 1e-5);
  walk_case<float>(1, 3, 12, 10, 0, 0, 1e-5);
  walk_case<float>(1, 2, 9, 11, 6, 6, 1e-5);
  walk_case<float>(2, 2, 8, 13, 1, 5, 1e-5);
  walk_case<float>(3, 2, 7, 30, 0, 3, 1e-5);
  walk_case<float>(1, 2, 3, 4, 3, 3, 1e-5);
  walk_case<float>(20, 2, 17, 22, 3, 3, 1e-5);
  walk_case<float>(2, 40, 10, 24, 3, 3, 1e-5);
  walk_case<float>(1, 2, 9, 12, 7, 7, 1e-5);
  walk_case<at::Half>(1, 8, 14, 28, 3, 3, 2e-3);
  walk_case<at::Half>(2, 33, 14, 14, 3, 3, 2e-3);
  walk_case<at::BFloat16>(2, 5, 14, 14, 3, 3, 1e-2);
  std::printf("walk_wgrad2d: %d launches checked\n", walk_taken);
  if (walk_taken == 0) ++failures;
}
// ---- w7 (session 13): channels-last 7x7 weight-grad from staged bands (cl_band_wgrad2d.cuh, mirrors
// cl_band_wgrad2d.cu) and the grouped chunk sum (wgrad_sum.cuh, walk_wgrad2d.cu) ----
static int clbw_taken = 0;
// The kernel on NaN-poisoned partials and NaN-filled shared memory (shim), then the ordered chunk
// sum (fused: zeroed counters, the group's last block sums; else sum_slots after); undefined when
// the plan declines. clw (session 14): K 5 and tiles of TC = 4 columns, the fused sum.
template <typename T, int K, int TC>
Tensor clbw_run(const T* x, const T* gy, const Plan& P, int band_rows, int64_t target, bool fused, int* chunks) {
  constexpr int NV = K * K;
  ClBandWg L{};
  if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, target, 110 * 1024, sizeof(T))) return Tensor();
  *chunks = L.chunks;
  Tensor part = at::full({P.in_c, int64_t(L.chunks), NV}, NAN, at::kFloat);
  Tensor gw = at::full({P.in_c * NV}, NAN, c10::CppTypeToScalarType<T>::value);
  std::vector<unsigned> counters(size_t(L.groups), 0u);
  float* pp = part.data_ptr<float>();
  T* gp = gw.data_ptr<T>();
  unsigned* cp = fused ? counters.data() : nullptr;
  g_smem_bytes = size_t(L.smem);
  launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(L.threads)},
         [&] { cl_band_wgrad2d<T, K, TC>(x, gy, pp, cp, gp, L); });
  if (!fused) {
    const int64_t n = P.in_c * NV;
    launch(dim3{unsigned((n + 255) / 256)}, dim3{256u}, [&] { sum_slots<T>(pp, gp, P.in_c, L.chunks, NV); });
  }
  return gw;
}
template <typename T, int K = 7, int TC = 8>
void clbw_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, double tol) {
  at::manual_seed(19);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  const Tensor ref = std::get<1>(at::convolution_backward(
      gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt, {1, 1}, {ph, pw}, {1, 1},
      false, {0, 0}, C, {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k%d p%ld,%ld TC%d",
                dt == at::kHalf ? "fp16" : dt == at::kBFloat16 ? "bf16" : "fp32", long(N), long(C), long(H), long(W),
                K, long(ph), long(pw), TC);
  const Tensor xm = to_cl(x), gm = to_cl(gy);
  for (int rows : {4, 8, 16}) for (int64_t target : {int64_t(1), int64_t(1) << 30}) for (bool fused : {false, true}) {
    int chunks = 0;
    const Tensor r = clbw_run<T, K, TC>(xm.data_ptr<T>(), gm.data_ptr<T>(), P, rows, target, fused, &chunks);
    const std::string tag = "wgrad cl band " + std::to_string(rows) + " chunks " + std::to_string(chunks) +
                            (fused ? " fused" : "");
    if (!r.defined()) {
      ++failures;
      std::printf("%-44s %-34s declined FAIL\n", name, tag.c_str());
      continue;
    }
    ++clbw_taken;
    check(tag.c_str(), r.to(at::kDouble), ref, name, tol);
  }
}
// The grouped chunk sum (wgrad_sum.cuh, walk_wgrad2d.cu's NHWC partials) against float64 sums of
// the same partials: slot counts below, at and above a multiple of the 16 groups, taps across two
// tiles of 32.
void sumg_case(int64_t rows, int64_t slots, int64_t taps) {
  at::manual_seed(23);
  Tensor part = at::randn({rows, slots, taps});
  const Tensor ref = part.to(at::kDouble).sum(1).view({-1});
  Tensor gw = at::full({rows * taps}, NAN, at::kFloat);
  const float* pp = part.data_ptr<float>();
  launch(dim3{unsigned(rows), unsigned((taps + kSumTaps - 1) / kSumTaps)}, dim3{unsigned(kSumTaps * kSumGroups)},
         [&] { sum_slots_grouped<float>(pp, gw.data_ptr<float>(), slots, taps); });
  char name[64];
  std::snprintf(name, sizeof name, "rows %ld slots %ld taps %ld", long(rows), long(slots), long(taps));
  check("sum_slots_grouped", gw.to(at::kDouble), ref, name, 1e-5);
  ++clbw_taken;
}
void clbw_cases() {
  // channels-last: two channel groups, bands cut by the plane's end (17 rows), top / bottom padding
  // rows per band, padding 6 and 0, a plane smaller than the filter, 16-bit groups of 16 channels
  clbw_case<float>(2, 16, 17, 22, 3, 3, 1e-5);
  clbw_case<float>(1, 8, 9, 11, 6, 6, 1e-5);
  clbw_case<float>(2, 8, 8, 13, 1, 5, 1e-5);
  clbw_case<float>(1, 8, 3, 4, 3, 3, 1e-5);
  clbw_case<float>(3, 8, 12, 10, 0, 0, 1e-5);
  clbw_case<at::BFloat16>(3, 16, 14, 14, 3, 3, 1e-2);
  clbw_case<at::Half>(2, 32, 12, 18, 2, 4, 2e-3);
  // clw (session 14): fp32 on tiles of 4 columns (the launcher's), 7 x 7 and 5 x 5 (EfficientNet's
  // 'same' padding, planes cut by the bands and tiles, padding 4, 6 and 0, a plane smaller than the
  // filter); the fused chunk sum (clbw_run runs both sums)
  clbw_case<float, 7, 4>(2, 16, 17, 22, 3, 3, 1e-5);
  clbw_case<float, 7, 4>(1, 8, 9, 11, 6, 6, 1e-5);
  clbw_case<float, 7, 4>(3, 8, 12, 10, 0, 0, 1e-5);
  clbw_case<float, 5, 4>(1, 8, 9, 11, 4, 4, 1e-5);
  clbw_case<float, 5, 4>(2, 16, 13, 22, 2, 2, 1e-5);
  clbw_case<float, 5, 4>(1, 8, 3, 2, 2, 2, 1e-5);
  clbw_case<float, 5, 4>(3, 8, 12, 10, 0, 1, 1e-5);
  sumg_case(3, 100, 49);
  sumg_case(2, 64, 49);
  sumg_case(2, 7, 9);
  std::printf("cl_band_wgrad2d / sum_slots_grouped: %d launches checked\n", clbw_taken);
  if (clbw_taken == 0) ++failures;
}
// The forward / stride-1 data-grad kernel (walk_conv2d) on a NaN-poisoned output, `target`
// blocks, bands of `rows` rows; false when the plan is declined.
static int walkc_taken = 0;
template <typename T, bool CL>
bool walkc_run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, int64_t target, int rows) {
  Walk2d L{};
  if (!walk2d_plan(L, P, 7, CL, target, rows)) return false;
  launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(kWalkThreads)},
         [&] { walk_conv2d<T, 7, CL>(in, w, flip, bias, out, L); });
  return true;
}
template <typename T>
void walkc_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w, const Tensor& b,
                 const Tensor& ref, const std::string& name, double tol) {
  for (bool cl : {false, true}) {
    const Tensor sm = cl ? to_cl(src) : src.contiguous();
    for (int64_t target : {int64_t(1), int64_t(1) << 30}) for (int rows : {kWalkBandRows, 4}) {
      Tensor o = at::full(ref.sizes(), NAN, src.options());
      if (cl) o = to_cl(o);
      const T* bp = b.defined() ? b.data_ptr<T>() : nullptr;
      const bool ok = cl ? walkc_run<T, true>(sm.data_ptr<T>(), w.data_ptr<T>(), flip, bp, o.data_ptr<T>(), P, target, rows)
                         : walkc_run<T, false>(sm.data_ptr<T>(), w.data_ptr<T>(), flip, bp, o.data_ptr<T>(), P, target, rows);
      const std::string tag = std::string(what) + " walk " + (cl ? "nhwc" : "nchw") + " rows " + std::to_string(rows) +
                              (target == 1 ? " 1 chunk" : " chunks");
      if (!ok) {
        ++failures;
        std::printf("%-44s %-34s declined FAIL\n", name.c_str(), tag.c_str());
        continue;
      }
      ++walkc_taken;
      check(tag.c_str(), (cl ? from_cl(o) : o).to(at::kDouble), ref, name, tol);
    }
  }
}
template <typename T>
void walkc_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, double tol) {
  at::manual_seed(14);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, 7, 7}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = 7, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  char name[96];
  std::snprintf(name, sizeof name, "%s N%ld C%ld %ldx%ld k7 p%ld,%ld",
                dt == at::kHalf ? "fp16" : dt == at::kBFloat16 ? "bf16" : "fp32", long(N), long(C), long(H), long(W),
                long(ph), long(pw));
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    walkc_check<T>("fwd", P, false, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (!data_grad_plan(g, P, Q)) { ++failures; return; }
  walkc_check<T>("dgrad", P, true, gy, w, Tensor(), gx, name, tol);
}
void walkc_cases() {
  // as walk_cases: two bands, strips cut by the row's end, a partial NHWC group; padding 0 (the
  // data-grad: padding 6), 6 (the data-grad: padding 0, its output smaller), unequal paddings,
  // a plane smaller than the filter's reach; 14 x 14 in fp16 / bf16; rows a multiple of 4 wide at
  // padding 3 and 7 (the data-grad: -1)
  walkc_case<float>(2, 40, 17, 22, 3, 3, 1e-5);
  walkc_case<float>(1, 3, 12, 10, 0, 0, 1e-5);
  walkc_case<float>(1, 2, 9, 11, 6, 6, 1e-5);
  walkc_case<float>(2, 2, 8, 13, 1, 5, 1e-5);
  walkc_case<float>(1, 2, 3, 4, 3, 3, 1e-5);
  walkc_case<float>(20, 2, 17, 22, 3, 3, 1e-5);
  walkc_case<float>(2, 40, 10, 24, 3, 3, 1e-5);
  walkc_case<float>(1, 2, 9, 12, 7, 7, 1e-5);
  walkc_case<at::Half>(1, 8, 14, 28, 3, 3, 2e-3);
  walkc_case<at::Half>(2, 33, 14, 14, 3, 3, 2e-3);
  walkc_case<at::BFloat16>(2, 5, 14, 14, 3, 3, 1e-2);
  std::printf("walk_conv2d: %d launches checked\n", walkc_taken);
  if (walkc_taken == 0) ++failures;
}
// ---- end column-walking kernels ----
// tensor-core 2-D / 3-D rows (tc_rows_nc.cuh)
void tcn_cases() {
  // tensor-core 2-D / 3-D rows (tc_rows_nc.cuh), the filters its launcher takes: X3D's 5x3x3
  // (its padding, zero padding, padding beyond the filter: negative data-grad padding, a depth
  // longer than two segments, three samples in one block: columns of 24 steps rounded to 25),
  // 5x3x5 and 5x3x7, 2-D 7x7 / 7x5 and 31x31, widths giving every staging vector (56: 16 bytes,
  // 28: 8, 14: 4 / 2, odd: elements), heights not a multiple of 16, blocks of 8 cut by the row's
  // ends, several chunks per row (W 150)
  for (int dt = 0; dt < 2; ++dt) {
    auto one = [&](int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t kd, int64_t kh, int64_t kw, int64_t pd,
                   int64_t ph, int64_t pw) {
      if (dt == 0) tcn_case<at::Half>(N, C, D, H, W, kd, kh, kw, pd, ph, pw, 2e-3);
      else tcn_case<at::BFloat16>(N, C, D, H, W, kd, kh, kw, pd, ph, pw, 1e-2);
    };
    one(1, 2, 7, 19, 56, 5, 3, 3, 2, 1, 1);
    one(1, 1, 23, 5, 21, 5, 3, 3, 2, 1, 1);
    one(3, 1, 20, 5, 16, 5, 3, 3, 2, 1, 1);
    one(2, 1, 6, 9, 14, 5, 3, 3, 0, 0, 0);
    one(1, 1, 3, 9, 14, 5, 3, 3, 3, 2, 4);
    one(1, 2, 5, 17, 28, 5, 3, 5, 2, 1, 2);
    one(1, 1, 4, 6, 40, 5, 3, 7, 2, 1, 3);
    one(1, 2, 0, 18, 56, 1, 7, 7, 0, 3, 3);
    one(1, 1, 0, 33, 150, 1, 7, 5, 0, 4, 0);
    one(1, 1, 0, 7, 9, 1, 7, 7, 0, 0, 6);
    one(1, 1, 0, 20, 45, 1, 31, 31, 0, 15, 15);
    one(2, 1, 0, 5, 14, 1, 31, 31, 0, 15, 15);
  }
  // fp32 as TF32 (31 x 26-33 only): against float64 on the fp32 data, so the error includes the
  // rounding to TF32 (10 mantissa bits; 1e-3 of the output scale). Widths 26 and 33 (the k-step
  // count's ends), odd sizes (element staging), every staging vector (56: 16 bytes, 30: 8,
  // odd: 4-byte elements), several chunks (W 150).
  {
    auto one = [&](int64_t N, int64_t C, int64_t H, int64_t W, int64_t kw, int64_t ph, int64_t pw) {
      tcn_case<float>(N, C, 0, H, W, 1, 31, kw, 0, ph, pw, 1e-3);
    };
    one(1, 2, 20, 56, 31, 15, 15);
    one(2, 1, 5, 14, 31, 15, 15);
    one(1, 1, 19, 30, 26, 15, 12);
    one(1, 1, 17, 45, 33, 15, 16);
    one(1, 1, 33, 150, 31, 15, 15);
    one(1, 1, 40, 33, 31, 3, 0);
  }
  std::printf("tc_rows_nc launches checked: %d\n", tcn_taken);
  if (tcn_taken == 0) ++failures;
}

void d3r_cases() {
  // depth3d_regs.cuh (16-bit 5x3x3 forward / data-grad) and cl_wgrad_d3r (NDHWC weight-grad):
  // X3D's padding on 1-3 strips per row (both edge columns zero, one, neither), C 8 / 40 / 64
  // (NDHWC: one and two channel blocks, partial), C 1-3 (NDHWC declines), depth and height
  // padding 0, 3 and 4 (data-grad padding 2, 1, 0, heights changing), depths shallower than the
  // filter and deep enough for several segments, several row tiles, batch 2; declined: width
  // padding 0 / 2, widths not a multiple of 8
  for (int dt = 0; dt < 2; ++dt) {
    auto one = [&](int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t pd, int64_t ph, int64_t pw, bool b,
                   bool want) {
      if (dt == 0) d3r_case<at::Half>(N, C, D, H, W, pd, ph, pw, b, 2e-3, want);
      else d3r_case<at::BFloat16>(N, C, D, H, W, pd, ph, pw, b, 1e-2, want);
    };
    one(1, 3, 7, 5, 16, 2, 1, 1, true, true);
    one(2, 2, 4, 3, 8, 2, 1, 1, false, true);
    one(1, 40, 3, 4, 24, 2, 1, 1, true, true);
    one(1, 8, 7, 11, 16, 2, 1, 1, true, true);
    one(2, 64, 5, 9, 8, 2, 1, 1, false, true);
    one(1, 16, 45, 3, 8, 2, 0, 1, true, true);
    one(1, 1, 6, 61, 40, 2, 1, 1, true, true);
    one(1, 2, 45, 3, 8, 2, 0, 1, true, true);
    one(1, 2, 6, 6, 8, 3, 2, 1, false, true);
    one(1, 1, 5, 4, 16, 4, 0, 1, true, true);
    one(1, 8, 6, 6, 16, 3, 2, 1, false, true);
    one(2, 24, 5, 4, 16, 4, 0, 1, true, true);
    one(1, 2, 3, 3, 12, 2, 1, 1, true, false);
    one(1, 2, 3, 3, 16, 2, 1, 0, true, false);
  }
  std::printf("depth3d_nc_units / depth3d_cl_smem launches checked: %d, cl_wgrad_d3r / d3s %d\n", d3s_taken, clwr_taken);
  if (d3s_taken == 0 || clwr_taken == 0) ++failures;
}

// The whole-plane kernels' cases.
void plane_cases() {
  // Whole-plane kernels (nc_plane.cuh, nc_small_planes.cuh): several groups with a partial last one (120 planes in
  // blocks of 36, batch 1 with 37), 7x7 planes under 3x3 / 5x5 / 7x7, stride 2 onto 7x7 and 8x8
  // and odd sizes, a data-grad whose padding is negative (forward padding 3 on a 3x3 filter), even
  // filters, 28x28 planes (2 per block); every one fp32 / fp16 / bf16, forward and data-grad,
  // aligned and misaligned spans.
  run_case(2, 3, 40, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 37, 1, {7, 7}, {7, 7}, {1, 1}, {3, 3});
  run_case(2, 2, 20, 1, {7, 7}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 2, 20, 1, {14, 13}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 1, 30, 1, {15, 15}, {7, 7}, {2, 2}, {3, 3});
  run_case(2, 1, 30, 1, {11, 9}, {5, 5}, {2, 2}, {2, 2});
  run_case(2, 2, 12, 1, {5, 5}, {3, 3}, {1, 1}, {3, 3});
  run_case(2, 1, 12, 1, {8, 8}, {2, 2}, {1, 1}, {0, 0});
  run_case(2, 1, 12, 1, {9, 10}, {4, 4}, {1, 1}, {1, 1});
  run_case(2, 1, 6, 1, {28, 28}, {5, 5}, {1, 1}, {2, 2});
  check_np_limits();
  if (np_runs == 0) ++failures;
  // 56x56 planes under 3x3 (one per group, the item count not a multiple of the block) and 7x7;
  // padding 7 on a 3x3 filter (the data-grad's padding -5: staged columns start left of the row)
  run_case(2, 1, 3, 1, {56, 56}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 4, 1, {7, 7}, {3, 3}, {1, 1}, {7, 7});
  run_case(2, 1, 2, 1, {56, 56}, {7, 7}, {1, 1}, {3, 3});
  if (sp_runs == 0) ++failures;
  // nc_plane_cp (16-bit 3x3): MobileNetV2's stride-2 112x112 plane (one per group), an odd height
  // on 48-wide rows (8 planes per group, 5 groups with a partial last one: 3 blocks walk them),
  // stride 2 onto outputs that end mid-strip (widths 20 and 28: staged outputs; 100 planes in 4
  // groups), 40-byte rows (width 20: declines), padding 0 and 2 (declines: not the half width)
  run_case(2, 1, 3, 1, {112, 112}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 1, 37, 1, {19, 48}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 2, 50, 1, {24, 40}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 1, 5, 1, {30, 56}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 1, 7, 1, {21, 20}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 7, 1, {20, 32}, {3, 3}, {1, 1}, {0, 0});
  run_case(2, 1, 7, 1, {17, 32}, {3, 3}, {1, 1}, {2, 2});
  std::printf("nc_plane runs: %d, nc_small_planes runs: %d\n", np_runs, sp_runs);
  std::printf("nc_plane_cp runs: %d (staged outputs: %d, skewed bands: %d)\n", cp_runs, cp_staged, cp_skewed);
  if (cp_runs == 0 || cp_staged == 0 || cp_staged == cp_runs) ++failures;
}

// ---- tc7n (session 13): tensor-core 7x7 NCHW planes (tc7_nc.cuh) ----
// Forward and data-grad of one problem against float64 on the same rounded data (fp32: the data
// as fp32, so the error includes TF32's 10-bit operands), on poisoned outputs, on 1 block (every
// plane in one block: the B fragments rebuilt at each channel change), 4 blocks (ranges crossing
// channels mid-way; with a warp per plane, partial steps) and one block per step; the input as
// allocated and moved by 4 bytes (copies of 4 bytes instead of 16 / 8).
// tc7f (session 13): the copy width is a template argument U (16 or 4), as the launcher picks it:
// each problem runs with 16-byte copies where the rows and tensors allow them (the plan must
// decline them moved by 4 bytes) and with 4-byte copies both ways; the warp-per-plane cases
// (14 x 14, 16 x 14, 9 x 20) run the direct fragment stores, the others the output tile.
static int tc7_taken = 0;
// One configuration (K, NB, WPP, input / output copy widths) on 1 block, 4 blocks and one per step.
template <typename T, int K, int NB, int WPP, int U, int UO>
void tc7_run(const char* what, const Plan& P, bool flip, const T* ip, const Tensor& w, const T* bp, const Tensor& ref,
             const std::string& name, double tol) {
  Tensor o = at::full(ref.sizes(), NAN, w.options());
  Tc7Nc L{};
  if (!tc7_nc_plan<T>(L, P, flip, ip, o.data_ptr<T>(), K, NB, WPP, U, UO)) {
    std::printf("%-44s %-34s declined FAIL\n", name.c_str(), what);
    ++failures;
    return;
  }
  const unsigned steps = static_cast<unsigned>(ceil_div(L.planes, kTc7Warps / WPP));
  for (unsigned blocks : {1u, 4u, steps}) {
    o.fill_(NAN);
    g_smem_bytes = static_cast<size_t>(tc7_smem_bytes<T>(K, NB, WPP, L.W));
    launch(dim3{blocks}, dim3{unsigned(32 * kTc7Warps)},
           [&] { tc7_nc<T, K, NB, WPP, U, UO>(ip, w.data_ptr<T>(), bp, o.data_ptr<T>(), L); });
    ++tc7_taken;
    check((std::string(what) + " tc7 unit" + std::to_string(U) + "/" + std::to_string(UO) + " blocks" +
           std::to_string(blocks)).c_str(),
          o, ref, name, tol);
  }
}
template <typename T, int NB, int WPP>
void tc7_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol) {
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  Tensor src1 = at::full({src.numel() + 4}, NAN, src.options());
  constexpr int off = 4 / sizeof(T), DO = WPP > 1 ? 4 : 2 * sizeof(T);  // direct stores: pairs
  src1.narrow(0, off, src.numel()).copy_(src.flatten());
  for (int moved = 0; moved < 2; ++moved) {
    const T* ip = moved ? src1.data_ptr<T>() + off : src.data_ptr<T>();
    Tensor o = at::full(ref.sizes(), NAN, src.options());
    const bool wide = P.in[2] * int64_t(sizeof(T)) % 16 == 0;  // rows of whole 16-byte copies
    {
      Tc7Nc L{};
      if (tc7_nc_plan<T>(L, P, flip, ip, o.data_ptr<T>(), 7, NB, WPP, 16, WPP > 1 ? 16 : DO) != (wide && !moved)) {
        std::printf("%-44s %-34s unit16 plan FAIL\n", name.c_str(), what);
        ++failures;
      }
    }
    if (wide && !moved) tc7_run<T, 7, NB, WPP, 16, (WPP > 1 ? 16 : DO)>(what, P, flip, ip, w, bp, ref, name, tol);
    tc7_run<T, 7, NB, WPP, 4, DO>(what, P, flip, ip, w, bp, ref, name, tol);
  }
}
template <typename T, int NB, int WPP>
void tc7_case(int64_t N, int64_t C, int64_t H, int64_t W, double tol) {
  at::manual_seed(13);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, 7, 7}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, {3, 3}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1, 1}, {3, 3}, {1, 1}, false, {0, 0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = H, g.output[2] = W;
  g.kernel[1] = g.kernel[2] = 7, g.padding[1] = g.padding[2] = 3, g.stride[1] = g.stride[2] = 1;
  char name[96];
  std::snprintf(name, sizeof name, "tc7 %s N%ld C%ld %ldx%ld",
                dt == at::kHalf ? "fp16" : dt == at::kBFloat16 ? "bf16" : "tf32", long(N), long(C), long(H), long(W));
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    tc7_check<T, NB, WPP>("fwd", P, false, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (!data_grad_plan(g, P, Q)) { ++failures; return; }
  tc7_check<T, NB, WPP>("dgrad", P, true, gy, w, Tensor(), gx, name, tol);
}
// Plans the kernel must decline: padding 2, heights outside the warps' tiles, widths of another
// N-block count or odd, an input 2 bytes off (16-bit: no 4-byte copies).
template <typename T>
bool tc7_declines(int64_t H, int64_t W, int64_t pad, int off, int nb, int wpp) {
  Geometry g;
  g.batch = 2, g.in_channels = g.out_channels = g.groups = 3;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = H + 2 * pad - 6, g.output[2] = W + 2 * pad - 6;
  g.kernel[1] = g.kernel[2] = 7, g.padding[1] = g.padding[2] = pad, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  alignas(16) static T buf[16];
  Tc7Nc L{};
  return !tc7_nc_plan<T>(L, P, false, buf + off, buf, 7, nb, wpp, 4, wpp > 1 ? 4 : 2 * int(sizeof(T)));
}
void tc7_cases() {
  // Four warps per plane: ConvNeXt's 56 x 56 (N2 C3: 6 planes, channels changing inside a
  // block's range); heights 49 (the last warp one row), 50 and 64 (every warp full); fp32 width
  // 52 (7 N-blocks, the last half empty).
  tc7_case<at::Half, 8, 4>(2, 3, 56, 56, 2e-3);
  tc7_case<at::BFloat16, 8, 4>(2, 3, 56, 56, 1e-2);
  tc7_case<float, 7, 4>(2, 3, 56, 56, 1e-3);
  tc7_case<at::Half, 8, 4>(1, 2, 49, 56, 2e-3);
  tc7_case<at::BFloat16, 8, 4>(3, 1, 64, 56, 1e-2);
  tc7_case<float, 7, 4>(1, 2, 50, 52, 1e-3);
  // A warp per plane (16-bit, as the launcher): ConvNeXt's 14 x 14 (N3 C3: 9 planes, a partial
  // last step of 4), height 16 (every row of the M-tile stored), 9 and width 20 (rows of 40 bytes).
  tc7_case<at::Half, 3, 1>(3, 3, 14, 14, 2e-3);
  tc7_case<at::BFloat16, 3, 1>(2, 3, 16, 14, 1e-2);
  tc7_case<at::Half, 3, 1>(1, 5, 9, 20, 2e-3);
  const bool dec = tc7_declines<at::Half>(56, 56, 2, 0, 8, 4) && tc7_declines<at::Half>(48, 56, 3, 0, 8, 4) &&
                   tc7_declines<at::Half>(65, 56, 3, 0, 8, 4) && tc7_declines<at::Half>(56, 48, 3, 0, 8, 4) &&
                   tc7_declines<at::Half>(56, 56, 3, 1, 8, 4) && tc7_declines<float>(56, 51, 3, 0, 7, 4) &&
                   tc7_declines<float>(56, 60, 3, 0, 7, 4) && !tc7_declines<float>(56, 56, 3, 1, 7, 4) &&
                   tc7_declines<at::Half>(17, 14, 3, 0, 3, 1) && tc7_declines<at::Half>(14, 13, 3, 0, 3, 1) &&
                   tc7_declines<at::Half>(14, 22, 3, 0, 3, 1) && !tc7_declines<at::Half>(14, 14, 3, 0, 3, 1);
  std::printf("%-44s %-34s %s\n", "tc7 limits", "pad/height/width/offset", dec ? "ok" : "FAIL");
  if (!dec) ++failures;
  std::printf("tc7_nc launches checked: %d\n", tc7_taken);
  if (tc7_taken == 0) ++failures;
}
// ---- end tc7n ----
// ---- tcnc (session 14): tc7_nc.cuh at 5 x 5, 16-bit (two warps per plane, EfficientNet's
// 28 x 28; 8-byte input copies, the output tile by bulk copies: here a plain copy, as for every
// 16-byte tile above) ----
// The configuration the launcher runs, forward (with bias) and data-grad against float64 on
// poisoned outputs, 1 / 4 / one block per step; the input moved by 4 bytes must be declined (the
// launcher then falls back to nc_plane_cp), as must heights whose planes are not whole output
// copies.
template <typename T, int K, int NB, int WPP, int U, int UO>
void tcnc_case(int64_t N, int64_t C, int64_t H, int64_t W, double tol) {
  at::manual_seed(14);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  const int64_t p = K / 2;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, {p, p}, 1, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1, 1}, {p, p}, {1, 1}, false, {0, 0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = H, g.output[2] = W;
  g.kernel[1] = g.kernel[2] = K, g.padding[1] = g.padding[2] = p, g.stride[1] = g.stride[2] = 1;
  char name[96];
  std::snprintf(name, sizeof name, "tcnc k%d %s N%ld C%ld %ldx%ld", K,
                dt == at::kHalf ? "fp16" : dt == at::kBFloat16 ? "bf16" : "tf32", long(N), long(C), long(H), long(W));
  Plan Pf{}, Pd{};
  Prep Q{};
  forward_plan(g, Pf, Q);
  if (!data_grad_plan(g, Pd, Q)) { ++failures; return; }
  tc7_run<T, K, NB, WPP, U, UO>("fwd", Pf, false, x.data_ptr<T>(), w, b.data_ptr<T>(), y, name, tol);
  tc7_run<T, K, NB, WPP, U, UO>("dgrad", Pd, true, gy.data_ptr<T>(), w, nullptr, gx, name, tol);
  Tensor moved = at::empty({x.numel() + 4}, x.options());
  Tc7Nc L{};
  if (tc7_nc_plan<T>(L, Pf, false, moved.data_ptr<T>() + 4 / sizeof(T), y.data_ptr(), K, NB, WPP, U, UO)) {
    std::printf("%-44s %-34s FAIL\n", name, "moved input not declined");
    ++failures;
  }
}
// 5 x 5 plans the 28 x 28 kernel must decline: padding 3 / 1, height 33, width 34 (5 N-blocks), a
// 25-high plane (1400 bytes, not whole 16-byte output copies), 7 x 7, width 26 (52-byte rows, not
// whole 8-byte copies); 28 x 28 and 25 x 24 taken.
template <typename T>
bool tcnc_declines(int64_t H, int64_t W, int64_t k, int64_t pad, int nb, int u, int uo) {
  Geometry g;
  g.batch = 2, g.in_channels = g.out_channels = g.groups = 3;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = H + 2 * pad - k + 1, g.output[2] = W + 2 * pad - k + 1;
  g.kernel[1] = g.kernel[2] = k, g.padding[1] = g.padding[2] = pad, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  alignas(16) static T buf[16];
  Tc7Nc L{};
  return !tc7_nc_plan<T>(L, P, false, buf, buf, 5, nb, 2, u, uo);
}
void tcnc_cases() {
  // EfficientNet's 28 x 28 (N2 C3: 6 planes, 3 steps of 2, channels changing inside a block's
  // range), heights 18 (the second warp two rows) and 32 (both full), width 24 (3 N-blocks' worth
  // of outputs in 4), a partial last step (N1 C3).
  tcnc_case<at::Half, 5, 4, 2, 8, 16>(2, 3, 28, 28, 2e-3);
  tcnc_case<at::BFloat16, 5, 4, 2, 8, 16>(2, 3, 28, 28, 1e-2);
  tcnc_case<at::Half, 5, 4, 2, 8, 16>(1, 3, 18, 28, 2e-3);
  tcnc_case<at::BFloat16, 5, 4, 2, 8, 16>(3, 1, 32, 28, 1e-2);
  tcnc_case<at::Half, 5, 4, 2, 8, 16>(1, 2, 20, 24, 2e-3);
  const bool dec = tcnc_declines<at::Half>(28, 28, 5, 3, 4, 8, 16) && tcnc_declines<at::Half>(28, 28, 5, 1, 4, 8, 16) &&
                   tcnc_declines<at::Half>(33, 28, 5, 2, 4, 8, 16) && tcnc_declines<at::Half>(28, 34, 5, 2, 4, 8, 16) &&
                   tcnc_declines<at::Half>(25, 28, 5, 2, 4, 8, 16) && tcnc_declines<at::Half>(28, 28, 7, 3, 4, 8, 16) &&
                   tcnc_declines<at::Half>(28, 26, 5, 2, 4, 8, 16) && !tcnc_declines<at::Half>(28, 28, 5, 2, 4, 8, 16) &&
                   !tcnc_declines<at::Half>(25, 24, 5, 2, 4, 8, 16);
  std::printf("%-44s %-34s %s\n", "tcnc limits", "pad/height/width/k", dec ? "ok" : "FAIL");
  if (!dec) ++failures;
}
// ---- end tcnc ----
// ---- eff5 (session 13): the column-walking kernels of walk2d.cuh at 5 x 5 in fp32, both layouts
// (walk_wgrad2d.cu / walk_conv2d.cu's 5 x 5 cases), against float64 on the same data: the
// weight-grad on NaN-poisoned partials, the forward (bias) and stride-1 data-grad (rotated filter)
// on NaN-poisoned outputs, with one block per channel (group) and as many chunks as the items
// allow, bands of 16 and of 4 rows.
static int eff5_taken = 0;
template <bool CL>
void eff5_walk_one(const Plan& P, const Tensor& xm, const Tensor& gm, const Tensor& ref, bool wgrad, bool flip,
                   const Tensor& b, const std::string& name, const char* what) {
  for (int64_t target : {int64_t(1), int64_t(1) << 30}) for (int rows : {kWalkBandRows, 4}) {
    Walk2d L{};
    const std::string tag = std::string(what) + " walk5 " + (CL ? "nhwc" : "nchw") + " rows " + std::to_string(rows) +
                            (target == 1 ? " 1 chunk" : " chunks");
    if (!walk2d_plan(L, P, 5, CL, target, rows)) {
      ++failures;
      std::printf("%-44s %-34s declined FAIL\n", name.c_str(), tag.c_str());
      continue;
    }
    Tensor r;
    if (wgrad) {
      Tensor part = at::full({P.in_c, int64_t(L.chunks), 25}, NAN, at::kFloat);
      r = at::full({P.in_c * 25}, NAN, at::kFloat);
      float* pp = part.data_ptr<float>();
      launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(kWalkThreads)},
             [&] { walk_wgrad2d<float, 5, CL>(xm.data_ptr<float>(), gm.data_ptr<float>(), pp, L); });
      const int64_t n = P.in_c * 25;
      launch(dim3{unsigned((n + 255) / 256)}, dim3{256u}, [&] { sum_slots<float>(pp, r.data_ptr<float>(), P.in_c, L.chunks, 25); });
    } else {
      Tensor o = at::full(ref.sizes(), NAN, at::kFloat);
      if (CL) o = to_cl(o);
      const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
      launch(dim3{unsigned(L.groups * L.chunks)}, dim3{unsigned(kWalkThreads)},
             [&] { walk_conv2d<float, 5, CL>(xm.data_ptr<float>(), gm.data_ptr<float>(), flip, bp, o.data_ptr<float>(), L); });
      r = CL ? from_cl(o) : o;
    }
    ++eff5_taken;
    check(tag.c_str(), r.to(at::kDouble), ref, name, 1e-5);
  }
}
void eff5_walk_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw) {
  at::manual_seed(15);
  Tensor x = at::randn({N, C, H, W}), w = at::randn({C, 1, 5, 5}), b = at::randn({C});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, {ph, pw}, 1, C);
  Tensor gy = at::randn(y.sizes());
  auto [gx, gw, gb] = at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                               {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C, {true, true, false});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = 5, g.padding[1] = ph, g.padding[2] = pw, g.stride[1] = g.stride[2] = 1;
  char name[96];
  std::snprintf(name, sizeof name, "fp32 N%ld C%ld %ldx%ld k5 p%ld,%ld", long(N), long(C), long(H), long(W), long(ph),
                long(pw));
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  const Tensor gwv = gw.view({-1});
  eff5_walk_one<false>(P, x.contiguous(), gy.contiguous(), gwv, true, false, Tensor(), name, "wgrad");
  eff5_walk_one<true>(P, to_cl(x), to_cl(gy), gwv, true, false, Tensor(), name, "wgrad");
  // forward: x with the filter as stored; the weight pointer rides in gm's slot
  eff5_walk_one<false>(P, x.contiguous(), w.contiguous(), y, false, false, b, name, "fwd");
  eff5_walk_one<true>(P, to_cl(x), w.contiguous(), y, false, false, b, name, "fwd");
  Plan D{}; Prep DQ{};
  if (!data_grad_plan(g, D, DQ)) { ++failures; return; }
  eff5_walk_one<false>(D, gy.contiguous(), w.contiguous(), gx, false, true, Tensor(), name, "dgrad");
  eff5_walk_one<true>(D, to_cl(gy), w.contiguous(), gx, false, true, Tensor(), name, "dgrad");
}
void eff5_cases() {
  // EfficientNet's 'same' 28 x 28 plane (2 bands of 14 rows; NHWC: 40 channels, a full and a
  // partial group of 32), strips cut by the row's end (W 22, 10), padding 0 (output smaller than
  // the input; the data-grad's padding 4), 4 (output wider), unequal paddings, one output row, a
  // plane smaller than the filter's reach, 20 samples (several chunks)
  eff5_walk_case(2, 40, 28, 28, 2, 2);
  eff5_walk_case(1, 3, 12, 10, 0, 0);
  eff5_walk_case(1, 2, 9, 11, 4, 4);
  eff5_walk_case(2, 2, 8, 13, 1, 3);
  eff5_walk_case(3, 2, 5, 22, 0, 2);
  eff5_walk_case(1, 2, 3, 4, 2, 2);
  eff5_walk_case(20, 2, 17, 22, 2, 2);
  std::printf("eff5 walk2d 5x5: %d launches checked\n", eff5_taken);
  if (eff5_taken == 0) ++failures;
  // nc_plane_cp at 5x5 (stride 1, 'same' padding 2; fp32 and 16-bit, 8-byte chunks): EfficientNet's
  // 28x28 plane (14 planes: a partial last group), an odd height on 24-wide rows, 20-wide rows (16
  // bits: outputs end mid-strip, staged), 56x56 (one plane per group; dispatch leaves it to
  // nc_plane, measured faster), 22-wide rows (16 bits: 44-byte rows decline; fp32 takes them),
  // padding 1 (declines)
  const int cp0 = cp_runs, sk0 = cp_skewed;
  run_case(2, 2, 7, 1, {28, 28}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 5, 1, {17, 24}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 3, 1, {30, 20}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 2, 1, {56, 56}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 3, 1, {16, 22}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 3, 1, {16, 24}, {5, 5}, {1, 1}, {1, 1});
  std::printf("eff5 nc_plane_cp 5x5: %d runs (skewed bands: %d)\n", cp_runs - cp0, cp_skewed - sk0);
  if (cp_runs == cp0 || cp_skewed == sk0) ++failures;
}
// nc_wgrad_cp (fp32 5x5, stride 1, padding 2) on x / dy as allocated and on copies past a 16-byte
// boundary (x by 2 elements: 8-byte chunks still fit; x by 1 and dy by 1: declines), NaN-poisoned partials, one
// block per unit and 3 blocks walking the units, units of 1 and 2 groups, then the ordered sum.
static int eff5_wg_runs = 0;
void eff5_wgrad_case(int64_t N, int64_t C, int64_t H, int64_t W) {
  at::manual_seed(16);
  Tensor x = at::randn({N, C, H, W}), w = at::randn({C, 1, 5, 5});
  Tensor y = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), Tensor(), 1, {2, 2}, 1, C);
  Tensor gy = at::randn(y.sizes());
  const Tensor ref = std::get<1>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble),
                                                          std::nullopt, {1, 1}, {2, 2}, {1, 1}, false, {0, 0}, C,
                                                          {false, true, false})).view({-1});
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[0] = g.output[0] = g.kernel[0] = g.stride[0] = 1, g.padding[0] = 0;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = g.kernel[2] = 5, g.padding[1] = g.padding[2] = 2, g.stride[1] = g.stride[2] = 1;
  Plan P{}; Prep Q{};
  forward_plan(g, P, Q);
  char name[96];
  std::snprintf(name, sizeof name, "fp32 N%ld C%ld %ldx%ld k5 p2", long(N), long(C), long(H), long(W));
  Tensor x1 = at::full({x.numel() + 2}, NAN), x2 = at::full({x.numel() + 2}, NAN), g1 = at::full({gy.numel() + 1}, NAN);
  x1.narrow(0, 2, x.numel()).copy_(x.flatten());
  x2.narrow(0, 1, x.numel()).copy_(x.flatten());
  g1.narrow(0, 1, gy.numel()).copy_(gy.flatten());
  for (int off : {0, 1, 2, 3}) for (int gpu : {1, 2}) for (unsigned blocks : {0u, 3u}) {
    const float* xp = off == 1 ? x1.data_ptr<float>() + 2 : off == 3 ? x2.data_ptr<float>() + 1 : x.data_ptr<float>();
    const float* gp = off == 2 ? g1.data_ptr<float>() + 1 : gy.data_ptr<float>();
    NcPlaneCp L{};
    NcWgradCp Wc{};
    const std::string tag = std::string("wgrad cp") + (off == 1 ? " x+2" : off == 2 ? " dy+1" : off == 3 ? " x+1" : "") +
                            " gpu" + std::to_string(gpu) + (blocks ? " b3" : "");
    if (!choose_nc_wgrad_cp(L, Wc, P, 5, 4, xp, gp, gpu)) {
      const bool expected = off >= 2 || W % 4 != 0;  // x not in 8-byte chunks, dy rows not whole aligned vectors
      if (!expected) ++failures;
      std::printf("%-44s %-34s declined%s\n", name, tag.c_str(), expected ? "" : " FAIL");
      continue;
    }
    Tensor part = at::full({int64_t(Wc.units), 25}, NAN);
    Tensor r = at::full({C * 25}, NAN);
    g_smem_bytes = size_t(L.smem);
    const unsigned threads = unsigned(std::min<int64_t>(kCpThreads, ceil_div(int64_t(L.pb) * L.items.d, 32) * 32));
    float* pp = part.data_ptr<float>();
    launch(dim3{blocks ? std::min<unsigned>(blocks, Wc.units) : unsigned(Wc.units)}, dim3{threads},
           [&] { nc_wgrad_cp<5, 4>(xp, gp, pp, L, Wc); });
    launch(dim3{unsigned((C * 25 + 255) / 256)}, dim3{256u}, [&] { sum_slots<float>(pp, r.data_ptr<float>(), C, Wc.chunks, 25); });
    ++eff5_wg_runs;
    check((tag + " pb" + std::to_string(L.pb) + " chunk" + std::to_string(Wc.chunk)).c_str(), r.to(at::kDouble), ref,
          name, 1e-5);
  }
}
void eff5_wgrad_cases() {
  // EfficientNet's 28x28 plane (11 samples: units of 5 / 10 samples, a partial last unit; 2
  // channels), an odd height on 24-wide rows, 56x56 (one plane per group), 20-wide rows, 22-wide
  // rows (dy rows not whole vectors: declines), one sample
  eff5_wgrad_case(11, 2, 28, 28);
  eff5_wgrad_case(3, 3, 17, 24);
  eff5_wgrad_case(2, 2, 56, 56);
  eff5_wgrad_case(4, 2, 9, 20);
  eff5_wgrad_case(2, 2, 8, 22);
  eff5_wgrad_case(1, 1, 28, 28);
  std::printf("eff5 nc_wgrad_cp: %d runs\n", eff5_wg_runs);
  if (eff5_wg_runs == 0) ++failures;
}
// ---- end eff5

// ---- session 13, tc7c: tc_cl2d.cuh (tensor-core channels-last 2-D 7 x KW, fp16 / bf16) ----
// Forward (bias) and data-grad (flip; negative padding when p = 0) of one NHWC problem against
// float64 on the same rounded data, NaN-poisoned outputs and shared memory, every ring depth
// (1-3 raw bricks), block targets 1 (one run walks every step: several samples and h-tiles) and
// 2^20 (a step per block); widths giving one chunk of 2 / 7 warps and two chunks, heights not a
// multiple of 16, channel groups past the first, planes smaller than the filter's reach.
static int tcc_taken = 0;
template <typename T>
void tcc_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w16, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol) {
  const Tensor sc = to_cl(src);
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  for (int64_t target : {int64_t(1), int64_t(1) << 20}) {
    for (int stages = 1; stages <= 3; ++stages) {
      TcCl2d L{};
      if (!tc_cl2d_plan<7>(L, P, flip, stages, target)) {
        std::printf("%-44s %-34s declined FAIL\n", name.c_str(), what);
        ++failures;
        return;
      }
      Tensor oc = at::full(to_cl(ref).sizes(), NAN, src.options());
      g_smem_bytes = tc_cl2d_smem_bytes<7>(L);
      const T* ip = sc.data_ptr<T>();
      const T* wp = w16.data_ptr<T>();
      T* op = oc.data_ptr<T>();
      launch(dim3{L.blocks}, dim3{unsigned(32 * L.nw)}, [&] { tc_cl2d<T, 7>(ip, wp, bp, op, L); });
      ++tcc_taken;
      check((std::string(what) + " tc_cl2d nw" + std::to_string(L.nw) + " ch" + std::to_string(L.chunks) + " S" +
             std::to_string(stages) + " blocks" + std::to_string(L.blocks)).c_str(),
            from_cl(oc), ref, name, tol);
    }
  }
}
template <typename T>
void tcc_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kw, int64_t ph, int64_t pw, double tol) {
  at::manual_seed(5);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, 7, kw}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), {1, 1}, {ph, pw}, {1, 1}, false,
                             {0, 0}, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1, 1}, {ph, pw}, {1, 1}, false, {0, 0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = 7, g.kernel[2] = kw, g.padding[1] = ph, g.padding[2] = pw;
  const std::string name = std::string(dt == at::kHalf ? "tcc fp16" : "tcc bf16") + " N" + std::to_string(N) + " C" +
                           std::to_string(C) + " " + std::to_string(H) + "x" + std::to_string(W) + " k7x" +
                           std::to_string(kw) + " p" + std::to_string(ph) + "," + std::to_string(pw);
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    tcc_check<T>("fwd", P, false, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (data_grad_plan(g, P, Q)) tcc_check<T>("dgrad", P, true, gy, w, Tensor(), gx, name, tol);
}
void tcc_cases() {
  for (int dt = 0; dt < 2; ++dt) {
    auto one = [&](int64_t N, int64_t C, int64_t H, int64_t W, int64_t kw, int64_t ph, int64_t pw) {
      if (dt == 0) tcc_case<at::Half>(N, C, H, W, kw, ph, pw, 2e-3);
      else tcc_case<at::BFloat16>(N, C, H, W, kw, ph, pw, 1e-2);
    };
    one(2, 16, 18, 56, 7, 3, 3);  // ConvNeXt's 56-wide rows: 7 warps, two h-tiles (the second partial)
    one(1, 8, 14, 14, 7, 3, 3);   // ConvNeXt-14: 2 warps
    one(1, 8, 21, 75, 7, 3, 3);   // 10 blocks of 8 outputs: two chunks of 5 warps
    one(1, 24, 9, 9, 7, 0, 0);    // 3 x 3 outputs; data-grad padding 6
    one(2, 8, 5, 6, 7, 5, 4);     // planes smaller than the filter, padding beyond its reach
    one(1, 8, 17, 20, 5, 3, 2);   // 7 x 5 (the kernel's; dispatch routes 7 x 7 only)
  }
  std::printf("tc_cl2d launches checked: %d\n", tcc_taken);
  if (tcc_taken == 0) ++failures;
}
// ---- end tc7c ----
// ---- session 14, cl7: cl_tile2d.cuh (channels-last 7 x 7 register-blocked tile) ----
// Forward (bias) and data-grad (flip) of NHWC problems against float64 on the same rounded data,
// fp32 / fp16 / bf16, NaN-poisoned outputs and shared memory, the routed tile (8 vectors x 7 row
// strips) and the five others the A/B measured or that stress the indexing: one and two column
// tiles (the second partial), heights not a multiple of the tile, a partial channel chunk (idle
// vectors), blocks of partial warps, planes smaller than the filter, padding beyond its reach.
static int clt_taken = 0;
template <typename T, int K>
void clt_check(const char* what, const Plan& P, bool flip, const Tensor& src, const Tensor& w, const Tensor& bias,
               const Tensor& ref, const std::string& name, double tol) {
  const Tensor sc = to_cl(src);
  const T* bp = bias.defined() ? bias.data_ptr<T>() : nullptr;
  for (auto [cg, sy] : std::array<std::pair<int, int>, 6>{{{8, 7}, {4, 7}, {2, 8}, {4, 4}, {1, 3}, {3, 1}}}) {
    ClTile2d L{};
    if (!cl_tile2d_plan(L, P, flip, K, cg, sy, sizeof(T))) {
      std::printf("%-44s %-34s declined FAIL\n", name.c_str(), what);
      ++failures;
      return;
    }
    Tensor oc = at::full(to_cl(ref).sizes(), NAN, src.options());
    g_smem_bytes = cl_tile2d_smem_bytes<T, K>(L);
    const T* ip = sc.data_ptr<T>();
    const T* wp = w.data_ptr<T>();
    T* op = oc.data_ptr<T>();
    launch(dim3{unsigned(L.blocks)}, dim3{unsigned(L.threads)}, [&] { cl_tile2d<T, K>(ip, wp, bp, op, L); });
    ++clt_taken;
    check((std::string(what) + " cl_tile2d CG" + std::to_string(L.CG) + " SY" + std::to_string(L.SY) + " tiles" +
           std::to_string(L.tilesX) + "x" + std::to_string(L.tilesY) + " ch" + std::to_string(L.chunks))
              .c_str(),
          from_cl(oc), ref, name, tol);
  }
}
template <typename T, int K>
void clt_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t p, double tol) {
  at::manual_seed(7);
  const auto dt = c10::CppTypeToScalarType<T>::value;
  Tensor x = at::randn({N, C, H, W}).to(dt), w = at::randn({C, 1, K, K}).to(dt), b = at::randn({C}).to(dt);
  Tensor y = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), {1, 1}, {p, p}, {1, 1}, false,
                             {0, 0}, C);
  Tensor gy = at::randn(y.sizes()).to(dt);
  Tensor gx = std::get<0>(at::convolution_backward(gy.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble), std::nullopt,
                                                   {1, 1}, {p, p}, {1, 1}, false, {0, 0}, C, {true, false, false}));
  Geometry g;
  g.batch = N, g.in_channels = C, g.out_channels = C, g.groups = C;
  g.input[1] = H, g.input[2] = W, g.output[1] = y.size(2), g.output[2] = y.size(3);
  g.kernel[1] = K, g.kernel[2] = K, g.padding[1] = p, g.padding[2] = p;
  const std::string name = std::string(dt == at::kFloat ? "clt fp32" : (dt == at::kHalf ? "clt fp16" : "clt bf16")) +
                           " N" + std::to_string(N) + " C" + std::to_string(C) + " " + std::to_string(H) + "x" +
                           std::to_string(W) + " k" + std::to_string(K) + " p" + std::to_string(p);
  {
    Plan P{}; Prep Q{};
    forward_plan(g, P, Q);
    clt_check<T, K>("fwd", P, false, x, w, b, y, name, tol);
  }
  Plan P{}; Prep Q{};
  if (data_grad_plan(g, P, Q)) clt_check<T, K>("dgrad", P, true, gy, w, Tensor(), gx, name, tol);
}
template <typename T>
void clt_dtype(double tol) {
  clt_case<T, 7>(2, 64, 14, 14, 3, tol);  // ConvNeXt-14's planes (the routed shape): 8 vectors of 16
  clt_case<T, 7>(2, 16, 17, 56, 3, tol);  // 56-wide rows: one column tile, a partial last row tile
  clt_case<T, 7>(1, 20, 9, 60, 3, tol);   // two column tiles (the second partial); 5 vectors: a partial chunk
  clt_case<T, 7>(1, 8, 9, 9, 0, tol);     // 3 x 3 outputs; data-grad padding 6
  clt_case<T, 7>(2, 8, 3, 4, 5, tol);     // planes smaller than the filter, padding beyond its reach
  clt_case<T, 7>(1, 8, 4, 10, 5, tol);    // 14-wide outputs from 10-wide rows (data-grad padding 1)
}
void clt_cases() {
  clt_dtype<float>(2e-6);
  clt_dtype<at::Half>(2e-3);
  clt_dtype<at::BFloat16>(1e-2);
  std::printf("cl_tile2d launches checked: %d\n", clt_taken);
  if (clt_taken == 0) ++failures;
}
// ---- end cl7 ----

// HARNESS_ONLY=tcn runs tcn_cases alone (the tensor-core rows kernel; minutes less on 2 cores);
// HARNESS_ONLY=rows the 1-D run_case entries alone (row_warp, cl_row1d, row1d, the 1-D weight-grads).
// HARNESS_ONLY=d3r runs d3r_cases alone (depth3d_regs.cuh, cl_wgrad_d3r / cl_wgrad_d3s).
// HARNESS_ONLY=planes runs plane_cases alone (the whole-plane NCHW kernels).
// HARNESS_ONLY=walk runs the walk2d cases alone (walk_conv2d, walk_wgrad2d).
// HARNESS_ONLY=tc7 runs tc7_cases alone (tc7_nc.cuh, session 13), and tcnc_cases (session 14).
// HARNESS_ONLY=eff5 runs eff5_cases and eff5_wgrad_cases alone (walk2d at 5 x 5 in fp32,
// nc_plane_cp at 5 x 5, nc_wgrad_cp); HARNESS_ONLY=eff5wg nc_wgrad_cp alone.
// HARNESS_ONLY=s2d runs s2d_cases alone (mb16, session 13: cl_wgrad_s2d).
// HARNESS_ONLY=clbw runs clbw_cases alone (cl_band_wgrad2d, sum_slots_grouped).
int main() {
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "clt") {  // cl7: cl_tile2d alone
    clt_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "s2d") {  // mb16: cl_wgrad_s2d
    s2d_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "rows2d") {
    clwr2_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "tc7") {  // tc7n
    tc7_cases();
    tcnc_cases();  // tcnc (session 14)
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "eff5wg") {
    eff5_wgrad_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "eff5") {
    eff5_cases();
    eff5_wgrad_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "tc7c") {  // tc_cl2d alone
    tcc_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "tcn") {
    tcn_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "clbw") {  // w7 (session 13)
    clbw_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "walk") {
    walkc_cases();
    walk_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "cls2") {
    // the channels-last stride-2 data-grads (cl_stride2_dgrad) and the 31x31 cl_gather tile
    run_case(2, 2, 4, 1, {16, 16}, {4, 4}, {2, 2}, {1, 1});
    run_case(2, 2, 8, 1, {14, 11}, {3, 3}, {2, 2}, {1, 1});
    run_case(2, 1, 600, 1, {9, 10}, {3, 3}, {2, 2}, {1, 1});
    run_case(2, 2, 4, 1, {15, 13}, {4, 4}, {2, 2}, {1, 1});
    run_case(2, 2, 8, 1, {16, 15}, {4, 4}, {2, 2}, {1, 1});
    run_case(2, 2, 20, 1, {14, 13}, {3, 3}, {2, 2}, {1, 1});
    run_case(2, 1, 4, 1, {40, 37}, {31, 31}, {1, 1}, {15, 15});
    std::printf("cl_stride2_dgrad problems: %d\nfailures: %d\n", cls2_cases, failures);
    return failures != 0 || cls2_cases == 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "planes") {
    plane_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  // x3d (session 14): HARNESS_ONLY=tcw3 runs tcw3_cases alone (tc_wgrad3d.cuh: tcw3_nc at 4 blocks
  // per SM for KD 5 changes no arithmetic; the cases walk one and several chunks per channel)
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "tcw3") {
    tcw3_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "d3r") {
    d3r_cases();
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  if (const char* only = std::getenv("HARNESS_ONLY"); only && std::string(only) == "rows") {
    g_rows_only = true;
    tcw_cases();  // tc_wgrad1d
    check_fast_div();
  }
  if (!g_rows_only) {
    tcw2_cases();
    tcw3_cases();
    tcw_cases();
    clwr2_cases();
    s2d_cases();  // mb16
    walkc_cases();
    walk_cases();
    tc7_cases();  // tc7n
    tcnc_cases();  // tcnc (session 14)
    eff5_cases();
    eff5_wgrad_cases();
    clbw_cases();  // w7 (session 13)
    check_fast_div();
  }
  run_case(2, 2, 8, 1, {13, 17}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 2, 8, 1, {14, 11}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 3, 4, 1, {15, 12}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 2, 4, 1, {17, 16}, {5, 5}, {2, 2}, {2, 2});
  run_case(2, 2, 8, 1, {19, 21}, {7, 7}, {1, 1}, {3, 3});
  run_case(2, 1, 4, 1, {20, 23}, {7, 7}, {2, 2}, {3, 3});
  run_case(2, 2, 4, 1, {9, 10}, {2, 2}, {1, 1}, {0, 0});
  run_case(2, 2, 4, 1, {16, 16}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 2, 4, 1, {11, 9}, {4, 4}, {1, 1}, {1, 1});
  run_case(2, 1, 4, 1, {40, 37}, {31, 31}, {1, 1}, {15, 15});
  run_case(2, 2, 3, 1, {23, 25}, {13, 13}, {1, 1}, {6, 6});
  run_case(2, 2, 3, 1, {14, 15}, {3, 3}, {3, 3}, {1, 1});
  run_case(2, 2, 3, 2, {12, 13}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 2, 3, 3, {12, 13}, {5, 5}, {2, 2}, {2, 2});
  run_case(1, 2, 8, 1, {50}, {2}, {1}, {1});
  run_case(1, 2, 8, 1, {301}, {3}, {1}, {2});
  run_case(1, 3, 16, 1, {77}, {4}, {1}, {3});
  run_case(1, 2, 8, 1, {2100}, {4}, {1}, {3});
  run_case(1, 2, 8, 1, {200}, {15}, {1}, {14});
  run_case(1, 2, 8, 1, {333}, {31}, {1}, {15});
  run_case(1, 2, 200, 1, {100}, {31}, {1}, {15});  // fp32 long tile: 2 channel tiles of 100 lanes
  run_case(1, 2, 8, 2, {64}, {4}, {1}, {3});
  run_case(3, 2, 4, 1, {5, 9, 10}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 8, 1, {6, 8, 9}, {5, 3, 3}, {1, 1, 1}, {2, 1, 1});
  run_case(3, 2, 4, 1, {7, 9, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1});
  run_case(2, 1, 256, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1});
  // streaming NC weight-grad: more micro-tiles than threads and 2 chunks; planes stepped across
  // depth (sample groups 28 over 5 depths); 1-D in 3 chunks; no padding; padding beyond the filter
  run_case(2, 4, 2, 1, {70, 69}, {3, 3}, {1, 1}, {1, 1});
  run_case(3, 7, 2, 1, {5, 9, 10}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(1, 6, 2, 1, {2100}, {3}, {1}, {1});
  run_case(2, 3, 2, 2, {9, 11}, {7, 7}, {2, 2}, {0, 0});
  run_case(2, 2, 2, 1, {6, 7}, {5, 5}, {1, 1}, {4, 4});
  // --- channels-last weight-grad (cl_wgrad.cu): channel tiles of 36 / 75 lanes with idle
  // threads, strips cut by the right edge, no padding, wide rows ---
  run_case(2, 2, 144, 1, {13, 11}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 600, 1, {9, 10}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 2, 96, 1, {11, 9}, {7, 7}, {1, 1}, {3, 3});
  run_case(2, 2, 12, 1, {10, 9}, {5, 5}, {2, 2}, {0, 0});
  run_case(1, 3, 40, 1, {37}, {15}, {1}, {7});
  // 16-bit tiles: 18 chunks (6 of sum_chunks' 8 slices used), strips of 7 exact; 3 channel tiles
  // of 64 lanes (fp16 C 384) with a 7x7 in two row passes
  run_case(2, 2, 256, 1, {18, 14}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 384, 1, {7, 7}, {7, 7}, {1, 1}, {3, 3});
  // --- end channels-last weight-grad ---
  // Streaming kernel: aligned widths (vector stores), planes of 7 and 14, bands cut by the height,
  // transposed-conv phases on odd sizes, multiplier 2 through the data-grad, 3-D stride 2 k5.
  run_case(2, 2, 4, 1, {24, 32}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 4, 1, {33, 40}, {5, 5}, {2, 2}, {2, 2});
  run_case(2, 2, 4, 1, {14, 14}, {7, 7}, {1, 1}, {3, 3});
  run_case(2, 2, 4, 1, {15, 13}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 2, 3, 2, {9, 7}, {7, 7}, {2, 2}, {3, 3});
  run_case(2, 1, 4, 1, {5, 6}, {3, 3}, {1, 1}, {0, 0});
  run_case(2, 1, 4, 1, {3, 2}, {5, 5}, {1, 1}, {2, 2});
  run_case(1, 2, 4, 2, {37}, {3}, {1}, {1});
  run_case(3, 1, 4, 1, {5, 7, 9}, {5, 5, 5}, {2, 2, 2}, {2, 2, 2});
  run_case(3, 1, 4, 2, {4, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(2, 0, 4, 1, {12, 13}, {3, 3}, {1, 1}, {1, 1});
  // --- channels-last forward / data-grad tiles (cl_tiled.cuh), R = 8 and R = 4 (cl_outputs), in
  // fp32 and fp16: 8 and 16 channels (one or two 16-byte vectors), odd sizes, strips and rows cut
  // by the edges, padding on every border, 3-D, equal channel tiles (960 fp32: 4 x 60 lanes) and
  // unequal ones (268 fp32: 67 lanes in 3 tiles of 32) ---
  run_case(2, 2, 16, 1, {15, 12}, {5, 5}, {1, 1}, {2, 2});
  run_case(2, 1, 8, 1, {17, 16}, {5, 5}, {2, 2}, {2, 2});
  run_case(2, 1, 8, 1, {20, 23}, {7, 7}, {2, 2}, {3, 3});
  run_case(2, 2, 8, 1, {9, 11}, {2, 2}, {1, 1}, {0, 0});
  run_case(2, 2, 8, 1, {16, 15}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 2, 8, 1, {11, 9}, {4, 4}, {1, 1}, {1, 1});
  run_case(2, 1, 16, 1, {7, 7}, {7, 7}, {1, 1}, {3, 3});
  run_case(3, 1, 8, 1, {5, 9, 10}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 8, 1, {7, 9, 8}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1});
  run_case(1, 2, 16, 1, {37}, {3}, {1}, {1});
  run_case(2, 1, 960, 1, {5, 6}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 268, 1, {6, 5}, {5, 5}, {1, 1}, {2, 2});
  // 1-D rows (strips of 16 / 8, 16-byte loads + select network): causal-style padding k-1 on odd
  // lengths (every row a different misalignment), k15 / k31 rows, a 1xK 2-D filter, the stride-2
  // data-grad's phases on 1-D rows, rows shorter than a vector
  run_case(1, 2, 4, 1, {2051}, {4}, {1}, {3});
  run_case(1, 2, 4, 1, {517}, {3}, {1}, {1});
  run_case(1, 2, 4, 1, {333}, {15}, {1}, {14});
  run_case(1, 1, 4, 1, {1000}, {31}, {1}, {15});
  run_case(2, 2, 3, 1, {5, 61}, {1, 15}, {1, 1}, {0, 7});
  run_case(1, 2, 4, 1, {67}, {4}, {2}, {1});
  run_case(1, 2, 4, 1, {5}, {3}, {1}, {1});
  // 16-bit 2-D tiles of 8 x 4 / 8 x 2: widths multiple of 8 (aligned vectors) and not, 7x7 planes
  run_case(2, 2, 4, 1, {20, 56}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 2, 4, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1});
  run_case(2, 1, 4, 1, {13, 29}, {7, 7}, {1, 1}, {3, 3});
  if (!g_rows_only) plane_cases();
  // row1d (15 / 31 taps): several segments per row with causal padding on odd lengths (scalar
  // stores), 'same' padding on aligned rows (vector stores), the forward's channel multiplier
  // (its data-grad, J = 2, declines), padding beyond the filter (negative data-grad padding),
  // rows shorter than the filter, batch 1; stride 2 declines (forward S = 2, data-grad 2 phases)
  run_case(1, 2, 3, 1, {1100}, {15}, {1}, {14});
  run_case(1, 1, 2, 1, {1030}, {31}, {1}, {30});
  run_case(1, 2, 2, 1, {512}, {31}, {1}, {15});
  run_case(1, 2, 3, 2, {90}, {15}, {1}, {7});
  run_case(1, 1, 2, 1, {40}, {15}, {1}, {20});
  run_case(1, 2, 2, 1, {9}, {31}, {1}, {15});
  run_case(1, 1, 2, 1, {81}, {15}, {2}, {7});
  // row1d weight-grad: 4 chunks of 18 items (2-3 per warp, prefetch), one chunk of 30 items
  run_case(1, 8, 2, 1, {2100}, {15}, {1}, {14});
  run_case(1, 5, 1, 1, {1500}, {31}, {1}, {15});
  // row_warp (2, 3, 4, 15 taps): 16 rows of odd length (every input / output misalignment pair),
  // segments cut by both row ends, padding beyond the filter (negative data-grad padding), rows
  // shorter than a vector, the forward's channel multiplier (its data-grad declines), no padding
  run_case(1, 2, 8, 1, {1027}, {4}, {1}, {3});
  run_case(1, 1, 16, 1, {301}, {3}, {1}, {2});
  run_case(1, 2, 6, 1, {45}, {2}, {1}, {1});
  run_case(1, 1, 4, 1, {20}, {4}, {1}, {6});
  run_case(1, 2, 3, 1, {3}, {3}, {1}, {1});
  run_case(1, 2, 3, 2, {129}, {4}, {1}, {3});
  run_case(1, 1, 16, 1, {600}, {15}, {1}, {14});
  run_case(1, 1, 5, 1, {64}, {2}, {1}, {0});
  // the tail past a row's last segment (session 10): short_k3's 514-wide causal k3 rows (a
  // 2-9 output tail in 16-bit, a segment + tail in fp32), a tail of up to 32 outputs (537), and a
  // weight-grad of several chunks per channel (16 rows of 602: 2 / 3 chunks)
  run_case(1, 2, 3, 1, {512}, {3}, {1}, {2});
  run_case(1, 1, 8, 1, {535}, {3}, {1}, {2});
  run_case(1, 16, 2, 1, {600}, {3}, {1}, {2});
  std::printf("row_warp: %d launches checked\n", rw_taken);
  if (rw_taken == 0) ++failures;
  std::printf("row1d: %d launches checked, %d declined\n", row_taken, row_declined);
  if (row_taken == 0) ++failures;
  // depth-streaming NCDHW (nc_depth3d.cuh): X3D k3 / k5x3x3 at depth stride 1 with spatial stride
  // 1 and 2 (the data-grad's 2x2 sub-filters in 4 phases), widths 16 / 24 (aligned 16-bit rows)
  // and odd, depths that give several segments and shallower than 2*KD, no depth padding, padding
  // beyond the filter, batch 1, multiplier 2 (forward / weight-grad only; the data-grad declines)
  run_case(3, 2, 3, 1, {13, 6, 16}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 2, 1, {12, 7, 24}, {5, 3, 3}, {1, 1, 1}, {2, 1, 1});
  run_case(3, 2, 2, 1, {9, 9, 11}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1});
  run_case(3, 1, 3, 1, {11, 8, 13}, {5, 3, 3}, {1, 2, 2}, {2, 1, 1});
  run_case(3, 1, 2, 1, {4, 5, 9}, {3, 3, 3}, {1, 1, 1}, {0, 1, 1});
  run_case(3, 1, 3, 1, {3, 5, 7}, {5, 3, 3}, {1, 1, 1}, {3, 2, 0});
  run_case(3, 1, 2, 2, {10, 5, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 3, 1, {40, 4, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  // channels-last depth streaming (cl_depth3d.cuh, cl_wgrad_depth3d): several channel tiles and
  // groups, strips cut by the right edge, depth segments (batch 1, deep), spatial stride 2 (the
  // data-grad's 2x2 sub-filters in 4 phases), no depth padding; cl_depth3d's lane groups of 8
  // channel vectors x 4 strips with idle lanes past the row (C 32, 6 strips)
  run_case(3, 2, 40, 1, {7, 6, 13}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 32, 1, {5, 4, 21}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 24, 1, {30, 5, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  run_case(3, 1, 8, 1, {9, 7, 11}, {5, 3, 3}, {1, 2, 2}, {2, 1, 1});
  run_case(3, 2, 8, 1, {6, 9, 10}, {3, 3, 3}, {1, 2, 2}, {0, 1, 1});
  std::printf("cl_stride2_dgrad problems: %d\n", cls2_cases);
  if (cls2_cases == 0 && !g_rows_only) ++failures;  // rows-only runs no 2-D case
  std::printf("cl_wgrad short16 launches checked: %d\n", clws_taken);
  if (clws_taken == 0) ++failures;
  std::printf("cl_wgrad_depth3d launches checked: %d\n", clw3_taken);
  if (clw3_taken == 0 && !g_rows_only) ++failures;
  // channels-last 1-D rows (cl_row1d.cuh): 2-4, 15, 31 taps; causal padding k-1 on odd lengths
  // (strips cut by the end), 'same' padding, the data-grad of padding beyond the filter
  // (negative), channel vectors below a warp (8 fp32 / 16 fp16: 2 lanes) and at two chunks with
  // idle lanes (C 296: 74 fp32 vectors in 3 chunks of 32, 37 fp16 in 2), a 1x4 filter on an NHWC tensor (rows = N x H),
  // a row shorter than a strip; the data-grad of a multiplier-2 filter declines
  run_case(1, 2, 8, 1, {2051}, {4}, {1}, {3});
  run_case(1, 3, 16, 1, {517}, {3}, {1}, {2});
  run_case(1, 2, 296, 1, {77}, {2}, {1}, {1});
  run_case(1, 2, 16, 1, {333}, {15}, {1}, {14});
  run_case(1, 2, 8, 1, {300}, {31}, {1}, {15});
  run_case(1, 1, 8, 1, {60}, {15}, {1}, {20});
  run_case(2, 2, 8, 1, {3, 41}, {1, 4}, {1, 1}, {0, 3});
  run_case(1, 2, 8, 1, {5}, {3}, {1}, {1});
  // NCHW stride-2 data-grad writing whole rows (nc_stride2_dgrad.cuh): k4 s2 p1 (the depthwise
  // transposed conv), k3 s2 p1 on even widths (output_padding 1) and k2 s2 p0; rows of 6-28
  // strips (rows spanning warps: lanes 0 and 31 load their halo), odd output heights and bands
  // cut by the height, several blocks and idle lanes in the last; odd widths (earlier cases) and
  // misaligned rows decline
  run_case(2, 2, 3, 1, {16, 16}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 1, 3, 1, {15, 80}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 2, 16, 1, {32, 64}, {4, 4}, {2, 2}, {1, 1});
  run_case(2, 2, 2, 1, {22, 48}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 1, 3, 1, {9, 112}, {3, 3}, {2, 2}, {1, 1});
  run_case(2, 2, 3, 1, {14, 16}, {2, 2}, {2, 2}, {0, 0});
  run_case(2, 1, 2, 1, {7, 48}, {2, 2}, {2, 2}, {0, 0});
  std::printf("nc_stride2_dgrad: %d launches checked, %d declined\n", s2_taken, s2_declined);
  if (s2_taken == 0 && !g_rows_only) ++failures;
  std::printf("cl_row1d launches checked: %d\n", clr_taken);
  if (clr_taken == 0) ++failures;
  std::printf("cl_depth3d launches checked: %d\n", cl3_taken);
  if (cl3_taken == 0 && !g_rows_only) ++failures;
  // tensor-core 16-bit rows (tc_row1d.cuh): Conformer's k31 'same' (3 k-steps, rows of 4 tiles,
  // the last partial), k15 causal on odd lengths (every input / output misalignment, odd ones
  // included), rows shorter than a block of 16 and than the filter, padding beyond the filter
  // (negative data-grad padding), 9 and 47 taps (2 and 4 k-steps), 40 channels (a partial
  // channels-last group)
  for (int dt = 0; dt < 2; ++dt) {
    auto one = [&](int64_t N, int64_t C, int64_t Lx, int64_t K, int64_t p) {
      if (dt == 0) tc_case<at::Half>(N, C, Lx, K, p, 2e-3);
      else tc_case<at::BFloat16>(N, C, Lx, K, p, 1e-2);
    };
    one(1, 40, 1000, 31, 15);
    one(2, 8, 333, 15, 14);
    one(1, 3, 600, 15, 14);
    one(1, 8, 9, 31, 15);
    one(2, 8, 5, 15, 7);
    one(1, 8, 60, 15, 20);
    one(1, 16, 77, 9, 4);
    one(1, 8, 300, 47, 23);
  }
  std::printf("tc_row1d launches checked: %d\n", tc_taken);
  if (tc_taken == 0) ++failures;
  if (g_rows_only) {
    std::printf("failures: %d\n", failures);
    return failures != 0;
  }
  tcn_cases();
  tcc_cases();
  clt_cases();  // cl7
  d3r_cases();
  std::printf("failures: %d\n", failures);
  return failures != 0;
}
