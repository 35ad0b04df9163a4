"""Fast math: a corpus configured so computes GELU, softmax and sigmoid with polynomials, not
a libm call per element, and its builds agree with exact math to float32 rounding."""

import dataclasses

import pytest
from tiny import conv_silu_net, ffn_net

from recommender.core.configuration import Configuration
from recommender.evaluate import endtoend
from recommender.tasks.extract import extract_tasks, prepare

EXACT = Configuration()


def calls_libm(task) -> bool:
    script = task.mod.script()
    return any(f"T.{f}(" in script for f in ("erf", "exp", "tanh", "sigmoid"))


@pytest.mark.parametrize(
    "network, fast",
    [
        (ffn_net(), Configuration(fast_math=True)),
        (conv_silu_net(), Configuration(layout="NCHW16c", fast_math=True)),  # blocked first
    ],
    ids=["ffn", "conv-silu-blocked"],
)
def test_fast_math_leaves_no_transcendental_call_and_agrees_with_exact_math(network, fast, target):
    exact = extract_tasks(network, target, configuration=EXACT, cache=False)
    fast_tasks = extract_tasks(network, target, configuration=fast, cache=False)
    assert any(calls_libm(t) for t in exact) and not any(calls_libm(t) for t in fast_tasks)
    exact_alike = dataclasses.replace(fast, fast_math=False)  # the same layout, exact math
    assert len(fast_tasks) == len(extract_tasks(network, target, configuration=exact_alike))
    anchored = [t.kernel_class.anchor.split(":")[0] for t in fast_tasks if t.kernel_class.anchor]
    assert set(anchored) in ({"matmul"}, {"conv2d_NCHWc"})  # epilogues fused, blocked alike
    reference = endtoend.build(prepare(network.mod, target, EXACT), target)
    approximate = endtoend.build(prepare(network.mod, target, fast), target)
    assert endtoend.outputs_match(reference, approximate, network) is None
