"""Timing shared by the GPU benchmarks: device time by CUDA events and host time per call.

Device time: a call's CUDA-event time on an idle GPU would include the host's work between the
first event and the call's last launch (dispatch, checks, plan lookup), which for a small call
can exceed the kernels themselves. A sleep kernel queued ahead of each timed call keeps the GPU
busy while the host enqueues, so the events time the call's kernels back to back, as in a
training step where the host runs ahead. The host's own time per call is measured separately
(`host_us`) and reported beside it.
"""

import statistics
import time

import torch

_cycles_per_ms = None


def _sleep_cycles_per_ms():
    global _cycles_per_ms
    if _cycles_per_ms is None:
        torch.cuda._sleep(1000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(20_000_000)
        b.record()
        b.synchronize()
        _cycles_per_ms = 20_000_000 / a.elapsed_time(b)
    return _cycles_per_ms


def host_us(fn, reps=15):
    """Median host time of one call (enqueue only), with the GPU kept busy so nothing waits."""
    cpm = _sleep_cycles_per_ms()
    times = []
    for _ in range(reps):
        torch.cuda._sleep(int(5 * cpm))  # 5 ms of GPU work ahead of the call
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def _timer(fn, warmup):
    """Warms fn up and returns a function timing one call (device ms), the GPU kept busy ahead."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    # GPU work queued ahead of each timed call: twice the call's host time plus 50 us.
    ahead = int((2 * host_us(fn, reps=5) * 1e-3 + 0.05) * _sleep_cycles_per_ms())

    def once():
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(ahead)
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b)

    return once


def time_ms(fn, iters, warmup=5):
    """Median CUDA-event device time; fewer repetitions for slow calls (about 0.3 s per call site)."""
    once = _timer(fn, warmup)
    n = max(5, min(iters, int(300 / max(once(), 1e-3))))
    return statistics.median(once() for _ in range(n))


def time_pair_ms(fa, fb, iters, warmup=5):
    """Medians of fa's and fb's device times, the two calls alternating (a b b a ...), so that
    clock and thermal drift over the run falls on both sides alike: two libraries running the
    same kernels then measure within a percent, where back-to-back blocks of runs differed by up
    to 3% (dense rows on cuDNN, session 5)."""
    once_a, once_b = _timer(fa, warmup), _timer(fb, warmup)
    n = max(5, min(iters, int(300 / max(once_a() + once_b(), 1e-3))))
    ta, tb = [], []
    for i in range(n):
        if i % 2:
            tb.append(once_b()), ta.append(once_a())
        else:
            ta.append(once_a()), tb.append(once_b())
    return statistics.median(ta), statistics.median(tb)
