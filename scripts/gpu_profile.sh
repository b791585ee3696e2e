#!/usr/bin/env bash
# Profiles benchmark rows with Nsight Compute on the device machine: builds (scripts/gpu_build.sh),
# runs the fast CUDA tests, measures host time per call (bench/profile_cases.py --host), then one
# ncu process per row (speed of light, occupancy, launch, warp stalls, memory) for convx's and
# aten's kernels. Output in ${OUT:-bench/results}: build.log, tests.log, host.log, ncu.log.
#   OUT=$OUT bash scripts/gpu_profile.sh mbv2_s1:fp16:nhwc:fwd mamba_k4:bf16:nlc:bwd ...
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
. scripts/gpu_build.sh >"$OUT_DIR/build.log" 2>&1 || { tail -30 "$OUT_DIR/build.log"; exit 1; }
export PYTHONPATH=$PYTHONPATH:$PWD/bench
timeout 120 python3 -m pytest python_tests/test_cuda.py -q -x 2>&1 | tail -3 | tee "$OUT_DIR/tests.log"
timeout 60 python3 bench/profile_cases.py --host 2>&1 | tee "$OUT_DIR/host.log"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
: >"$OUT_DIR/ncu.log"
for spec in "$@"; do
  echo "##### $spec" >>"$OUT_DIR/ncu.log"
  timeout 90 "$NCU" --profile-from-start off --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 bench/profile_cases.py "$spec" >>"$OUT_DIR/ncu.log" 2>&1
done
echo "kernels profiled: $(grep -c 'Duration' "$OUT_DIR/ncu.log")"
