"""ONNX export of convx models (convx.onnx): standard operators only, run by onnxruntime."""

import copy
import os
import subprocess
import sys

import pytest
import torch

import convx
import convx.nn as cnn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import convx.onnx  # noqa: E402  (after the skips: it imports onnxscript)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples", "aoti"))
from export_model import calibrate_batchnorm  # noqa: E402


def _export(model, x, dynamic=True):
    shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
    program = torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=shapes, verbose=False,
                                custom_translation_table=convx.onnx.translation_table())
    return program.model_proto


def _check_standard(proto, wanted):
    onnx.checker.check_model(proto, full_check=True)
    domains = {n.domain for n in proto.graph.node} | {o.domain for o in proto.opset_import}
    assert domains <= {"", "ai.onnx"}, domains           # no custom (convx) domain
    assert not proto.functions, [f.name for f in proto.functions]
    ops = {n.op_type for n in proto.graph.node}
    assert wanted <= ops, ops
    return ops


def _run(proto, x):
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])


def _compare(proto, reference, shapes):
    for shape in shapes:
        x = torch.randn(shape)
        with torch.no_grad():
            want = reference(x)
        torch.testing.assert_close(_run(proto, x), want, rtol=1e-4, atol=1e-5)


def _decoder():
    """Transposed convolutions with stride, groups, output_padding, dilation, no bias, a
    depthwise transposed one, and dilated depthwise convolutions between them."""
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1, groups=2),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, padding=2, dilation=2, groups=8),       # depthwise, m = 2
        torch.nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, output_padding=1, groups=16,
                                 bias=False),                                # depthwise transposed
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(16, 3, 3, stride=(2, 3), padding=(1, 2), output_padding=(1, 2),
                                 dilation=(2, 1)),
    ).eval()


def test_converted_decoder_exports_to_standard_onnx():
    torch.manual_seed(0)
    reference = _decoder()
    model = convx.convert(copy.deepcopy(reference))
    assert {cnn.ConvTranspose2d, cnn.DepthwiseConv2d} <= {type(m) for m in model.modules()}
    proto = _export(model, torch.randn(2, 8, 7, 5))
    ops = _check_standard(proto, {"Conv", "ConvTranspose"})
    assert ops <= {"Conv", "ConvTranspose", "Relu"}, ops
    groups = sorted(a.i for n in proto.graph.node for a in n.attribute if a.name == "group")
    assert groups == [1, 2, 8, 16], groups  # depthwise as group = channels
    _compare(proto, reference, [(1, 8, 7, 5), (5, 8, 7, 5)])


def test_converted_torchvision_model_exports():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    reference = calibrate_batchnorm(torchvision.models.mobilenet_v3_small(weights=None),
                                    (3, 64, 64))
    model = convx.convert(copy.deepcopy(reference))
    proto = _export(model, torch.randn(2, 3, 64, 64))
    _check_standard(proto, {"Conv"})
    _compare(proto, reference, [(1, 3, 64, 64), (3, 3, 64, 64)])


class _Ranks(torch.nn.Module):
    """Every forward operator at ranks 1 and 3, and an unbatched call."""

    def __init__(self):
        super().__init__()
        self.c1 = cnn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2)
        self.d1 = cnn.DepthwiseConv1d(6, 6, 5, padding=4, dilation=2)
        self.t1 = cnn.ConvTranspose1d(6, 4, 4, stride=3, padding=1, output_padding=2)
        self.c3 = cnn.Conv3d(4, 4, 3, padding=1)
        self.d3 = cnn.DepthwiseConv3d(4, 8, 3, padding=1)
        self.t3 = cnn.ConvTranspose3d(8, 2, 2, stride=2)
        self.unbatched_w = torch.nn.Parameter(torch.randn(4, 4, 3) * 0.3)

    def forward(self, x):                       # x: [N, 4, L]
        y = self.t1(self.d1(self.c1(x)))        # [N, 4, L']
        v = y.unsqueeze(2).unsqueeze(2)         # [N, 4, 1, 1, L']
        z = self.t3(self.d3(self.c3(v)))        # [N, 2, 2, 2, 2L']
        # an unbatched call on one sample (no batch dim in the operator's input)
        u = torch.ops.convx.conv1d(y[0], self.unbatched_w, None, [1], [1], [1], 1)
        return z.flatten(1).sum(1, keepdim=True) + u.sum()


def test_ranks_1_and_3_and_unbatched():
    torch.manual_seed(0)
    model = _Ranks().eval()
    proto = _export(model, torch.randn(2, 4, 20))
    _check_standard(proto, {"Conv", "ConvTranspose", "Unsqueeze", "Squeeze"})
    _compare(proto, model, [(1, 4, 20), (4, 4, 20)])


class _InputGrad(torch.nn.Module):
    """conv2d_input_grad as a decoder layer: input_size picks output_padding."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 3, 3, 3) * 0.3)

    def forward(self, g):                       # g: [N, 4, 5, 5] -> [N, 3, 10, 11]
        return torch.ops.convx.conv2d_input_grad([g.shape[0], 3, 10, 11], self.w, g, [2, 2],
                                                 [1, 0], [1, 1], 1)


def test_input_grad_maps_to_conv_transpose():
    torch.manual_seed(0)
    model = _InputGrad().eval()
    proto = _export(model, torch.randn(2, 4, 5, 5))
    _check_standard(proto, {"ConvTranspose"})
    _compare(proto, model, [(1, 4, 5, 5), (3, 4, 5, 5)])


class _TransposeOutputPadding(torch.nn.Module):
    """output_padding >= stride (allowed by PyTorch and convx while < dilation)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = padding
        self.w = torch.nn.Parameter(torch.randn(4, 3, 3, 3) * 0.3)

    def forward(self, x):
        p = self.padding
        return torch.ops.convx.conv_transpose2d(x, self.w, None, [1, 1], [p, p], [1, 1], 1,
                                                [2, 2])


def test_output_padding_not_below_stride_folds_into_pads():
    torch.manual_seed(0)
    model = _TransposeOutputPadding(padding=1).eval()
    proto = _export(model, torch.randn(2, 4, 6, 6))
    _check_standard(proto, {"ConvTranspose"})
    _compare(proto, model, [(1, 4, 6, 6), (3, 4, 6, 6)])


def _cause_chain(error):
    while error is not None:
        yield error
        error = error.__cause__


def test_output_padding_onnx_cannot_express_is_a_convx_error():
    model = _TransposeOutputPadding(padding=0).eval()
    with pytest.raises(Exception) as info:
        _export(model, torch.randn(2, 4, 6, 6))
    ours = [e for e in _cause_chain(info.value) if isinstance(e, convx.onnx.OnnxExportError)]
    assert ours, repr(info.value)
    assert "output_padding[0] = 1 is not smaller than stride[0] = 1" in str(ours[0])
    assert "pad the output explicitly" in str(ours[0])
    assert "OnnxExportError" in str(info.value)  # the exporter's summary names it too


class _WeightGrad(torch.nn.Module):
    def forward(self, x, g):
        return torch.ops.convx.conv2d_weight_grad(x, [4, 3, 3, 3], g, [1, 1], [1, 1], [1, 1], 1)


def test_weight_grad_is_training_only():
    with pytest.raises(Exception) as info:
        torch.onnx.export(_WeightGrad().eval(), (torch.randn(2, 3, 6, 6), torch.randn(2, 4, 6, 6)),
                          dynamo=True, verbose=False,
                          custom_translation_table=convx.onnx.translation_table())
    ours = [e for e in _cause_chain(info.value) if isinstance(e, convx.onnx.OnnxExportError)]
    assert ours and "training-only" in str(ours[0]), repr(info.value)


def test_translation_table_covers_every_operator():
    table = convx.onnx.translation_table()
    names = {op._opname for op in table}
    assert len(names) == 15
    assert all(op.namespace == "convx" and op._overloadname == "default" for op in table)


def test_import_convx_does_not_import_onnx():
    code = ("import sys, convx, convx.nn, convx.functional, convx.export; "
            "bad = [m for m in ('onnx', 'onnxscript', 'onnxruntime') if m in sys.modules]; "
            "assert not bad, bad")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(convx.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
