"""examples/feedback_alignment.py: every gradient against its closed form (computed with aten)."""
import importlib.util
import pathlib

import torch
import torch.nn.functional as F

_path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "feedback_alignment.py"
_spec = importlib.util.spec_from_file_location("feedback_alignment", _path)
fa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fa)


def _inputs(seed):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)
    return r(2, 3, 9, 9), r(5, 3, 3, 3), r(5), r(5, 3, 3, 3), r(5, 3, 3, 3)


def _grads(x, w_f, b_f, w_b, feedback, gr):
    leaves = [t.clone().requires_grad_() for t in (x, w_f, b_f, w_b)]
    out = fa.autoencode(*leaves, feedback, stride=2, padding=1, output_padding=0)
    return out, torch.autograd.grad(out, leaves, gr)


def test_feedback_alignment_gradients_match_closed_form():
    for seed in range(3):
        x, w_f, b_f, w_b, feedback = _inputs(seed)
        y = F.conv2d(x, w_f, b_f, 2, 1)
        r = F.conv_transpose2d(y, w_b, None, 2, 1)
        gr = torch.randn_like(r)
        out, (gx, gwf, gbf, gwb) = _grads(x, w_f, b_f, w_b, feedback, gr)
        torch.testing.assert_close(out, r)
        grad_y = F.conv2d(gr, feedback, None, 2, 1)  # the feedback path
        torch.testing.assert_close(gwb, torch.nn.grad.conv2d_weight(gr, w_b.shape, y, 2, 1))
        torch.testing.assert_close(gwf, torch.nn.grad.conv2d_weight(x, w_f.shape, grad_y, 2, 1))
        torch.testing.assert_close(gbf, grad_y.sum((0, 2, 3)))
        torch.testing.assert_close(gx, torch.nn.grad.conv2d_input(x.shape, w_f, grad_y, 2, 1))
        # the feedback weight really is used: it differs from backprop's gradient
        assert not torch.allclose(gwf, torch.nn.grad.conv2d_weight(
            x, w_f.shape, F.conv2d(gr, w_b, None, 2, 1), 2, 1))


def test_feedback_equal_to_decoder_weight_is_backprop():
    x, w_f, b_f, w_b, _ = _inputs(7)
    leaves = [t.clone().requires_grad_() for t in (x, w_f, b_f, w_b)]
    ref = F.conv_transpose2d(F.conv2d(leaves[0], leaves[1], leaves[2], 2, 1), leaves[3], None, 2, 1)
    gr = torch.randn_like(ref)
    expected = torch.autograd.grad(ref, leaves, gr)
    _, got = _grads(x, w_f, b_f, w_b, w_b, gr)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e)
