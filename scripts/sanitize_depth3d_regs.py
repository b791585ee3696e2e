# depth3d_nc_units / depth3d_cl_smem / cl_wgrad_d3s / cl_wgrad_d3r (16-bit 5x3x3; sessions 11-12) under
# compute-sanitizer (memcheck, racecheck): forward, stride-1 data-grad and weight-grad, NCDHW and
# NDHWC, fp16 / bf16, one and
# three strips per row (edge columns in and out of the tensor), padding 0 / 2 / 3 in depth and
# height, a depth giving several segments, C 40 (NDHWC warps across strips), the filter read
# unaligned (one element past a 16-byte boundary). Run: compute-sanitizer --tool memcheck python3 <this>
import torch
import convx  # noqa: F401

ops = torch.ops.convx
DEV = "cuda"
g = torch.Generator().manual_seed(7)
one = [1, 1, 1]
n = 0
for cl in (False, True):
    for dt in (torch.float16, torch.bfloat16):
        for N, C, sp, pad in (((2, 8, (7, 9, 24), (2, 1, 1)), (1, 40, (5, 6, 8), (0, 0, 1)), (1, 24, (6, 11, 24), (2, 1, 1)),
                               (1, 4, (45, 3, 16), (3, 2, 1)))):
            x = torch.randn(N, C, *sp, generator=g).to(DEV, dt)
            if cl:
                x = x.contiguous(memory_format=torch.channels_last_3d)
            wf = torch.empty(C * 45 + 1, device=DEV, dtype=dt)[1:]
            w = wf.view(C, 1, 5, 3, 3).copy_(torch.randn(C, 1, 5, 3, 3, generator=g))
            b = torch.randn(C, generator=g).to(DEV, dt)
            y = ops.depthwise_conv3d(x, w, b, one, list(pad), one)
            gy = torch.randn(y.shape, generator=g).to(DEV, dt)
            if cl:
                gy = gy.contiguous(memory_format=torch.channels_last_3d)
            gx = ops.conv3d_input_grad(list(x.shape), w, gy, one, list(pad), one, C)
            gw = ops.conv3d_weight_grad(x, list(w.shape), gy, one, list(pad), one, C)
            n += 3
torch.cuda.synchronize()
print(f"sanitize_depth3d_regs: {n} calls ok")
