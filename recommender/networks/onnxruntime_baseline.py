"""ONNX Runtime, the baseline a user deploys without a compiler of their own: the zoo network
exported to ONNX, run by ONNX Runtime's CPU execution provider.

Beside PyTorch eager (``torch_zoo``), it tells whether TVM's builds beat a tuned-by-hand
inference engine, not only an interpreter. It is timed on the same input as the zoo network
(batch 1), with all of ONNX Runtime's graph optimisations and as many threads as the target's
cores, interleaved with TVM's builds. Importing this module needs ``onnxruntime`` (the ``zoo``
extra); exporting a zoo network needs torch too.

The export is the legacy TorchScript exporter (``dynamo=False``, opset 17), the route
``scripts/import_matrix.py`` found to export every zoo family. It is done once per network and
torch version and kept under ``paths.cache_root()``: exporting VGG-16 writes 550 MB.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime as ort

from ..core import paths
from ..core.timing import seconds_per_run

if TYPE_CHECKING:  # torch is needed only to export
    import torch

OPSET = 17


def session(onnx_path: Path, threads: int) -> ort.InferenceSession:
    """An ONNX Runtime session as a deployment would make it: CPU execution provider, every
    graph optimisation, ``threads`` intra-op threads (the caller's included), operators run
    one after the other (one inter-op thread), so it uses the cores TVM's builds use."""
    if threads < 1:
        raise ValueError(f"The 'threads' parameter must be an int >= 1. Got {threads!r} instead.")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def ort_timer_for(
    onnx_path: Path, inputs: Mapping[str, np.ndarray], threads: int
) -> Callable[[], float]:
    """A timing round of the ONNX file on ``inputs`` (graph input name: array) on ``threads``
    threads: one warm-up run, then runs for at least 0.2 s; returns seconds per run (TVM's
    ``time_evaluator`` protocol, as ``torch_zoo.eager_timer``).

    The session is made here, once: graph optimisation is part of loading, not of a run.

    Examples
    --------
    >>> one_round = ort_timer_for(Path("net.onnx"), {"image": image}, threads=2)  # doctest: +SKIP
    >>> seconds_per_run = one_round()  # doctest: +SKIP
    """
    runner = session(onnx_path, threads)
    expected = {i.name for i in runner.get_inputs()}
    if set(inputs) != expected:
        raise ValueError(
            f"{onnx_path}: expected inputs {sorted(expected)}, got {sorted(inputs)} instead."
        )
    feeds = {name: np.ascontiguousarray(value) for name, value in inputs.items()}
    outputs = [runner.get_outputs()[0].name]  # the zoo's networks return one tensor

    def one_round() -> float:
        return seconds_per_run(lambda: runner.run(outputs, feeds))

    return one_round


def export_onnx(module: torch.nn.Module, inputs: Mapping[str, torch.Tensor], path: Path) -> Path:
    """Export the torch ``module`` on ``inputs`` (graph input name: tensor) to ``path`` with the
    legacy exporter; written beside and renamed, so a run stopped midway leaves no half file.

    Not under ``torch.no_grad()``: there ``nn.MultiheadAttention`` takes a fused fast path the
    legacy exporter refuses (see ``scripts/import_matrix.py``).
    """
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with warnings.catch_warnings():  # the legacy exporter is chosen, its deprecation known
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            module,
            tuple(inputs.values()),
            str(partial),
            input_names=list(inputs),
            opset_version=OPSET,
            dynamo=False,
        )
    return partial.replace(path)


def zoo_onnx(name: str) -> tuple[Path, dict[str, np.ndarray]]:
    """The zoo network ``name`` as an ONNX file (exported on first use, then read from the
    cache, keyed by name and torch version) and its seeded inputs as arrays."""
    import torch

    from . import torch_zoo

    module, inputs = torch_zoo.torch_module(name)
    path = paths.cache_root() / "onnx" / f"{name}-torch{torch.__version__}-opset{OPSET}.onnx"
    if not path.exists():
        export_onnx(module, inputs, path)
    return path, {key: value.numpy() for key, value in inputs.items()}


def ort_timer(name: str, threads: int) -> Callable[[], float]:
    """A timing round of the zoo network ``name`` in ONNX Runtime on ``threads`` threads; one
    call is one round, returning seconds per run (see ``ort_timer_for``)."""
    path, inputs = zoo_onnx(name)
    return ort_timer_for(path, inputs, threads)
