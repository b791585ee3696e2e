#!/usr/bin/env bash
# Builds convx with CUDA and checks it on the GPU machine: tests, compute-sanitizer, benchmark.
#
# For the device machine (torch 2.11 + CUDA in the default python3, cmake 4.4, ninja, pytest,
# no internet). Must build there: a library built against another torch does not load
# (docs: /work/shared/notes/build-facts.md). Every stage's output is tee'd into ${OUT:-bench/results}:
# build.log, gpu_tests.log, sanitizer.log, bench.log, gpu_depthwise.json. Stages have time limits
# so the whole run stays under ~9 minutes; a failing stage is reported and the next one still
# runs; the exit status is non-zero when any stage failed.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
export TORCH_CUDA_ARCH_LIST=9.0          # one architecture (H100/H200): short build
# The device sets CXX=/opt/gcc/bin/g++, another GCC with its own libstdc++ headers; code built
# with it crashes in std::ostream (every error message) against the system libstdc++ that
# torch 2.11 (built with the system GCC 13) loads. Use the system GCC for C++ and CUDA host code.
if [[ -x /usr/bin/g++ ]]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++; fi
export CUBLAS_WORKSPACE_CONFIG=:4096:8   # the tests run cuBLAS under use_deterministic_algorithms
export CONVX_LIBRARY=$PWD/build-gpu/libconvx.so
export PYTHONPATH=python
failed=()

stage() {  # stage NAME LOG SECONDS CMD...: runs CMD with a time limit, tee'd into LOG
  local name=$1 log=$2 secs=$3
  shift 3
  echo "=== $name ($(date +%T), limit ${secs}s)" | tee -a "$log"
  if ! timeout --kill-after=10 "$secs" "$@" 2>&1 | tee -a "$log"; then
    echo "=== $name FAILED" | tee -a "$log"
    failed+=("$name")
  fi
}

: >"$OUT_DIR/build.log"; : >"$OUT_DIR/gpu_tests.log"; : >"$OUT_DIR/sanitizer.log"; : >"$OUT_DIR/bench.log"
nvidia-smi 2>&1 | tee -a "$OUT_DIR/build.log" || true

stage configure "$OUT_DIR/build.log" 120 cmake -S . -B build-gpu -G Ninja \
  -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
  -DCONVX_CUDA=ON -DCONVX_BUILD_TESTS=OFF ${CXX:+-DCMAKE_CXX_COMPILER=$CXX -DCMAKE_CUDA_HOST_COMPILER=$CXX}
stage build "$OUT_DIR/build.log" 300 cmake --build build-gpu -j"$(nproc)"
if [[ ! -f build-gpu/libconvx.so ]]; then
  echo "no library built; stopping" | tee -a "$OUT_DIR/build.log"
  exit 1
fi

stage tests "$OUT_DIR/gpu_tests.log" 200 python3 -m pytest python_tests/test_cuda.py -q -rs

# The caching allocator would hide out-of-bounds accesses inside its blocks: turn it off here.
SAN="/usr/local/cuda/bin/compute-sanitizer --error-exitcode=99"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 stage memcheck "$OUT_DIR/sanitizer.log" 120 $SAN --tool memcheck \
  python3 -m pytest python_tests/test_cuda.py -q -x \
  -k "test_float64_matches_aten_cuda and (depthwise_conv2d or conv_transpose1d or conv3d_weight_grad)"
stage racecheck "$OUT_DIR/sanitizer.log" 120 $SAN --tool racecheck \
  python3 -m pytest python_tests/test_cuda.py -q -x -k "test_depthwise_weight_grad_deterministic and contiguous and float32"

stage bench "$OUT_DIR/bench.log" 210 python3 bench/gpu_bench.py --out "$OUT_DIR/gpu_depthwise.json"

if ((${#failed[@]})); then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
