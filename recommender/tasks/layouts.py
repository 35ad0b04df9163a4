"""Blocked activation layouts for convolutions: NCHW16c data, OIHW16i16o weights.

MetaSchedule tunes a convolution in the layout the network has: NCHW, where the output channels
a vector register should hold are the outermost loop of the weight. In NCHW16c the innermost 16
elements of every activation are 16 channels, one AVX-512 register of fp32, as oneDNN and
ONNX Runtime's MLAS lay them out. Relax's ``ConvertLayout`` rewrites ``nn.conv2d`` to a blocked
layout (with ``layout_transform`` around it, and elementwise ops after it kept blocked), but its
legalization refuses blocked layouts (``legalize_ops/nn.py``: "channel chunk cannot be
legalized"), so blocked convolutions are legalized here by TOPI's ``conv2d_NCHWc``, a plain
compute MetaSchedule tunes like any other, and depthwise ones (``OIHW1i16o`` weights, as
MobileNet's) by a compute of our own. Convolutions whose channels do not divide by the block (an
RGB input, MobileNetV2's 24) and other grouped ones stay NCHW.

A corpus tunes in one layout (its ``core.configuration``); ``tasks.extract.prepare`` converts
every network it lowers or builds to it.
"""

from __future__ import annotations

import tvm
from tvm import relax, te, topi

from ..core.configuration import block_of

BLOCK = 16  # fp32 lanes of an AVX-512 register
_CONV2D = "relax.nn.conv2d"


def convert(mod: tvm.IRModule, layout: str) -> tvm.IRModule:
    """``mod`` in ``layout``, as Relax ops (``legalize`` then gives the blocked convolutions
    their computes): ordinary convolutions blocked with ``OIHW{b}i{b}o`` weights, depthwise
    ones with ``OIHW1i{b}o``. As it is for ``native`` and for a network without convolutions
    (a transformer's tasks, and so its logs, are the same in every layout)."""
    block = block_of(layout)
    if block is None or not any(_blocked(call, block) for call in _convolutions(mod)):
        return mod  # nothing would be blocked (ViT's only convolution has an RGB input)
    desired = relax.transform.ConvertLayout({}, lambda call: _desired(call, block))
    return desired(_scalars_as_constants(mod))


def legalize(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """``mod``'s blocked convolutions as TOPI's ``conv2d_NCHWc`` and our depthwise compute
    (Relax's own legalization refuses blocked layouts), and with them every other operator;
    ``mod`` as it is when it has none (a native network is legalized later, by ``lower`` and
    ``compile_relax``)."""
    if not any(len(call.attrs.data_layout) > 4 for call in _convolutions(mod)):
        return mod
    with target:
        return relax.transform.LegalizeOps({_CONV2D: _legalize_conv2d})(mod)


def _convolutions(mod: tvm.IRModule) -> list[relax.Call]:
    found = []

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and str(getattr(expr.op, "name", "")) == _CONV2D:
            found.append(expr)

    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
    return found


def _desired(call: relax.Call, block: int) -> dict[str, list[str]]:
    """The layouts of one call: blocked where its channels divide by ``block`` and it is an
    ordinary or a depthwise convolution, else NCHW (other grouped ones, an RGB input). Every
    convolution gets one: left without, a convolution after a blocked one fails the pass."""
    if str(getattr(call.op, "name", "")) != _CONV2D:
        return {}  # the others follow their inputs' layout
    if not _blocked(call, block):
        return {_CONV2D: ["NCHW", "OIHW"]}
    weight = f"OIHW{block}i{block}o" if int(call.attrs.groups) == 1 else f"OIHW1i{block}o"
    return {_CONV2D: [f"NCHW{block}c", weight]}


def _blocked(call: relax.Call, block: int) -> bool:
    """Whether convolution ``call`` can be blocked: its channels divide by ``block`` and it is
    an ordinary or a depthwise convolution."""
    groups = int(call.attrs.groups)
    channels_in, channels_out = int(call.args[0].ty.shape[1]), int(call.args[1].ty.shape[0])
    return not (channels_in % block or channels_out % block or groups not in (1, channels_in))


_BINARY = {
    f"relax.{name}"
    for name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum")
}


@relax.expr_functor.mutator
class _ScalarsAsConstants(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        name = str(getattr(call.op, "name", ""))
        if name == "relax.clip":  # no layout rule: it would stay NCHW, between two transforms
            x, low, high = call.args
            dtype = str(x.ty.dtype)
            floor = self.builder_.emit(relax.op.maximum(x, relax.const(low.value, dtype)))
            return relax.op.minimum(floor, relax.const(high.value, dtype))
        if name not in _BINARY or not any(map(_is_scalar, call.args)):
            return call
        args = [relax.const(a.value, str(a.ty)) if _is_scalar(a) else a for a in call.args]
        return relax.Call(call.op, args, call.attrs, call.ty_args)


def _is_scalar(arg: relax.Expr) -> bool:
    return isinstance(arg, tvm.tirx.FloatImm | tvm.tirx.IntImm)


def _scalars_as_constants(mod: tvm.IRModule) -> tvm.IRModule:
    """Scalar operands of arithmetic (``R.add(x, T.float32(1e-05))``, batch norm's epsilon) as
    0-d constants: ``ConvertLayout`` crashes (segfault) on such an operand anywhere in the
    function. ``clip`` (ReLU6) becomes ``maximum`` then ``minimum`` with 0-d constants:
    ``ConvertLayout`` has no rule for it, and a clip left NCHW between blocked convolutions
    costs two layout transforms (MobileNetV2: 67 tasks instead of 38)."""
    mutator = _ScalarsAsConstants(mod)
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function):
            mod[gvar] = mutator.visit_expr(func)
    return mod


def _legalize_conv2d(bb: relax.BlockBuilder, call: relax.Call) -> relax.Expr:
    attrs = call.attrs
    if len(attrs.data_layout) == 4:  # left NCHW: Relax's own rule, later
        return call
    out_dtype = attrs.out_dtype or call.args[0].ty.dtype
    strides = [int(s) for s in attrs.strides]  # TOPI tests for list or tuple, not an ffi Array
    padding = [int(p) for p in attrs.padding]
    dilation = [int(d) for d in attrs.dilation]
    if attrs.groups == 1:
        return bb.call_te(
            topi.nn.conv2d_NCHWc,
            *call.args,
            strides,
            padding,
            dilation,
            attrs.data_layout,
            attrs.out_layout,
            out_dtype,
            primfunc_name_hint="conv2d_NCHWc",
        )
    return bb.call_te(
        _depthwise_conv2d_nchwc,
        *call.args,
        strides,
        padding,
        dilation,
        out_dtype,
        primfunc_name_hint="depthwise_conv2d_NCHWc",
    )


def _depthwise_conv2d_nchwc(
    data: te.Tensor,
    weight: te.Tensor,
    strides: list[int],
    padding: list[int],
    dilation: list[int],
    out_dtype: str,
) -> te.Tensor:
    """A depthwise convolution in ``NCHW{b}c`` with an ``OIHW1i{b}o`` weight. TOPI's grouped
    ``conv2d_NCHWc`` divides by zero on it, and its ``depthwise_conv2d_NCHWc`` is only an
    AutoTVM template's declaration."""
    n, chunks, height, width, lanes = (int(d) for d in data.shape)
    _, _, kernel_h, kernel_w, _, _ = (int(d) for d in weight.shape)
    (stride_h, stride_w), (dilation_h, dilation_w) = strides, dilation
    top, left, bottom, right = padding
    padded = topi.nn.pad(data, [0, 0, top, left, 0], [0, 0, bottom, right, 0], name="data_pad")
    out_h = (height + top + bottom - (kernel_h - 1) * dilation_h - 1) // stride_h + 1
    out_w = (width + left + right - (kernel_w - 1) * dilation_w - 1) // stride_w + 1
    kh = te.reduce_axis((0, kernel_h), name="kh")
    kw = te.reduce_axis((0, kernel_w), name="kw")
    return te.compute(
        (n, chunks, out_h, out_w, lanes),
        lambda b, c, h, w, lane: te.sum(
            padded[
                b, c, h * stride_h + kh * dilation_h, w * stride_w + kw * dilation_w, lane
            ].astype(out_dtype)
            * weight[c, 0, kh, kw, 0, lane].astype(out_dtype),
            axis=[kh, kw],
        ),
        name="depthwise_conv2d_NCHWc",
    )
