#!/usr/bin/env bash
# On the two-GPU device machine (nvidia-h200-x2): builds convx, runs the device/stream placement
# tests and the DDP example with NCCL on both GPUs. Logs into ${OUT:-bench/results}/multi_gpu.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
log=$OUT_DIR/multi_gpu.log
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
status=0
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "GPUs", torch.cuda.device_count())'; } 2>&1 | tee "$log"
. scripts/gpu_build.sh >"$OUT_DIR/build_multi.log" 2>&1 || { echo "build failed" | tee -a "$log"; exit 1; }
echo "=== pytest: placement on devices and streams, DDP" | tee -a "$log"
timeout 300 python3 -m pytest -q -rs python_tests/test_cuda_devices.py python_tests/test_ddp.py \
  "python_tests/test_cuda.py::test_inputs_on_non_current_device" 2>&1 | tee -a "$log" || status=1
echo "=== torchrun --nproc_per_node 2 examples/ddp_train.py" | tee -a "$log"
timeout 200 torchrun --nproc_per_node 2 examples/ddp_train.py --steps 20 2>&1 | tee -a "$log" || status=1
exit $status
