# The channels-last stride-2 data-grad (cl_stride2_dgrad.cuh, session 12, branch clk) under
# compute-sanitizer: the depthwise transposed conv k4 s2 p1 and k3 s2 p1 (output_padding 0 / 1)
# and the matching conv input-grads, fp32 / fp16 / bf16, with and without bias: odd and even
# sizes (strips and bands cut by the plane's end), channel chunks with idle lanes (C 264), one
# q-row. Each result is compared with aten (a coarse check: the sanitizer is the point).
# Run: compute-sanitizer --tool memcheck python3 <this>
import torch
import torch.nn.functional as F

import convx  # noqa: F401

ops = torch.ops.convx
DEV = "cuda"
g = torch.Generator().manual_seed(12)
CASES = [(2, 16, (9, 13), 4, 1, 0), (1, 264, (5, 7), 4, 1, 0), (2, 8, (11, 24), 3, 1, 1), (1, 40, (10, 9), 3, 1, 0),
         (1, 8, (1, 5), 4, 1, 0), (3, 96, (6, 6), 3, 1, 1)]
n = 0
worst = 0.0
for dt in (torch.float32, torch.float16, torch.bfloat16):
    for N, C, size, k, p, op in CASES:
        for bias in (False, True):
            x = torch.randn(N, C, *size, generator=g).to(DEV, dt).contiguous(memory_format=torch.channels_last)
            w = torch.randn(C, 1, k, k, generator=g).to(DEV, dt)
            b = torch.randn(C, generator=g).to(DEV, dt) if bias else None
            y = ops.conv_transpose2d(x, w, b, [2, 2], [p, p], [op, op], C, [1, 1])
            ref = F.conv_transpose2d(x.float(), w.float(), None if b is None else b.float(), 2, p, op, C)
            worst = max(worst, float((y.float() - ref).abs().max() / ref.abs().max()))
            gx = ops.conv2d_input_grad(list(ref.shape), w, x, [2, 2], [p, p], [1, 1], C)
            n += 2
torch.cuda.synchronize()
print(f"sanitize_cl_stride2: {n} calls, worst relative error against aten {worst:.1e}")
