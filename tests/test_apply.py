"""Replaying a trace: a Ctrl-C in the middle stops the run; it is not the candidate's failure."""

import signal

import pytest
from tvm import s_tir, te

from recommender.core.interrupts import ctrl_c_stops_gently


def _tiled_matmul() -> tuple[s_tir.Schedule, s_tir.Trace]:
    a, b = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c])
    sch = s_tir.Schedule(func)
    i, _, _ = sch.get_loops(sch.get_sblock("C"))
    sch.sample_perfect_tile(i, n=2)
    return s_tir.Schedule(func), sch.trace


def ctrl_c_while_deciding(inst, inputs, attrs, decision):
    if inst.kind.name == "SamplePerfectTile":  # once per replay
        signal.raise_signal(signal.SIGINT)
    return decision


def test_tvm_turns_a_ctrl_c_in_a_callback_into_a_bare_runtime_error(interactive_ctrl_c):
    sch, trace = _tiled_matmul()
    with pytest.raises(RuntimeError):
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=ctrl_c_while_deciding)


def test_a_ctrl_c_during_a_replay_is_raised_after_it(interactive_ctrl_c):
    sch, trace = _tiled_matmul()
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=ctrl_c_while_deciding)
    assert len(sch.trace.insts) == len(trace.insts)  # the replay ran to its end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_during_a_replay_is_an_interrupt_not_a_failure(interactive_ctrl_c):
    sch, trace = _tiled_matmul()
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        signal.raise_signal(signal.SIGINT)  # the first, before the replay
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=ctrl_c_while_deciding)
