#!/usr/bin/env bash
# Times the variants of a kernel family that a tuning environment variable selects, with
# bench/gpu_bench.py on the rows that family serves: one benchmark run per value, each log in
# ${OUT:-bench/results}/tune_<VAR>_<value>.log (the JSON and plot in ${TUNE_JSON_DIR:-/tmp}, to
# keep the files a device call returns few). Expects the build of
# scripts/gpu_build.sh (run it first, sourced, in the same shell or call).
#   bash scripts/gpu_tune.sh CONVX_CL_TILE "a b c" --layouts nhwc,nlc,ndhwc
set -uo pipefail
cd "$(dirname "$0")/.."
var=$1 values=$2
shift 2
OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
for v in $values; do
  log="$OUT_DIR/tune_${var}_${v}.log"
  echo "=== $var=$v $*" | tee "$log"
  env "$var=$v" timeout 200 python3 bench/gpu_bench.py --iters 30 --out "${TUNE_JSON_DIR:-/tmp}/tune_${var}_${v}.json" "$@" 2>&1 |
    grep -v "^wrote" | tee -a "$log"
done
