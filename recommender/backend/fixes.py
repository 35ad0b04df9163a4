"""Work-arounds for TVM 0.27 behaviour that costs minutes on a CPU-only machine (one place)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

_INTRIN = "tvm.s_tir.tensor_intrin"
_CPU_INTRIN = ("x86", "arm_cpu")


def register_cpu_tensor_intrinsics() -> None:
    """Import only the CPU tensor intrinsics instead of the whole ``tensor_intrin`` package.

    ``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, whose ``__init__`` registers CUDA, ROCm
    and Hexagon intrinsics too: 50-65 s per process here, for intrinsics a CPU never uses.
    We put the package in ``sys.modules`` without running its ``__init__`` and import the x86
    and Arm submodules, which the default llvm schedule rules may tensorize with.
    """
    if _INTRIN in sys.modules:
        return
    import tvm.s_tir

    spec = importlib.util.find_spec(_INTRIN)
    package = importlib.util.module_from_spec(spec)
    sys.modules[_INTRIN] = package
    tvm.s_tir.tensor_intrin = package
    for name in _CPU_INTRIN:
        importlib.import_module(f"{_INTRIN}.{name}")


def tune_context(**kwargs):
    """``ms.TuneContext(**kwargs)``, with only the CPU tensor intrinsics registered first."""
    from tvm.s_tir import meta_schedule as ms

    register_cpu_tensor_intrinsics()
    return ms.TuneContext(**kwargs)
