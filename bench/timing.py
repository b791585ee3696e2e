"""CUDA-event timing shared by the GPU benchmarks: the median of repeated runs after warm-up."""

import statistics

import torch


def time_ms(fn, iters, warmup=5):
    """Median of CUDA-event times; fewer repetitions for slow calls (about 0.3 s per call site)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    n = max(5, min(iters, int(300 / max(a.elapsed_time(b), 1e-3))))
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)
