"""A network to tune: a Relax module, its weights bound on first use, and what its inputs look
like."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import tvm
from tvm import relax


@dataclass(frozen=True)
class InputSpec:
    """One graph input: name, static shape and dtype (batch included)."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class Network:
    """A loaded network. ``graph`` is the module as loaded; with ``weights_seed``, its weight
    parameters get seeded random values in ``mod``. ``family`` groups related models (e.g.
    resnet18 and resnet50)."""

    name: str
    graph: tvm.IRModule
    inputs: tuple[InputSpec, ...]
    family: str = ""
    source: str = ""
    weights_seed: int | None = None

    @cached_property
    def mod(self) -> tvm.IRModule:
        """The module to lower and run, weights bound. Bound on first use: ResNet-50's 25 M
        values take 0.6 s, and ranking from cached tasks never needs them."""
        if self.weights_seed is None:
            return self.graph
        return bind_random_weights(self.graph, self.weights_seed)

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Inputs for timing and output checks; integer inputs stay small (token ids)."""
        rng = np.random.default_rng(seed)
        arrays = []
        for spec in self.inputs:
            if np.dtype(spec.dtype).kind in "iu":
                arrays.append(rng.integers(0, 100, spec.shape).astype(spec.dtype))
            else:
                arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        return arrays


def inputs_of(mod: tvm.IRModule) -> tuple[InputSpec, ...]:
    """The graph inputs of ``main``: the parameters before ``num_input`` (all, if unset)."""
    main = mod["main"]
    count = int(main.attrs["num_input"]) if main.attrs and "num_input" in main.attrs else None
    params = main.params if count is None else main.params[:count]
    specs = []
    for var in params:
        ty = var.ty
        specs.append(InputSpec(var.name, tuple(int(d) for d in ty.shape), str(ty.dtype)))
    return tuple(specs)


def bind_random_weights(mod: tvm.IRModule, seed: int = 0) -> tvm.IRModule:
    """Bind seeded random values to the weight parameters of ``main`` (those after num_input).

    Values stay small so deep networks do not overflow, and variances stay positive, so
    outputs are finite and can be compared between builds. Without binding, extra
    weight-transpose tasks appear and constant folding cannot run.
    """
    main = mod["main"]
    if not main.attrs or "num_input" not in main.attrs:
        return mod
    count = int(main.attrs["num_input"])
    rng = np.random.default_rng(seed)
    params = {}
    for var in main.params[count:]:
        ty = var.ty
        shape = tuple(int(d) for d in ty.shape)
        if "var" in var.name.lower():
            value = rng.uniform(0.5, 1.5, shape)
        else:
            value = rng.normal(0.0, 0.05, shape)
        params[var.name] = tvm.runtime.tensor(value.astype(str(ty.dtype)))
    return relax.transform.BindParams("main", params)(mod)
