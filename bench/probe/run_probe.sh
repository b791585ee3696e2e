set -u
. scripts/gpu_build.sh > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
python3 bench/probe/probe_1d.py 2>&1 | tee $OUT/probe.log
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
export PYTHONPATH=$PYTHONPATH:$PWD/bench
for spec in mamba_k4:bf16:ncl:fwd mamba_k4:bf16:nlc:fwd rwkv_k4:fp32:ncl:fwd conformer_512:bf16:ncl:fwd; do
  echo "##### $spec" >> $OUT/ncu.log
  timeout 90 $NCU --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
    python3 bench/profile_cases.py $spec >> $OUT/ncu.log 2>&1
done
grep -c Duration $OUT/ncu.log
