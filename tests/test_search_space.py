"""A kernel can be tuned in a variant of MetaSchedule's CPU search space (one setting changed);
its log names the space, and records of two spaces are never mixed."""

import json

import pytest
from tiny import conv_net

from recommender.core.errors import InputError
from recommender.logs import search_space
from recommender.logs.collect import collect_tasks
from recommender.tasks.extract import extract_tasks

TINY = {"trials_per_task": 4, "trials_per_iter": 4, "population": 16, "progress": False}


def test_each_variant_changes_one_rule_of_the_targets_own_space(target):
    default = {str(rule) for rule in search_space._target_defaults(target)[0]}
    for name, (_, kind, _) in search_space.VARIANTS.items():
        rules = search_space.space_generator(name, target).sch_rules
        [changed] = [str(rule) for rule in rules if str(rule) not in default]
        assert changed.startswith(f"s_tir.meta_schedule.{kind}("), name
    jobs4 = search_space.space_generator("jobs4", target).mutator_probs
    assert "MutateParallel(max_jobs_per_core=4)" in {str(m) for m in jobs4}


def test_a_kernel_tuned_in_a_variant_space_says_so_and_is_not_resumed_in_another(target, tmp_path):
    [task] = extract_tasks(conv_net(), target)[:1]
    summary = collect_tasks("conv", [task], target, tmp_path, space="tile16", **TINY)
    assert summary.trials_this_run >= 4 and summary.failures_this_run == 0
    assert json.loads((tmp_path / "provenance.json").read_text())["space"] == "tile16"
    with pytest.raises(InputError, match="tuned in search space 'tile16', not 'default'"):
        collect_tasks("conv", [task], target, tmp_path, **TINY | {"trials_per_task": 8})
    with pytest.raises(InputError, match="unknown search space 'tile8'; choose one of: default"):
        collect_tasks("conv", [task], target, tmp_path / "other", space="tile8", **TINY)
