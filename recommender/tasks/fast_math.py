"""Fast math: ``exp``, ``erf``, ``tanh``, softmax, GELU and sigmoid as polynomials that
vectorise.

LLVM lowers a vector ``exp``, ``erf`` or ``tanh`` to a libm call per element: BERT's GELU
kernel alone measured 73 ms of a 303 ms inference (znver4, 64 trials per task), and 37 of
EfficientNet-B0's 62 kernels end in a SiLU (``x * sigmoid(x)``, TIR's ``sigmoid`` is
``1 / (1 + exp(-x))``). Relax's ``FastMathTransform`` rewrites the Relax ops ``exp``, ``erf``,
``tanh`` and ``nn.softmax`` to TOPI's fast versions (clamped rational polynomials, fp32), but
not ``nn.gelu``, ``nn.gelu_tanh``, ``sigmoid`` or ``nn.silu``, whose legalizations call
``erf``/``tanh``/``exp`` inside their own computes: those are rewritten here the same way first.
The results differ from exact math by float32 rounding-level errors; a corpus opts in
(``core.configuration``).
"""

from __future__ import annotations

import math

import tvm
from tvm import relax, te, tirx, topi


def fast_math(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with its transcendental functions fast (before legalization)."""
    mutator = _FastActivations(mod)
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function):
            mutator.builder_.update_func(gvar, mutator.visit_expr(func))
    return relax.transform.FastMathTransform()(mutator.builder_.get())


def _gelu(x: te.Tensor) -> te.Tensor:
    """Relax's own GELU (``legalize_ops/nn.py``) with ``fast_erf``."""
    half = tirx.const(0.5, x.dtype)
    return x * (half + topi.fast_erf(x * tirx.const(math.sqrt(0.5), x.dtype)) * half)


def _gelu_tanh(x: te.Tensor) -> te.Tensor:
    """Relax's own tanh approximation of GELU with ``fast_tanh``."""
    c = lambda v: tirx.const(v, x.dtype)  # noqa: E731
    inner = c(math.sqrt(2.0 / math.pi)) * x * (c(1.0) + c(0.044715) * x * x)
    return c(0.5) * x * (c(1.0) + topi.fast_tanh(inner))


def _sigmoid(x: te.Tensor) -> te.Tensor:
    """TIR's own ``sigmoid`` lowering with ``fast_exp`` (clamped: 0 and 1 at the ends)."""
    one = tirx.const(1.0, x.dtype)
    return one / (one + topi.fast_exp(-x))


def _silu(x: te.Tensor) -> te.Tensor:
    """``x * sigmoid(x)``, as torch.export's ``aten.silu`` imports (ONNX's is two ops)."""
    return x * _sigmoid(x)


_ACTIVATIONS = {
    "relax.nn.gelu": (_gelu, "gelu"),
    "relax.nn.gelu_tanh": (_gelu_tanh, "gelu_tanh"),
    "relax.sigmoid": (_sigmoid, "sigmoid"),
    "relax.nn.silu": (_silu, "silu"),
}


@relax.expr_functor.mutator
class _FastActivations(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        name = str(getattr(call.op, "name", ""))
        if name not in _ACTIVATIONS or str(call.args[0].ty.dtype) != "float32":
            return call  # TOPI's fast functions are fp32 only
        compute, hint = _ACTIVATIONS[name]
        return self.builder_.call_te(compute, call.args[0], primfunc_name_hint=hint)
