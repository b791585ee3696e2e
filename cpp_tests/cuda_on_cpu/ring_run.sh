#!/usr/bin/env bash
# Builds and runs ring_harness.cpp: the channels-last ring kernel (ops/depthwise_conv/cuda/
# cl_ring.cuh) on the CPU through shim.h, vs aten in float64. The kernel header is copied with one
# textual change for the shim (dynamic shared memory); the plans come from depthwise_conv.cu as in
# run.sh. ASAN=1 adds AddressSanitizer. Needs g++ >= 12 and the torch in $PYTHON (default:
# python3). A few minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=$root/ops/depthwise_conv/cuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/extern __shared__ __align__(16) unsigned char smem_raw\[\];/unsigned char* smem_raw = g_smem;/' \
  "$src/cl_ring.cuh" >"$tmp/cl_ring.cuh"
sed -n '/^\/\/ -* tiled fast paths/,/^bool cl_vector_ok/p' "$src/depthwise_conv.cu" | sed '$d' >"$tmp/plans.inc"
TI=$(${PYTHON:-python3} -c 'import torch, os; print(os.path.dirname(torch.__file__))')
flags=(-std=c++20 -O1 -w -pthread)
[[ "${ASAN:-0}" == 1 ]] && flags+=(-g -fsanitize=address -fno-omit-frame-pointer)
g++ "${flags[@]}" -I"$tmp" -I"$here" -I"$root" -isystem "$TI/include" \
  -isystem "$TI/include/torch/csrc/api/include" "$here/ring_harness.cpp" -o "$tmp/harness" \
  -L"$TI/lib" -ltorch -ltorch_cpu -lc10 -Wl,-rpath,"$TI/lib"
ASAN_OPTIONS=detect_leaks=0 "$tmp/harness"
