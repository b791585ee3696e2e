"""Invalid arguments raise RuntimeError naming the argument, for every rank, on CPU and on the
meta device (whose kernels must reject exactly what the real ones reject)."""

import pytest
import torch

import convx
from helpers import convx_op

D = torch.float64


def _base(rank):
    """A valid call of every family: input [2, 4, 6...], weight groups=2."""
    sp = [6] * rank
    k = [3] * rank
    return dict(
        x=torch.randn([2, 4] + sp, dtype=D),
        w=torch.randn([6, 2] + k, dtype=D),       # conv: [C_out, C_in/g, k]
        wt=torch.randn([4, 3] + k, dtype=D),      # conv_transpose: [C_in, C_out/g, k]
        wd=torch.randn([8, 1] + k, dtype=D),      # depthwise: [C*m, 1, k]
        b=torch.randn(6, dtype=D),
        bd=torch.randn(8, dtype=D),
        gy=torch.randn([2, 6] + [4] * rank, dtype=D),
        one=[1] * rank, zero=[0] * rank, r=rank, device="cpu",
    )


def conv(a, x=None, w=None, b=..., stride=None, padding=None, dilation=None, groups=2):
    op = convx_op("conv", a["r"])
    return op(a["x"] if x is None else x, a["w"] if w is None else w, a["b"] if b is ... else b,
              a["one"] if stride is None else stride, a["zero"] if padding is None else padding,
              a["one"] if dilation is None else dilation, groups)


def conv_t(a, x=None, w=None, b=..., stride=None, padding=None, output_padding=None, groups=2,
           dilation=None):
    op = convx_op("conv_transpose", a["r"])
    return op(a["x"] if x is None else x, a["wt"] if w is None else w,
              a["b"] if b is ... else b, a["one"] if stride is None else stride,
              a["zero"] if padding is None else padding,
              a["zero"] if output_padding is None else output_padding, groups,
              a["one"] if dilation is None else dilation)


def dw(a, x=None, w=None, b=..., stride=None, padding=None, dilation=None):
    op = convx_op("depthwise_conv", a["r"])
    return op(a["x"] if x is None else x, a["wd"] if w is None else w,
              a["bd"] if b is ... else b, a["one"] if stride is None else stride,
              a["zero"] if padding is None else padding, a["one"] if dilation is None else dilation)


def ig(a, size=None, w=None, gy=None, stride=None, padding=None, dilation=None, groups=2):
    op = convx_op("conv_input_grad", a["r"])
    return op(list(a["x"].shape) if size is None else size, a["w"] if w is None else w,
              a["gy"] if gy is None else gy, a["one"] if stride is None else stride,
              a["zero"] if padding is None else padding, a["one"] if dilation is None else dilation,
              groups)


def wg(a, x=None, size=None, gy=None, stride=None, padding=None, dilation=None, groups=2):
    op = convx_op("conv_weight_grad", a["r"])
    return op(a["x"] if x is None else x, list(a["w"].shape) if size is None else size,
              a["gy"] if gy is None else gy, a["one"] if stride is None else stride,
              a["zero"] if padding is None else padding, a["one"] if dilation is None else dilation,
              groups)


def _int(t):
    return torch.ones(t.shape, dtype=torch.int64, device=t.device)


def _rand(a, shape):
    return torch.randn(list(shape), dtype=D).to(a["device"])


def _grow(shape_list, i, by=1):
    s = list(shape_list)
    s[i] += by
    return s


# name -> (call builder, the word the message must contain)
ERROR_CASES = {
    # ---- convolution ----
    "conv-input-dims": (lambda a: conv(a, x=a["x"][0, 0]), "input"),
    "conv-input-dims-high": (lambda a: conv(a, x=a["x"].unsqueeze(0)), "input"),
    "conv-weight-dims": (lambda a: conv(a, w=a["w"][0]), "weight"),
    "conv-weight-dtype": (lambda a: conv(a, w=a["w"].float()), "weight.*dtype"),
    "conv-bias-dtype": (lambda a: conv(a, b=a["b"].float()), "bias.*dtype"),
    "conv-int-dtype": (lambda a: conv(a, x=_int(a["x"]), w=_int(a["w"]), b=None), "input.*dtype"),
    "conv-stride-zero": (lambda a: conv(a, stride=[0] * a["r"]), "stride"),
    "conv-stride-negative": (lambda a: conv(a, stride=[1] * (a["r"] - 1) + [-1]), "stride"),
    "conv-dilation-zero": (lambda a: conv(a, dilation=[0] + [1] * (a["r"] - 1)), "dilation"),
    "conv-groups-zero": (lambda a: conv(a, groups=0), "groups"),
    "conv-groups-negative": (lambda a: conv(a, groups=-2), "groups"),
    "conv-padding-negative": (lambda a: conv(a, padding=[-1] * a["r"]), "padding"),
    "conv-channels-groups": (lambda a: conv(a, groups=3), "groups"),  # 6 % 3 == 0 but 4 != 2*3
    "conv-out-channels-groups": (lambda a: conv(a, w=a["w"][:5], b=None), "groups"),
    "conv-weight-shape": (lambda a: conv(a, w=_rand(a, _grow(a["w"].shape, 1))),
                          "weight"),
    "conv-bias-shape": (lambda a: conv(a, b=a["b"][:5]), "bias"),
    "conv-bias-dims": (lambda a: conv(a, b=a["b"].view(2, 3)), "bias"),
    "conv-kernel-too-large": (lambda a: conv(a, w=_rand(a, [6, 2] + [7] * a["r"])),
                              "kernel"),
    "conv-dilated-kernel-too-large": (lambda a: conv(a, dilation=[3] * a["r"]), "kernel"),
    "conv-stride-length": (lambda a: conv(a, stride=[1] * (a["r"] + 1)), "stride"),
    "conv-padding-length": (lambda a: conv(a, padding=[0] * (a["r"] + 1)), "padding"),
    "conv-dilation-length": (lambda a: conv(a, dilation=[1] * (a["r"] + 1)), "dilation"),
    "conv-stride-empty": (lambda a: conv(a, stride=[]), "stride"),
    # ---- transposed convolution ----
    "conv_t-input-dims": (lambda a: conv_t(a, x=a["x"][0, 0]), "input"),
    "conv_t-weight-dims": (lambda a: conv_t(a, w=a["wt"][0]), "weight"),
    "conv_t-weight-dtype": (lambda a: conv_t(a, w=a["wt"].float()), "weight.*dtype"),
    "conv_t-bias-dtype": (lambda a: conv_t(a, b=a["b"].float()), "bias.*dtype"),
    "conv_t-int-dtype": (lambda a: conv_t(a, x=_int(a["x"]), w=_int(a["wt"]), b=None), "input.*dtype"),
    "conv_t-stride-zero": (lambda a: conv_t(a, stride=[0] * a["r"]), "stride"),
    "conv_t-dilation-negative": (lambda a: conv_t(a, dilation=[-1] * a["r"]), "dilation"),
    "conv_t-groups-zero": (lambda a: conv_t(a, groups=0), "groups"),
    "conv_t-padding-negative": (lambda a: conv_t(a, padding=[-1] * a["r"]), "padding"),
    "conv_t-channels-groups": (lambda a: conv_t(a, groups=3), "groups"),  # 4 % 3 != 0
    "conv_t-weight-shape": (lambda a: conv_t(a, w=_rand(a, _grow(a["wt"].shape, 0, 2))), "weight"),
    "conv_t-bias-shape": (lambda a: conv_t(a, b=a["b"][:4]), "bias"),
    "conv_t-output-padding-too-large": (
        lambda a: conv_t(a, stride=[2] * a["r"], dilation=[2] * a["r"],
                         output_padding=[2] * a["r"]), "output_padding"),
    "conv_t-output-padding-stride1": (lambda a: conv_t(a, output_padding=[1] * a["r"]),
                                      "output_padding"),
    "conv_t-output-padding-negative": (lambda a: conv_t(a, output_padding=[-1] * a["r"]),
                                       "output_padding"),
    "conv_t-output-padding-length": (lambda a: conv_t(a, output_padding=[0] * (a["r"] + 1)),
                                     "output_padding"),
    "conv_t-stride-length": (lambda a: conv_t(a, stride=[1] * (a["r"] + 1)), "stride"),
    "conv_t-dilation-length": (lambda a: conv_t(a, dilation=[1] * (a["r"] + 1)), "dilation"),
    # ---- depthwise ----
    "dw-input-dims": (lambda a: dw(a, x=a["x"][0, 0]), "input"),
    "dw-weight-dims": (lambda a: dw(a, w=a["wd"][0]), "weight"),
    "dw-weight-dtype": (lambda a: dw(a, w=a["wd"].float()), "weight.*dtype"),
    "dw-bias-dtype": (lambda a: dw(a, b=a["bd"].float()), "bias.*dtype"),
    "dw-int-dtype": (lambda a: dw(a, x=_int(a["x"]), w=_int(a["wd"]), b=None), "input.*dtype"),
    "dw-stride-zero": (lambda a: dw(a, stride=[0] * a["r"]), "stride"),
    "dw-dilation-zero": (lambda a: dw(a, dilation=[0] * a["r"]), "dilation"),
    "dw-padding-negative": (lambda a: dw(a, padding=[-1] * a["r"]), "padding"),
    "dw-weight-dim1": (lambda a: dw(a, w=_rand(a, [8, 2] + [3] * a["r"])), "weight"),
    "dw-weight-multiple": (lambda a: dw(a, w=a["wd"][:6], b=None), "weight"),
    "dw-bias-shape": (lambda a: dw(a, b=a["bd"][:4]), "bias"),
    "dw-kernel-too-large": (lambda a: dw(a, w=_rand(a, [8, 1] + [9] * a["r"])),
                            "kernel"),
    "dw-stride-length": (lambda a: dw(a, stride=[1] * (a["r"] + 1)), "stride"),
    "dw-padding-length": (lambda a: dw(a, padding=[0] * (a["r"] + 1)), "padding"),
    # ---- input gradient ----
    "ig-grad_output-dims": (lambda a: ig(a, gy=a["gy"][0, 0]), "grad_output"),
    "ig-weight-dims": (lambda a: ig(a, w=a["w"][0]), "weight"),
    "ig-dtype": (lambda a: ig(a, w=a["w"].float()), "weight.*dtype"),
    "ig-int-dtype": (lambda a: ig(a, w=_int(a["w"]), gy=_int(a["gy"])), "grad_output.*dtype"),
    "ig-input_size-length": (lambda a: ig(a, size=list(a["x"].shape)[1:-1] + [6, 6]),
                             "input_size"),
    "ig-input_size-channels": (lambda a: ig(a, size=_grow(a["x"].shape, 1)), "input_size"),
    "ig-grad_output-spatial": (lambda a: ig(a, gy=_rand(a, _grow(a["gy"].shape, -1))), "grad_output"),
    "ig-grad_output-channels": (lambda a: ig(a, gy=_rand(a, _grow(a["gy"].shape, 1))), "grad_output"),
    "ig-stride-zero": (lambda a: ig(a, stride=[0] * a["r"]), "stride"),
    "ig-groups-zero": (lambda a: ig(a, groups=0), "groups"),
    "ig-padding-negative": (lambda a: ig(a, padding=[-1] * a["r"]), "padding"),
    "ig-dilation-zero": (lambda a: ig(a, dilation=[0] * a["r"]), "dilation"),
    "ig-stride-length": (lambda a: ig(a, stride=[1] * (a["r"] + 1)), "stride"),
    "ig-kernel-too-large": (lambda a: ig(a, size=[2, 4] + [2] * a["r"]), "kernel"),
    # ---- weight gradient ----
    "wg-input-dims": (lambda a: wg(a, x=a["x"][0, 0]), "input"),
    "wg-dtype": (lambda a: wg(a, gy=a["gy"].float()), "grad_output.*dtype"),
    "wg-int-dtype": (lambda a: wg(a, x=_int(a["x"]), gy=_int(a["gy"])), "input.*dtype"),
    "wg-weight_size-length": (lambda a: wg(a, size=list(a["w"].shape)[:-1]), "weight_size"),
    "wg-weight_size-channels": (lambda a: wg(a, size=_grow(a["w"].shape, 1)), "input"),
    "wg-grad_output-channels": (lambda a: wg(a, gy=_rand(a, _grow(a["gy"].shape, 1))), "grad_output"),
    "wg-grad_output-spatial": (lambda a: wg(a, gy=_rand(a, _grow(a["gy"].shape, -1, 2))), "grad_output"),
    "wg-grad_output-dims": (lambda a: wg(a, gy=a["gy"][0]), "grad_output"),
    "wg-stride-negative": (lambda a: wg(a, stride=[-1] * a["r"]), "stride"),
    "wg-groups-zero": (lambda a: wg(a, groups=0), "groups"),
    "wg-padding-negative": (lambda a: wg(a, padding=[-2] * a["r"]), "padding"),
    "wg-dilation-length": (lambda a: wg(a, dilation=[1] * (a["r"] + 1)), "dilation"),
}


def _to(a, device):
    out = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in a.items()}
    out["device"] = device
    return out


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_valid_base_calls(rank, device):
    """The unmodified calls succeed, so each error below is due to its one change."""
    a = _to(_base(rank), device)
    assert conv(a).shape[1] == 6
    assert conv_t(a).shape[1] == 6
    assert dw(a).shape[1] == 8
    assert ig(a).shape == a["x"].shape
    assert wg(a).shape == a["w"].shape


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_names_the_argument(case, rank, device):
    build, word = ERROR_CASES[case]
    a = _to(_base(rank), device)
    with pytest.raises(RuntimeError, match=word) as info:
        build(a)
    assert "convx" in str(info.value), str(info.value)  # from convx, not from somewhere else


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_functional_errors(rank):
    """The functional wrappers pass wrong-length lists on, and reject bad padding strings."""
    fn = {1: convx.functional.conv1d, 2: convx.functional.conv2d, 3: convx.functional.conv3d}[rank]
    dfn = {1: convx.functional.depthwise_conv1d, 2: convx.functional.depthwise_conv2d,
           3: convx.functional.depthwise_conv3d}[rank]
    tfn = {1: convx.functional.conv_transpose1d, 2: convx.functional.conv_transpose2d,
           3: convx.functional.conv_transpose3d}[rank]
    a = _base(rank)
    with pytest.raises(RuntimeError, match="stride"):
        fn(a["x"], a["w"], None, stride=[1] * (rank + 1), groups=2)
    with pytest.raises(RuntimeError, match="dilation"):
        fn(a["x"], a["w"], None, dilation=(1,) * (rank + 1), groups=2)
    with pytest.raises(RuntimeError, match="padding"):
        fn(a["x"], a["w"], None, padding=-1, groups=2)
    with pytest.raises(RuntimeError, match="output_padding"):
        tfn(a["x"], a["wt"], None, stride=2, output_padding=2, groups=2)
    with pytest.raises(RuntimeError, match="same.*strided"):
        fn(a["x"], a["w"], None, stride=2, padding="same", groups=2)
    with pytest.raises(RuntimeError, match="same.*strided"):
        dfn(a["x"], a["wd"], None, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="[Ii]nvalid padding string"):
        fn(a["x"], a["w"], None, padding="full", groups=2)
    with pytest.raises(RuntimeError, match="[Ii]nvalid padding string"):
        tfn(a["x"], a["wt"], None, padding="same", groups=2)
    if rank > 1:
        with pytest.raises(RuntimeError, match="[Ii]nvalid padding string"):
            fn(a["x"], a["w"], None, padding="causal", groups=2)
        with pytest.raises(RuntimeError, match="[Ii]nvalid padding string"):
            dfn(a["x"], a["wd"], None, padding="causal")
