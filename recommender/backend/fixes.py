"""Work-arounds for TVM 0.27 behaviour that costs minutes on a CPU-only machine (one place)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading

import tvm

from ..core.targets import target_arch

_INTRIN = "tvm.s_tir.tensor_intrin"
_IMPORTING = threading.Lock()  # ranking builds tune contexts on several threads
_INTRIN_OF_ARCH = {"x86_64": ("x86",), "aarch64": ("arm_cpu",), "arm": ("arm_cpu",)}


def register_cpu_tensor_intrinsics(target: tvm.target.Target | None = None) -> None:
    """Import only the tensor intrinsics of ``target``'s CPU (default: this machine's) instead
    of the whole ``tensor_intrin`` package.

    ``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, whose ``__init__`` registers CUDA, ROCm
    and Hexagon intrinsics too: 50-65 s per process here, for intrinsics a CPU never uses.
    We put the package in ``sys.modules`` without running its ``__init__`` and import the
    submodule the default llvm schedule rules of that architecture may tensorize with: x86
    takes 0.5 s, Arm 8 s (its TVMScript is parsed at import), so neither pays for the other.
    """
    with _IMPORTING:
        _import_intrinsics(target)


def _import_intrinsics(target: tvm.target.Target | None) -> None:
    import tvm.s_tir

    if _INTRIN not in sys.modules:
        spec = importlib.util.find_spec(_INTRIN)
        package = importlib.util.module_from_spec(spec)
        sys.modules[_INTRIN] = package
        tvm.s_tir.tensor_intrin = package
    arch = target_arch(target) if target is not None else os.uname().machine
    for name in _INTRIN_OF_ARCH.get(arch, ("x86", "arm_cpu")):
        if f"{_INTRIN}.{name}" not in sys.modules:
            importlib.import_module(f"{_INTRIN}.{name}")


def tune_context(**kwargs):
    """``ms.TuneContext(**kwargs)``, with only the target's tensor intrinsics registered first."""
    from tvm.s_tir import meta_schedule as ms

    register_cpu_tensor_intrinsics(kwargs.get("target"))
    return ms.TuneContext(**kwargs)
