"""Device and stream placement of the CUDA kernels: the work goes to the input's device and the
current stream of that device, as aten's does (issue: convx under DistributedDataParallel).

The stream tests can fail: the side stream first sleeps, then changes the input in place; a
kernel launched on any other stream would read the input before the change.
"""

import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import helpers  # noqa: E402
from helpers import ALL_OPS, cases, grads, random_cotangent  # noqa: E402

TWO_GPUS = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
SLEEP_CYCLES = 50_000_000  # ~25 ms: far longer than the launches that follow


def ids(ops):
    return [helpers.op_name(f, r) for f, r in ops]


def moved(case, device):
    return case.with_tensors(case.map_tensors(lambda t: t.to(device)))


def first_tensor(case):
    name = "input" if case.tensors.get("input") is not None else "grad_output"
    return name, case.tensors[name]


@TWO_GPUS
@pytest.mark.parametrize("family,rank", ALL_OPS, ids=ids(ALL_OPS))
def test_forward_and_backward_on_non_current_device(family, rank):
    dev1 = torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    for case in cases(family, rank, 3, "devices-dev1"):
        c = moved(case, dev1)
        leaves = {n: c.tensors[n].detach().requires_grad_() for n in c.differentiable()}
        c = c.with_tensors({**c.tensors, **leaves})
        out = c.run_convx()
        assert out.device == dev1
        ref = case.run_ref()
        torch.testing.assert_close(out.cpu(), ref, rtol=1e-9, atol=1e-9)
        cot = random_cotangent(ref, helpers.generator("devices-cot", family, rank))
        got = grads(out, list(leaves.values()), cot.to(dev1))
        ref_leaves = {n: case.tensors[n].detach().requires_grad_() for n in leaves}
        want = grads(case.run_ref(ref_leaves), list(ref_leaves.values()), cot)
        for n, g, w in zip(leaves, got, want):
            if w is None:
                assert g is None, n
                continue
            assert g.device == dev1, n
            torch.testing.assert_close(g.cpu(), w, rtol=1e-8, atol=1e-8, msg=n)
    assert torch.cuda.current_device() == 0


@TWO_GPUS
@pytest.mark.parametrize("family", helpers.FAMILIES)
def test_set_device_does_not_move_the_work(family):
    """With device 1 current, inputs on device 0 are computed on device 0."""
    dev0 = torch.device("cuda", 0)
    prev = torch.cuda.current_device()
    torch.cuda.set_device(1)
    try:
        for case in cases(family, 2, 3, "devices-setdev"):
            out = moved(case, dev0).run_convx()
            assert out.device == dev0
            torch.testing.assert_close(out.cpu(), case.run_ref(), rtol=1e-9, atol=1e-9)
    finally:
        torch.cuda.set_device(prev)


def check_on_side_stream(case, device):
    """Runs the op on a fresh side stream of `device` right after that stream changed the input."""
    name, x = first_tensor(case)
    c = moved(case, device)
    s = torch.cuda.Stream(device)
    torch.cuda.synchronize(device)
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        c.tensors[name].mul_(2)
        out = c.run_convx()
    s.synchronize()
    ref = case.run_ref({name: x * 2})
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("family,rank", ALL_OPS, ids=ids(ALL_OPS))
def test_kernels_run_on_the_current_stream(family, rank):
    for case in cases(family, rank, 2, "devices-stream"):
        if first_tensor(case)[1].numel() == 0:
            continue
        check_on_side_stream(case, torch.device("cuda", 0))


@TWO_GPUS
@pytest.mark.parametrize("family", helpers.FAMILIES)
def test_current_stream_of_a_non_current_device(family):
    for case in cases(family, 2, 2, "devices-stream1"):
        if first_tensor(case)[1].numel() == 0:
            continue
        check_on_side_stream(case, torch.device("cuda", 1))
