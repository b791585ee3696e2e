"""The tensor-core 7 x 7 / 5 x 5 NCHW kernel (tc7_nc.cuh) on a few small problems and nothing else, for
compute-sanitizer (memcheck; racecheck of its cp.async plane ring and per-warp output tiles):
forward and input-grad, fp16 / bf16 / fp32 (TF32), 56 x 56 and 49 x 56 planes (four warps per
plane), 14 x 14 and 9 x 20 (a warp per plane, 4-byte copies, direct stores), 5 x 5 on 28 x 28,
18 x 28 and 17 x 32 (two warps per plane; session 14), block ranges crossing channels."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for N, C, H, W, k in ((3, 5, 56, 56, 7), (2, 3, 49, 56, 7), (3, 3, 14, 14, 7), (1, 5, 9, 20, 7),
                              (3, 5, 28, 28, 5), (1, 3, 18, 28, 5), (2, 3, 17, 32, 5)):
            p = k // 2
            x = torch.randn(N, C, H, W, device="cuda", dtype=dtype)
            w = torch.randn(C, 1, k, k, device="cuda", dtype=dtype)
            b = torch.randn(C, device="cuda", dtype=dtype)
            gy = torch.randn_like(x)
            y = ops.depthwise_conv2d(x, w, b, [1, 1], [p, p], [1, 1])
            gx = ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [p, p], [1, 1], C)
            ref = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), 1, p, 1, C)
            e = float((y.double() - ref).abs().max() / ref.abs().max())
            assert e < 2e-2, (dtype, N, C, H, W, e)
torch.cuda.synchronize()
print("sanitize_tc7: every call returned")
