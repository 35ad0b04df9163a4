"""The zoo: the paper's 11 networks, loadable with TVM only, each yielding tasks."""

import json
import os
import subprocess
import sys

import pytest

from recommender.core.targets import host_target
from recommender.networks.zoo import load_zoo_network, zoo_names
from recommender.tasks.extract import extract_tasks

PAPER_NETWORKS = [
    "resnet18",
    "resnet50",
    "alexnet",
    "vgg16",
    "mobilenetv2",
    "googlenet",
    "mnasnet1_0",
    "efficientnetb0",
    "efficientnetb4",
    "bert",
    "mobilebert",
]


def test_zoo_lists_the_papers_eleven_networks():
    assert zoo_names() == PAPER_NETWORKS


def test_cli_zoo_json_lists_inputs_wherever_the_corpus_lives(tmp_path):
    # RECOMMENDER_HOME holds a corpus rebuilt for another machine; the zoo still ships here
    out = subprocess.run(
        [sys.executable, "-m", "recommender.cli", "zoo", "--json"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "RECOMMENDER_HOME": str(tmp_path)},
    ).stdout
    entries = {e["name"]: e for e in json.loads(out)}
    assert entries["resnet50"]["inputs"] == [
        {"name": "image", "shape": [1, 3, 224, 224], "dtype": "float32"}
    ]
    assert entries["bert"]["inputs"] == [{"name": "input_ids", "shape": [1, 256], "dtype": "int64"}]


def test_weights_are_seeded():
    a = load_zoo_network("alexnet", seed=3).mod
    b = load_zoo_network("alexnet", seed=3).mod
    import tvm_ffi

    assert tvm_ffi.structural_hash(a) == tvm_ffi.structural_hash(b)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenetv2", "mobilebert"])
def test_a_cnn_a_depthwise_cnn_and_a_transformer_yield_tasks(name):
    """One of each kind of network in the zoo (all eleven take about 4 minutes)."""
    tasks = extract_tasks(load_zoo_network(name), host_target())
    assert len(tasks) >= 5
    assert all(t.weight >= 1 and t.kernel_class.key for t in tasks)
    heavy = max(tasks, key=lambda t: t.descriptor.flops * t.weight)
    assert heavy.descriptor.op_kinds[0] in ("pad_temp", "conv2d_nchw", "matmul", "NT_matmul")
