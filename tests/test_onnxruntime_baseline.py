"""ONNX Runtime, the baseline a user deploys without TVM: a tiny torch module and a zoo network
exported with the legacy exporter and timed by real ONNX Runtime sessions."""

import math
import sys

import numpy as np
import pytest
import torch
from tiny import conv_net

import recommender.networks
from recommender.evaluate import comparison, endtoend
from recommender.evaluate.metrics import means, method_row
from recommender.evaluate.results_page import means_table, network_table
from recommender.networks import onnxruntime_baseline
from recommender.networks.onnxruntime_baseline import export_onnx, ort_timer, ort_timer_for
from recommender.tasks.extract import prepare


class TinyConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)

    def forward(self, image):
        return torch.relu(self.conv(image))


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory):
    torch.manual_seed(0)
    module, image = TinyConv().eval(), torch.randn(1, 4, 16, 16)
    path = export_onnx(module, {"image": image}, tmp_path_factory.mktemp("onnx") / "tiny.onnx")
    return path, module, image


def test_a_round_of_a_tiny_module_is_a_positive_time_per_run(tiny_onnx):
    path, _, image = tiny_onnx
    assert not path.with_name(path.name + ".partial").exists()
    seconds = ort_timer_for(path, {"image": image.numpy()}, threads=1)()
    assert math.isfinite(seconds) and 0 < seconds < 0.2


def test_the_session_is_a_deployments_and_computes_what_torch_does(tiny_onnx):
    path, module, image = tiny_onnx
    runner = onnxruntime_baseline.session(path, threads=2)
    options = runner.get_session_options()
    assert options.intra_op_num_threads == 2 and options.inter_op_num_threads == 1
    ort = onnxruntime_baseline.ort
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert runner.get_providers() == ["CPUExecutionProvider"]
    [got] = runner.run(None, {"image": image.numpy()})
    with torch.inference_mode():
        np.testing.assert_allclose(got, module(image).numpy(), rtol=1e-4, atol=1e-5)


def test_wrong_inputs_and_threads_are_refused_with_what_was_expected(tiny_onnx):
    path, _, image = tiny_onnx
    with pytest.raises(ValueError, match=r"expected inputs \['image'\], got \['x'\]"):
        ort_timer_for(path, {"x": image.numpy()}, threads=1)
    with pytest.raises(ValueError, match="'threads' parameter must be an int >= 1. Got 0"):
        onnxruntime_baseline.session(path, threads=0)


def test_a_zoo_network_is_exported_once_and_timed():
    seconds = ort_timer("mobilenetv2", threads=1)()
    assert math.isfinite(seconds) and 1e-5 < seconds < 5
    [exported] = (onnxruntime_baseline.paths.cache_root() / "onnx").glob("mobilenetv2-*.onnx")
    assert torch.__version__ in exported.name
    stamp = exported.stat().st_mtime_ns
    ort_timer("mobilenetv2", threads=1)
    assert exported.stat().st_mtime_ns == stamp  # read from the cache, not exported again


def test_without_onnxruntime_the_reason_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` fails
    monkeypatch.delitem(sys.modules, "recommender.networks.onnxruntime_baseline")
    monkeypatch.delattr(recommender.networks, "onnxruntime_baseline")
    timer, why = comparison.onnxruntime("resnet18", 2)
    assert timer is None
    assert why == f"onnxruntime is not installed ({comparison.INSTALL_HINT})"
    assert "pip install -e '.[zoo]'" in why
    assert comparison.onnxruntime("twoconv", 2) == (None, "not a zoo network")


def test_the_comparison_carries_onnxruntime_beside_pytorch_eager(tiny_onnx, target, monkeypatch):
    path, _, image = tiny_onnx
    real = ort_timer_for(path, {"image": image.numpy()}, threads=1)
    monkeypatch.setattr(comparison, "onnxruntime", lambda name, threads: (real, None))
    timers, missing = comparison.baselines("twoconv", 1)
    assert set(timers) == {"onnxruntime"}
    assert missing == {"pytorch_eager": "not a zoo network"}
    # timed in the same interleaved rounds as a real (untuned) build of a tiny network
    untuned = endtoend.build(prepare(conv_net().mod, target), target)
    times = comparison._time_unique({"untuned": untuned}, conv_net(), timers)
    assert set(times) == {"untuned", "onnxruntime"} and min(times.values()) > 0
    ort_s = times["onnxruntime"]
    cells = {
        k: comparison._baseline_cell(ort_s if k in timers else None, missing.get(k))
        for k in comparison.BASELINES
    }
    assert cells["onnxruntime"]["ms"] > 0
    assert cells["pytorch_eager"] == {"not_timed": "not a zoo network"}

    search = {"search_s": 10.0, "candidates_timed": 3, "tuned_kernels": 2}
    cell = method_row(search, ort_s / 2, ort_s, 4 * ort_s, ort_s / 3, None, None, ort_s)
    assert cell["speedup_over_onnxruntime"] == 2.0 and cell["speedup_over_pytorch_eager"] is None
    row = {
        "network": "twoconv",
        "untuned_ms": 4.0,
        "metaschedule": {"ms": 1.0, "speedup": 4.0, "tuning_s": 60.0, "records": 8, "budget": {}},
        **cells,
        "methods": {"top-1": cell},
    }
    table = "\n".join(network_table(row))
    assert "vs ONNX Runtime |" in table and "| 2.00x |" in table
    assert f"ONNX Runtime {cells['onnxruntime']['ms']:.2f} ms" in table
    assert "PyTorch eager not timed (not a zoo network)" in table
    summary = {"methods": [{"name": "top-1"}], "means": means([row], ["top-1"])}
    assert summary["means"]["top-1"]["speedup_over_onnxruntime"] == 2.0
    assert means_table(summary)[-1].endswith("| - | 2.00x |")


def test_a_row_written_before_onnxruntime_reads_as_not_timed():
    old = {
        "network": "resnet18",
        "untuned_ms": 4.0,
        "metaschedule": {"ms": 1.0, "speedup": 4.0, "tuning_s": 60.0, "records": 8, "budget": {}},
        "pytorch_eager": {"ms": 2.0},
        "methods": {},
    }
    assert "ONNX Runtime not timed (not measured in this run)" in "\n".join(network_table(old))
