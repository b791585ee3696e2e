"""Train a convx-converted torchvision mobilenet_v3_small under DistributedDataParallel.

    NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 2 examples/ddp_train.py [--steps 20]

One process per GPU, NCCL. Each rank draws its own slice of a fixed synthetic dataset (a
seeded generator, so any rank can rebuild any slice). The script checks, and fails loudly when
it does not hold:

1. convx operators are in the model (convert swapped the depthwise convolutions) and run on
   each rank's own GPU;
2. after the first step, the gradients DDP leaves on rank 0 equal those of a single process
   that runs the undistributed model on the concatenated batch of all ranks (fp32 tolerance).
   BatchNorm is converted to SyncBatchNorm so that both see the same batch statistics, and
   dropout is off so both see the same function;
3. the loss goes down over the steps.

Without GPUs (or with --cpu) it runs the same checks with the gloo backend on CPU processes,
which is what CI can do: `torchrun --nproc_per_node 2 examples/ddp_train.py --cpu --steps 6`.
"""

import argparse
import copy
import os

import torch
import torch.distributed as dist
import torchvision

import convx

NUM_CLASSES = 10


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torchvision.models.mobilenet_v3_small(num_classes=NUM_CLASSES)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    convx.convert(model)
    n = sum(isinstance(m, convx.nn.DepthwiseConv2d) for m in model.modules())
    assert n > 0, "convx.convert replaced no depthwise convolution"
    return model


def batch(rank: int, step: int, per_rank: int, size: int, device):
    """Rank `rank`'s slice of step `step`: the same tensors whichever process builds them."""
    gen = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(per_rank, 3, size, size, generator=gen)
    y = torch.randint(0, NUM_CLASSES, (per_rank,), generator=gen)
    return x.to(device), y.to(device)


def max_rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--per-rank", type=int, default=16)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--cpu", action="store_true", help="gloo on CPU processes (no GPU needed)")
    args = p.parse_args()

    use_cuda = torch.cuda.is_available() and not args.cpu
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        # The reference comparison is in fp32: no TF32 in aten's dense convolutions or matmuls.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        device = torch.device("cpu")

    base = make_model().to(device)
    reference = copy.deepcopy(base)  # plain BatchNorm, one process, whole batch
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(base) if use_cuda else base
    if not use_cuda:
        # gloo has no SyncBatchNorm: freeze the BN statistics (eval mode for BN only) in both
        # models so the per-rank and whole-batch functions are the same.
        for m in list(model.modules()) + list(reference.modules()):
            if isinstance(m, torch.nn.BatchNorm2d):
                m.eval()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    # Step 0 on a fixed batch, then the gradient check against one process on all of it.
    x, y = batch(rank, 0, args.per_rank, args.size, device)
    loss = loss_fn(ddp(x), y)
    loss.backward()
    if rank == 0:
        parts = [batch(r, 0, args.per_rank, args.size, device) for r in range(world)]
        xs, ys = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        loss_fn(reference(xs), ys).backward()
        worst, worst_name = 0.0, ""
        for (name, p_ddp), p_ref in zip(model.named_parameters(), reference.parameters()):
            d = max_rel_diff(p_ddp.grad, p_ref.grad)
            if d > worst:
                worst, worst_name = d, name
        print(f"[rank 0] step-0 gradients vs one process on the concatenated batch of {world} ranks: "
              f"max relative difference {worst:.2e} ({worst_name})", flush=True)
        assert worst < 2e-3, f"DDP gradients differ from the single-process ones: {worst:.2e} at {worst_name}"
        dw = [m for m in ddp.module.modules() if isinstance(m, convx.nn.DepthwiseConv2d)]
        assert all(m.weight.grad.device == device for m in dw)
    opt.step()
    opt.zero_grad()

    # Keep training on a fixed set of batches (the same few, so the loss must fall).
    losses = []
    for step in range(args.steps):
        x, y = batch(rank, 1 + step % 4, args.per_rank, args.size, device)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        losses.append(avg.item() / world)
        if rank == 0:
            print(f"[rank 0] step {step + 1:3d}  loss {losses[-1]:.4f}", flush=True)
    if rank == 0:
        k = max(1, min(4, len(losses) // 2))
        first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
        print(f"[rank 0] mean loss, first {k} steps {first:.4f} -> last {k} steps {last:.4f}", flush=True)
        assert last < first, "the loss did not go down"
        print(f"[rank 0] OK: {world} ranks, backend {dist.get_backend()}, device {device.type}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
