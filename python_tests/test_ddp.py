"""examples/ddp_train.py under torchrun with two processes: DDP's gradients equal one process's
on the concatenated batch, and the loss goes down (the script asserts both). On CPU with gloo
here; with NCCL on two GPUs where there are two."""

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torchrun(*args, timeout):
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", "29517", os.path.join(ROOT, "examples", "ddp_train.py"), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def test_ddp_two_cpu_processes():
    r = torchrun("--cpu", "--steps", "6", "--per-rank", "4", "--size", "48", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[rank 0] OK: 2 ranks, backend gloo" in r.stdout


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_ddp_two_gpus():
    r = torchrun("--steps", "10", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[rank 0] OK: 2 ranks, backend nccl" in r.stdout
