"""Feedback alignment in a convolutional autoencoder, from convx primitives (forum seed 000).

Encoder: y = conv2d(x, w_f, b_f). Decoder: r = conv_transpose2d(y, w_b). Ordinary backprop would
carry the reconstruction error back to the encoder through w_b^T (that is, conv2d(grad_r, w_b)).
Feedback alignment carries it through a separate, fixed feedback weight B instead. With
convx's differentiable forward / input-grad / weight-grad operators that is a few lines:

    grad_y   = conv2d(grad_r, B)                        # feedback path, not w_b
    grad_w_b = conv2d_weight_grad(grad_r, w_b.shape, y) # the decoder's own gradient
    grad_w_f = conv2d_weight_grad(x, w_f.shape, grad_y)
    grad_b_f = grad_y summed over batch and space
    grad_x   = conv2d_input_grad(x.shape, w_f, grad_y)

Run: .venv/bin/python examples/feedback_alignment.py
"""
import torch

import convx  # noqa: F401  (registers torch.ops.convx)

X = torch.ops.convx


class FeedbackAlignedAutoencoder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w_f, b_f, w_b, feedback, stride, padding, output_padding):
        s, p, op = [stride] * 2, [padding] * 2, [output_padding] * 2
        y = X.conv2d(x, w_f, b_f, s, p, [1, 1], 1)
        r = X.conv_transpose2d(y, w_b, None, s, p, op, 1, [1, 1])
        ctx.save_for_backward(x, w_f, w_b, feedback, y)
        ctx.geometry = (s, p)
        return r

    @staticmethod
    def backward(ctx, grad_r):
        x, w_f, w_b, feedback, y = ctx.saved_tensors
        s, p = ctx.geometry
        one = [1, 1]
        grad_y = X.conv2d(grad_r, feedback, None, s, p, one, 1)
        grad_w_b = X.conv2d_weight_grad(grad_r, list(w_b.shape), y, s, p, one, 1)
        grad_w_f = X.conv2d_weight_grad(x, list(w_f.shape), grad_y, s, p, one, 1)
        grad_b_f = grad_y.sum((0, 2, 3))
        grad_x = X.conv2d_input_grad(list(x.shape), w_f, grad_y, s, p, one, 1)
        return grad_x, grad_w_f, grad_b_f, grad_w_b, None, None, None, None


def autoencode(x, w_f, b_f, w_b, feedback, stride=2, padding=1, output_padding=1):
    return FeedbackAlignedAutoencoder.apply(x, w_f, b_f, w_b, feedback, stride, padding, output_padding)


def main():
    torch.manual_seed(0)
    x = torch.randn(16, 3, 16, 16)
    w_f = (0.2 * torch.randn(8, 3, 3, 3)).requires_grad_()
    b_f = torch.zeros(8, requires_grad=True)
    w_b = (0.2 * torch.randn(8, 3, 3, 3)).requires_grad_()
    feedback = 0.2 * torch.randn(8, 3, 3, 3)
    opt = torch.optim.SGD([w_f, b_f, w_b], lr=0.05)
    for step in range(60):
        loss = (autoencode(x, w_f, b_f, w_b, feedback) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d}  reconstruction loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
