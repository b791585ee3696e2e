#!/usr/bin/env bash
# The AOTInductor chain on the GPU machine (docs/deploy.md): builds convx with CUDA
# (scripts/gpu_build.sh), installs it, builds examples/aoti on its own against the installed
# package (find_package(convx)), then bench/aoti_bench.py compiles CUDA packages of converted
# mobilenet_v3_large and the decoder (convx, convx with C shims, and aten without convx), checks
# them against aten at batch 1 and 64 and times them against eager. Logs and results go to
# ${OUT:-bench/results/h100}: aoti_build.log, aoti_bench.log, aoti_bench.json, aoti_runner.log.
# MODELS=a,b picks the models (default mobilenet_v3_large,decoder).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-bench/results/h100}
mkdir -p "$OUT_DIR"
work=${TMPDIR:-/tmp}/convx-aoti
rm -rf "$work"

{
  . scripts/gpu_build.sh &&
    cmake --install build-gpu --prefix "$PWD/build-gpu/prefix" &&
    cmake -S examples/aoti -B build-gpu/aoti -G Ninja ${CXX:+-DCMAKE_CXX_COMPILER=$CXX} \
      -DCMAKE_PREFIX_PATH="$PWD/build-gpu/prefix;$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" &&
    cmake --build build-gpu/aoti -j"$(nproc)"
} >"$OUT_DIR/aoti_build.log" 2>&1 || { echo "build failed: $OUT_DIR/aoti_build.log"; exit 1; }

status=0
python3 bench/aoti_bench.py --runner build-gpu/aoti/convx_run_aoti --out "$work" --device cuda \
  --models "${MODELS:-mobilenet_v3_large,decoder}" --batches 1,64 --repeat 50 --compile-timeout 300 2>&1 |
  grep -v '^W[0-9]' | tee "$OUT_DIR/aoti_bench.log" || status=1
cp "$work/aoti_bench.json" "$OUT_DIR/aoti_bench.json" 2>/dev/null || status=1
cp "$work/runner.log" "$OUT_DIR/aoti_runner.log" 2>/dev/null || status=1
exit $status
