"""Fast math: a corpus configured so computes GELU and softmax with polynomials, not a libm
call per element, and its builds agree with exact math to float32 rounding."""

from tiny import ffn_net

from recommender.core.configuration import Configuration
from recommender.evaluate import endtoend
from recommender.tasks.extract import extract_tasks, prepare

EXACT, FAST = Configuration(), Configuration(fast_math=True)


def calls_libm(task) -> bool:
    script = task.mod.script()
    return any(f"T.{f}(" in script for f in ("erf", "exp", "tanh"))


def test_fast_math_leaves_no_transcendental_call_and_agrees_with_exact_math(target):
    network = ffn_net()
    exact = extract_tasks(network, target, configuration=EXACT, cache=False)
    fast = extract_tasks(network, target, configuration=FAST, cache=False)
    assert any(calls_libm(t) for t in exact) and not any(calls_libm(t) for t in fast)
    assert len(exact) == len(fast)  # the same kernels, computed otherwise
    reference = endtoend.build(prepare(network.mod, target, EXACT), target)
    approximate = endtoend.build(prepare(network.mod, target, FAST), target)
    assert endtoend.outputs_match(reference, approximate, network) is None
