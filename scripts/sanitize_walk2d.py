"""The column-walking 7 x 7 and 5 x 5 kernels (walk2d.cuh) on a few small problems and nothing else, for
compute-sanitizer (memcheck; racecheck of the weight-grad's shared-memory sums): forward,
input-grad and weight-grad in NCHW and NHWC, fp32 and bf16; with dispatch's routing they take the
fp32 weight-grads (one and several chunks), the bf16 NCHW weight-grad of 14-wide rows and the
NHWC forward / input-grad of outputs 14-27 wide (a partial 32-channel group)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding): ConvNeXt 'same' (several chunks), padding 6, a partial NHWC group of 32
CASES = {7: [(4, 8, (56, 56), (3, 3)), (1, 40, (9, 11), (6, 6)), (2, 33, (14, 14), (3, 3))],
         # 5 x 5 (fp32: the weight-grads of both layouts): EfficientNet's 28 x 28 plane, padding 4
         5: [(4, 40, (28, 28), (2, 2)), (1, 40, (9, 11), (4, 4)), (2, 33, (14, 14), (2, 2))]}
for dtype, K in ((torch.float32, 7), (torch.bfloat16, 7), (torch.float32, 5)):
    for layout in ("nchw", "nhwc"):
        for N, C, size, p in CASES[K]:
            x = torch.randn(N, C, *size, device="cuda", dtype=dtype)
            w = torch.randn(C, 1, K, K, device="cuda", dtype=dtype)
            b = torch.randn(C, device="cuda", dtype=dtype)
            gy = torch.randn([N, C] + [s + 2 * q - K + 1 for s, q in zip(size, p)], device="cuda", dtype=dtype)
            if layout == "nhwc":
                x = x.contiguous(memory_format=torch.channels_last)
                gy = gy.contiguous(memory_format=torch.channels_last)
            ops.depthwise_conv2d(x, w, b, [1, 1], list(p), [1, 1])
            ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], list(p), [1, 1], C)
            ops.conv2d_weight_grad(x, [C, 1, K, K], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_walk2d: every call returned")
