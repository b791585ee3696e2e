#!/usr/bin/env bash
# Builds convx with CUDA and checks it on the GPU machine: tests, compute-sanitizer, benchmark.
#
# For the device machine (torch 2.11 + CUDA in the default python3, cmake 4.4, ninja, pytest,
# no internet). Must build there: a library built against another torch does not load
# (docs: /work/shared/notes/build-facts.md). Every stage's output is tee'd into ${OUT:-bench/results}:
# build.log, gpu_tests.log, sanitizer.log, bench.log, gpu_depthwise.json (+ .png), gpu_dense.json.
# Stages have time limits. Timed on the H100 (session 4): build 60-70 s on a fresh machine,
# depthwise GPU tests 90 s, dense GPU tests 50 s (session 3), sanitizers 45 s, depthwise bench
# 150 s, dense bench 120 s (session 3): about 9 minutes in all, near one 600 s call (session 5:
# memcheck 35 s, racecheck 37 s; session 6 adds the NDHWC depth-streaming cases to both); the two halves
# (`gpu_check.sh tests`, `gpu_check.sh bench`) leave room for more;
# a failing stage is reported and the next one still
# runs; the exit status is non-zero when any stage failed.
set -euo pipefail
# PARTS: any of tests (GPU tests), sanitize (compute-sanitizer memcheck / racecheck over pytest
# selections and the per-kernel drivers), drivers (the per-kernel drivers alone), bench (the
# depthwise benchmark) and dense (the dense benchmark); default all. Each builds first (a no-op
# when already built). One 600 s device call holds `tests drivers bench` (~100 + 80 + 60 + 240 s
# on a fresh machine) or `sanitize` (~100 + 400 s), not everything.
PARTS=" ${*:-tests sanitize bench dense} "
part() { [[ $PARTS == *" $1 "* ]]; }
cd "$(dirname "$0")/.."

OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
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

: >"$OUT_DIR/build.log"
part tests && : >"$OUT_DIR/gpu_tests.log"
{ part sanitize || part drivers; } && : >"$OUT_DIR/sanitizer.log"
{ part bench || part dense; } && : >"$OUT_DIR/bench.log"
nvidia-smi 2>&1 | tee -a "$OUT_DIR/build.log" || true

stage build "$OUT_DIR/build.log" 300 bash -c ". scripts/gpu_build.sh"
. scripts/gpu_build.sh >/dev/null 2>&1 || true   # its environment (the build is done)
if [[ ! -f build-gpu/libconvx.so ]]; then
  echo "no library built; stopping" | tee -a "$OUT_DIR/build.log"
  exit 1
fi

if part tests; then
stage tests "$OUT_DIR/gpu_tests.log" 240 python3 -m pytest python_tests/test_cuda.py python_tests/test_cuda_devices.py -q -rs
stage dense "$OUT_DIR/gpu_tests.log" 240 python3 -m pytest python_tests/test_cuda_dense.py python_tests/test_cuda_bias_grad.py -q -rs
fi

if part sanitize; then

# The caching allocator would hide out-of-bounds accesses inside its blocks: turn it off here.
# memcheck: the generic kernels (random configurations), every depthwise fast path in fp32 and
# the session-5/6 kernels (whole-plane NCHW, 1-D rows, 16-bit channels-last, depth streaming in
# NCDHW and NDHWC: test_depthwise_depth3d's three placements, the 3-D fast paths in both layouts);
# racecheck: the shared-memory tiles of the NC forward / data-grad, both one-pass weight-grads,
# the 1-D rows (warp-synchronous shared memory), the whole-plane kernel and the NDHWC
# depth-streaming weight-grad (cl_wgrad_depth3d: shared group sums, then sum_chunks); session 9:
# the stride-2 NCHW data-grad (nc_stride2_dgrad) and the tensor-core 1-D rows and weight-grads
# (tc_row1d, tc_wgrad1d: staged windows, transposed channels-last tiles) under memcheck, the
# tensor-core kernels under racecheck (scripts/racecheck_tc.py). Session 9 timing (H100, fresh machine):
# build 100 s, tests 30 s, dense 50 s, memcheck 245 s, memcheck-dense 35 s, racecheck ~70 s,
# racecheck-tc ~25 s: the tests half is close to one 600 s call.
SAN="/usr/local/cuda/bin/compute-sanitizer --error-exitcode=99"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 stage memcheck "$OUT_DIR/sanitizer.log" 300 $SAN --tool memcheck \
  python3 -m pytest python_tests/test_cuda.py -q -x \
  -k "(test_float64_matches_aten_cuda and (depthwise_conv2d or conv_transpose1d or conv3d_weight_grad)) or (test_depthwise_fast_paths and fp32 and (r2_k3x3 or r2_k4x4_s2 or r2_k7x7 or r2_k31 or r1_k4 or r1_k31 or r3_k3 or r3_k5)) or (test_depthwise_nc_small_planes and aligned) or (test_depthwise_row1d and fp32) or (test_depthwise_cl16_fast_path) or (test_depthwise_depth3d and fp32 and not beyond) or (test_depthwise_stride2_dgrad and aligned) or (test_depthwise_tc_rows and not beyond) or test_depthwise_tc_wgrad1d"
# session 9's few-channel dense data-grad gather (its routing asserts accept the empty profile
# that compute-sanitizer leaves: the sanitizer disables CUPTI)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 stage memcheck-dense "$OUT_DIR/sanitizer.log" 150 $SAN --tool memcheck \
  python3 -m pytest python_tests/test_cuda_dense.py -q -x -k "few_channel"
stage racecheck "$OUT_DIR/sanitizer.log" 150 $SAN --tool racecheck \
  python3 -m pytest python_tests/test_cuda.py -q -x \
  -k "(bitwise_repeatable and k3 and not k31) or (test_depthwise_fast_paths and fp32 and contiguous and (r2_k3x3_s1_m1_n2_c8 or r2_k4x4_s2_m1_n2_c4)) or (test_depthwise_row1d and fp32 and aligned) or (test_depthwise_nc_small_planes and fp32 and aligned and n3_c40) or (test_depthwise_depth3d and fp32 and ndhwc and not off1)"
# the tensor-core 1-D kernels through a script without float64 references (see its header)
stage racecheck-tc "$OUT_DIR/sanitizer.log" 120 $SAN --tool racecheck python3 scripts/racecheck_tc.py

fi

if part sanitize || part drivers; then
SAN="/usr/local/cuda/bin/compute-sanitizer --error-exitcode=99"
# session 10's kernels, each through its own small driver (no float64 references under the tool):
# tc_rows_nc (2-D / 3-D NC tensor-core rows), tc_wgrad3d (3-D tensor-core weight-grad), the
# short 1-D rows (row_warp / cl_row1d reading the layer's filter, row tails); session 11's
# channels-last ring (cl_ring), 2-D tensor-core weight-grad (tc_wgrad2d), 16-bit 5x3x3 (depth3d_regs),
# the pipelined NCHW planes (nc_plane); session 12's 16-bit NCHW planes staged by cp.async (nc_plane_cp)
# and channels-last stride-2 data-grad (cl_stride2_dgrad), the 7x7 column walk (walk2d), the 16-bit
# small-plane weight-grads (cl_wgrad_rows, rows_as_depth, NCHW one chunk); session 13's tensor-core
# 7x7 NCHW planes (tc7_nc), staged 16-bit 2-D weight-grads (cl_wgrad_s2d, nc_wgrad_s2d),
# channels-last 16-bit 7x7 on tensor cores (tc_cl2d) and the channels-last 7x7 band weight-grad
# (cl_band_wgrad2d)
for s in racecheck_tcnc racecheck_tc_wgrad3d sanitize_short_rows sanitize_cl_ring racecheck_tc_wgrad2d sanitize_depth3d_regs racecheck_nc_plane racecheck_nc_plane_cp sanitize_cl_stride2 sanitize_walk2d sanitize_wgrad_rows2d sanitize_tc7 sanitize_wgrad_s2d sanitize_tc_cl2d sanitize_cl_band_wgrad2d; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 stage "memcheck-$s" "$OUT_DIR/sanitizer.log" 90 $SAN --tool memcheck python3 "scripts/$s.py"
  stage "racecheck-$s" "$OUT_DIR/sanitizer.log" 90 $SAN --tool racecheck python3 "scripts/$s.py"
done
fi

if part bench; then
stage bench "$OUT_DIR/bench.log" 240 python3 bench/gpu_bench.py --out "$OUT_DIR/gpu_depthwise.json"
fi
if part dense; then
stage dense-bench "$OUT_DIR/bench.log" 200 python3 bench/gpu_dense_bench.py --out "$OUT_DIR/gpu_dense.json"
fi

if ((${#failed[@]})); then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
