"""Blocked activation layouts for convolutions: NCHW16c data, OIHW16i16o weights.

MetaSchedule tunes a convolution in the layout the network has: NCHW, where the output channels
a vector register should hold are the outermost loop of the weight. In NCHW16c the innermost 16
elements of every activation are 16 channels, one AVX-512 register of fp32, as oneDNN and
ONNX Runtime's MLAS lay them out. Relax's ``ConvertLayout`` rewrites ``nn.conv2d`` to a blocked
layout (with ``layout_transform`` around it, and elementwise ops after it kept blocked), but its
legalization refuses blocked layouts (``legalize_ops/nn.py``: "channel chunk cannot be
legalized"), so blocked convolutions are legalized here by TOPI's ``conv2d_NCHWc``, a plain
compute MetaSchedule tunes like any other. Convolutions whose channels do not divide by the
block (an RGB input) and grouped ones stay NCHW.

A corpus tunes in one layout (``core.corpora.read_layout``); ``tasks.extract.prepare`` converts
every network it lowers or builds to it.
"""

from __future__ import annotations

import tvm
from tvm import relax, topi

from ..core.corpora import block_of

BLOCK = 16  # fp32 lanes of an AVX-512 register


def convert(mod: tvm.IRModule, target: tvm.target.Target, layout: str) -> tvm.IRModule:
    """``mod`` in ``layout``: as it is for ``native``, else with blocked convolutions."""
    block = block_of(layout)
    return mod if block is None else blocked_convolutions(mod, target, block)


def blocked_convolutions(
    mod: tvm.IRModule, target: tvm.target.Target, block: int = BLOCK
) -> tvm.IRModule:
    """``mod`` with its convolutions in ``NCHW{block}c`` / ``OIHW{block}i{block}o``, legalized.

    The other operators are left to ``tasks.extract.lower`` and ``compile_relax``, which
    legalize what is not yet.
    """
    layouts = {"relax.nn.conv2d": [f"NCHW{block}c", f"OIHW{block}i{block}o"]}
    mod = relax.transform.ConvertLayout(layouts)(_scalars_as_constants(mod))
    with target:
        return relax.transform.LegalizeOps({"relax.nn.conv2d": _legalize_conv2d})(mod)


_BINARY = {
    f"relax.{name}"
    for name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum")
}


@relax.expr_functor.mutator
class _ScalarsAsConstants(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if str(getattr(call.op, "name", "")) not in _BINARY or not any(map(_is_scalar, call.args)):
            return call
        args = [relax.const(a.value, str(a.ty)) if _is_scalar(a) else a for a in call.args]
        return relax.Call(call.op, args, call.attrs, call.ty_args)


def _is_scalar(arg: relax.Expr) -> bool:
    return isinstance(arg, tvm.tirx.FloatImm | tvm.tirx.IntImm)


def _scalars_as_constants(mod: tvm.IRModule) -> tvm.IRModule:
    """Scalar operands of arithmetic (``R.add(x, T.float32(1e-05))``, batch norm's epsilon) as
    0-d constants: ``ConvertLayout`` crashes (segfault) on such an operand anywhere in the
    function. ``clip``'s bounds stay scalars: its legalization needs them so."""
    mutator = _ScalarsAsConstants(mod)
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function):
            mod[gvar] = mutator.visit_expr(func)
    return mod


def _legalize_conv2d(bb: relax.BlockBuilder, call: relax.Call) -> relax.Expr:
    attrs = call.attrs
    if len(attrs.data_layout) == 4:  # left NCHW: Relax's own rule, later
        return call
    if attrs.groups != 1:
        raise ValueError(f"grouped convolution (groups {attrs.groups}) in a blocked layout")
    return bb.call_te(
        topi.nn.conv2d_NCHWc,
        call.args[0],
        call.args[1],
        [int(s) for s in attrs.strides],  # TOPI tests for list or tuple, not an ffi Array
        [int(p) for p in attrs.padding],
        [int(d) for d in attrs.dilation],
        attrs.data_layout,
        attrs.out_layout,
        attrs.out_dtype or call.args[0].ty.dtype,
        primfunc_name_hint="conv2d_NCHWc",
    )
