#!/usr/bin/env bash
# Builds and runs harness.cpp: the depthwise CUDA kernels' sources on the CPU (see its header).
# The kernel files are copied with four textual changes for the shim (dynamic shared memory,
# block-static shared arrays, an unroll pragma g++ does not know, the whole-plane kernels' and
# row_warp.cuh's include of the copied nc_stream.cuh). ASAN=1 adds AddressSanitizer.
# Needs g++ >= 12 and the torch in $PYTHON (default: python3). About 1-3 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=$root/ops/depthwise_conv/cuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in nc_tiled.cuh cl_tiled.cuh nc_plane.cuh nc_plane_cp.cuh nc_small_planes.cuh row1d.cuh row_warp.cuh tc_row1d.cuh tc_wgrad1d.cuh tc_rows_nc.cuh tc7_nc.cuh tc_wgrad3d.cuh tc_wgrad2d.cuh tc_cl2d.cuh; do
  sed -e 's|#include "ops/depthwise_conv/cuda/nc_stream.cuh"|#include "nc_stream.cuh"|' \
      -e 's|#include "ops/depthwise_conv/cuda/tc_row1d.cuh"|#include "tc_row1d.cuh"|' \
      -e 's|#include "ops/depthwise_conv/cuda/tc_wgrad\([13]\)d.cuh"|#include "tc_wgrad\1d.cuh"|' \
      -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
      -e 's/#pragma unroll(KH > 0 ? KH : 1)//' -e 's/__shared__ float red/static float red/' "$src/$f" >"$tmp/$f"
done
# the streaming NC weight-grad: its block-static reduction scratch becomes a function static
sed -e 's/__shared__ acc_t red/static acc_t red/' "$src/nc_wgrad_stream.cuh" >"$tmp/nc_wgrad_stream.cuh"
# the column-walking 7x7 kernels: the same, and their include of nc_wgrad_stream.cuh points at the copy
sed -e 's/__shared__ acc_t red/static acc_t red/' -e 's#"ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"#"nc_wgrad_stream.cuh"#' \
  "$src/walk2d.cuh" >"$tmp/walk2d.cuh"
# mb16: the staged 16-bit NCHW weight-grad: dynamic shared memory and its scratch as in the loop above,
# its include of nc_wgrad_stream.cuh points at the copy
sed -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
    -e 's/__shared__ float red/static float red/' \
    -e 's#"ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"#"nc_wgrad_stream.cuh"#' "$src/nc_wgrad_s2d.cuh" >"$tmp/nc_wgrad_s2d.cuh"
cp "$src/nc_stream.cuh" "$tmp/nc_stream.cuh"
# the staged NCHW weight-grad (eff5): its includes point at the copies, its shared memory as above
sed -e 's#"ops/depthwise_conv/cuda/nc_plane_cp.cuh"#"nc_plane_cp.cuh"#' \
    -e 's#"ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"#"nc_wgrad_stream.cuh"#' \
    -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
    -e 's/__shared__ float red/static float red/' "$src/nc_wgrad_cp.cuh" >"$tmp/nc_wgrad_cp.cuh"
# the weight-grads' chunk sums: the grouped sum's block-static scratch (found before the original
# through -I"$tmp", also by the files including it by its full path)
mkdir -p "$tmp/ops/depthwise_conv/cuda"
sed -e 's/__shared__ acc_t red/static acc_t red/' "$src/wgrad_sum.cuh" >"$tmp/ops/depthwise_conv/cuda/wgrad_sum.cuh"
# the channels-last 7x7 band weight-grad: its dynamic shared memory
sed -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
  "$src/cl_band_wgrad2d.cuh" >"$tmp/cl_band_wgrad2d.cuh"
# the stride-2 data-grad kernel: its include of nc_stream.cuh (FastDiv) points at the copy
sed -e 's#"ops/depthwise_conv/cuda/nc_stream.cuh"#"nc_stream.cuh"#' "$src/nc_stride2_dgrad.cuh" >"$tmp/nc_stride2_dgrad.cuh"
# the depth-streaming NCDHW kernels: its includes of the two files above point at the copies
sed -e 's#"ops/depthwise_conv/cuda/nc_stream.cuh"#"nc_stream.cuh"#' \
    -e 's#"ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"#"nc_wgrad_stream.cuh"#' \
    -e 's/__shared__ acc_t red/static acc_t red/' "$src/nc_depth3d.cuh" >"$tmp/nc_depth3d.cuh"
# the channels-last depth-streaming kernel: its include of cl_tiled.cuh points at the copy
sed -e 's#"ops/depthwise_conv/cuda/cl_tiled.cuh"#"cl_tiled.cuh"#' "$src/cl_depth3d.cuh" >"$tmp/cl_depth3d.cuh"
# the channels-last stride-2 data-grad: the same
sed -e 's#"ops/depthwise_conv/cuda/cl_tiled.cuh"#"cl_tiled.cuh"#' "$src/cl_stride2_dgrad.cuh" >"$tmp/cl_stride2_dgrad.cuh"
# the 16-bit 5x3x3 kernel with the filter in registers: the same
sed -e 's#"ops/depthwise_conv/cuda/cl_tiled.cuh"#"cl_tiled.cuh"#' \
    -e 's/__shared__ __align__(16) T ring/alignas(16) static T ring/' \
    -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
    "$src/depth3d_regs.cuh" >"$tmp/depth3d_regs.cuh"
# the channels-last 1-D row kernel: the same
sed -e 's#"ops/depthwise_conv/cuda/cl_tiled.cuh"#"cl_tiled.cuh"#' "$src/cl_row1d.cuh" >"$tmp/cl_row1d.cuh"
# the kernels of cl_wgrad.cu (up to its '// ---- host launch' line) and the plans of depthwise_conv.cu
sed -n '/^namespace convx::cuda {/,/^\/\/ ---- host launch/p' "$src/cl_wgrad.cu" | sed '$d' |
  sed -e 's/__shared__ acc_t red/static acc_t red/' \
      -e 's/__shared__ __align__(16) unsigned char d3w_smem/alignas(16) static unsigned char d3w_smem/' \
      -e 's/__shared__ __align__(16) unsigned char s2d_smem/alignas(16) static unsigned char s2d_smem/' >"$tmp/cl_wgrad_k.inc"
echo "}}" >>"$tmp/cl_wgrad_k.inc"
sed -n '/^\/\/ -* tiled fast paths/,/^bool cl_vector_ok/p' "$src/depthwise_conv.cu" | sed '$d' >"$tmp/plans.inc"
TI=$(${PYTHON:-python3} -c 'import torch, os; print(os.path.dirname(torch.__file__))')
flags=(-std=c++20 -O1 -w -pthread)
[[ "${ASAN:-0}" == 1 ]] && flags+=(-g -fsanitize=address -fno-omit-frame-pointer)
g++ "${flags[@]}" -I"$tmp" -I"$here" -I"$root" -isystem "$TI/include" \
  -isystem "$TI/include/torch/csrc/api/include" "$here/harness.cpp" -o "$tmp/harness" \
  -L"$TI/lib" -ltorch -ltorch_cpu -lc10 -Wl,-rpath,"$TI/lib"
ASAN_OPTIONS=detect_leaks=0 "$tmp/harness"
