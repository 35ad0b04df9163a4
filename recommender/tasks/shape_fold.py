"""Constant folding by shape alone, for task extraction.

Relax's ``FoldConstant`` evaluates every ``call_tir`` whose inputs are all constants: with the
weights bound, that is each batch-norm scale folded into a convolution's weights, each weight
transpose and reshape, every one compiled by LLVM and run (331 compilations for ResNet-50, 28 ms
each, most of the 12-29 s its lowering took). The tasks a network has depend on which calls fold,
not on the values they fold to, so for extraction each such call is replaced by a zero constant
of its output's shape and dtype, and ``FoldConstant`` then finds nothing left to build. A call
without inputs (``full``, ``zeros``) is left alone, as ``FoldConstant`` leaves it, to be fused.

The compiled network (``evaluate.endtoend``) folds the real values with ``FoldConstant``; both
produce the same fused kernels (``tests/test_tasks.py`` checks the zoo's networks).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


@relax.expr_functor.mutator
class _ShapeOnlyFold(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if call.op != _CALL_TIR:
            return call
        args = call.args[1]
        inputs = args.fields if isinstance(args, relax.Tuple) else [args]
        if not inputs or not all(self._constant(a) for a in inputs):
            return call
        out = call.ty_args[0]
        try:
            shape = [int(d) for d in out.shape.values]
        except (AttributeError, TypeError):  # a tuple output or a symbolic shape: not folded
            return call
        return relax.const(np.zeros(shape, dtype=str(out.dtype)))

    def _constant(self, expr: relax.Expr) -> bool:
        if isinstance(expr, relax.Var):
            expr = self.lookup_binding(expr)
        return isinstance(expr, tvm.ir.expr.Constant)


@tvm.transform.module_pass(opt_level=0, name="ShapeOnlyFold")
def shape_only_fold(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
    """Every all-constant ``call_tir`` of the module's Relax functions -> zeros of its shape."""
    folded = mod.clone()
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            folded.update_func(gv, _ShapeOnlyFold(mod).visit_expr(func))
    return folded
