# Short 1-D rows under compute-sanitizer (session 10, branch short1d; its device logs call this
# script san_short1d.py): row_warp (forward / data-grad / weight-grad: 514-wide rows with a tail,
# a 32-output tail, several chunks, misaligned rows and filter) and cl_row1d ((N, L, C), the
# layer's own filter), fp32 / fp16 / bf16. Session 11: 1040 channels (one weight-grad chunk per
# channel) and 256 channels of 31 taps; the 16-bit (N, L, C) rows of 2-4 taps take cl_wgrad.cu's
# short tile. Session 12: cl_row1d's flat grid; fp32 (N, L, C) 31 taps on cl_wgrad.cu's one-channel
# tile (run_k31), 5 channels too. Run: compute-sanitizer --tool memcheck python3 <this>
import torch
import convx  # noqa: F401

ops = torch.ops.convx
DEV = "cuda"
g = torch.Generator().manual_seed(3)


def held(t, layout, off):
    if layout == "nlc":
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    if off:
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=t.dtype)[1:]
        return flat.view(t.shape).copy_(t)
    return t.contiguous()


n = 0
for layout, off in (("ncl", False), ("ncl", True), ("nlc", False)):
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for N, C, L, k in ((2, 24, 512, 3), (3, 16, 535, 4), (16, 8, 600, 3), (2, 16, 77, 2), (1, 8, 300, 15), (2, 1040, 515, 3), (2, 256, 300, 31), (1, 5, 300, 31)):
            x = held(torch.randn(N, C, L, generator=g).to(DEV, dt), layout, off)
            w = held(torch.randn(C, 1, k, generator=g).to(DEV, dt), "ncl", off)
            b = torch.randn(C, generator=g).to(DEV, dt)
            y = ops.depthwise_conv1d(x, w, b, [1], [k - 1], [1])
            gy = held(torch.randn(y.shape, generator=g).to(DEV, dt), layout, off)
            gx = ops.conv1d_input_grad(list(x.shape), w, gy, [1], [k - 1], [1], C)
            gw = ops.conv1d_weight_grad(x, list(w.shape), gy, [1], [k - 1], [1], C)
            n += 3
torch.cuda.synchronize()
print(f"san_short1d: {n} calls ok")
