"""Convolutions in a blocked layout (NCHW16c): one kernel MetaSchedule tunes like any other,
computing what the NCHW network computes; a corpus tunes every network in its own layout."""

import json

import pytest
import tvm
from tiny import conv_net, conv_residual_net, inverted_residual_net
from tvm import relax

from recommender.cli.main import main
from recommender.core.configuration import Configuration
from recommender.core.errors import InputError
from recommender.evaluate import endtoend
from recommender.logs.tuning_log import TuningLog
from recommender.networks.network import Network, inputs_of
from recommender.tasks.extract import extract_tasks, prepare

NATIVE, BLOCKED = Configuration(), Configuration(layout="NCHW16c")


def test_a_blocked_convolution_is_one_tunable_kernel_computing_what_nchw_computes(target):
    network = conv_residual_net(channels=16, size=8, out_channels=32)  # channels divide by 16
    tasks = extract_tasks(network, target, configuration=BLOCKED, cache=False)
    [conv] = [t for t in tasks if t.kernel_class.anchor]  # bias, residual add and relu fused
    assert conv.kernel_class.anchor.startswith("conv2d_NCHWc:SSSSSRRR:")
    assert conv.descriptor.param_shapes[1] == (2, 1, 3, 3, 16, 16)  # OIHW16i16o weight
    assert {"add", "compute"} <= set(conv.descriptor.op_kinds)
    reference = endtoend.build(prepare(network.mod, target, NATIVE), target)
    blocked = endtoend.build(prepare(network.mod, target, BLOCKED), target)
    assert endtoend.outputs_match(reference, blocked, network) is None


def test_depthwise_convolutions_are_blocked_too_and_narrow_ones_stay_nchw(target):
    network = inverted_residual_net(channels=16, narrow=24)  # 24 does not divide by 16
    tasks = extract_tasks(network, target, configuration=BLOCKED, cache=False)
    anchors = {t.kernel_class.anchor.split(":")[0]: t for t in tasks if t.kernel_class.anchor}
    assert sorted(anchors) == ["conv2d_NCHWc", "conv2d_nchw", "depthwise_conv2d_NCHWc"]
    # ReLU6 stays blocked, fused into the expansion (a clip would have gone back to NCHW)
    assert anchors["conv2d_NCHWc"].descriptor.op_kinds == ("conv2d_NCHWc", "maximum", "minimum")
    reference = endtoend.build(prepare(network.mod, target, NATIVE), target)
    blocked = endtoend.build(prepare(network.mod, target, BLOCKED), target)
    assert endtoend.outputs_match(reference, blocked, network) is None


def plus_epsilon_net(name: str, x_shape: tuple, w_shape: tuple, layer) -> Network:
    """``layer(x, w) + T.float32(1e-05)``: a scalar operand, as the ONNX importer leaves batch
    norm's epsilon; ``ConvertLayout`` crashes (segfault) on one anywhere in the function."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(x_shape, "float32"))
    w = relax.Var("w", relax.TensorType(w_shape, "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(layer(x, w))
            out = bb.emit_output(relax.op.add(y, tvm.tirx.FloatImm("float32", 1e-05)))
        bb.emit_func_output(out)
    mod = bb.get()
    return Network(name, mod, inputs_of(mod))


def kernels_in_every_layout(network: Network, target) -> list[list[str]]:
    return [
        [t.structural_key for t in extract_tasks(network, target, configuration=c, cache=False)]
        for c in (NATIVE, BLOCKED)
    ]


def test_a_network_without_convolutions_has_the_same_kernels_in_every_layout(target):
    """So a transformer's log serves a native corpus and a blocked one alike (the scalar
    operand would otherwise become a constant tensor)."""
    network = plus_epsilon_net("matmul_eps", (16, 64), (64, 32), relax.op.matmul)
    native, blocked = kernels_in_every_layout(network, target)
    assert native == blocked


def test_a_network_with_no_convolution_to_block_is_left_as_it_is(target):
    """ViT's only convolution, its patch embedding, reads the RGB input (3 channels, so it stays
    NCHW): the network is not converted at all (``ConvertLayout`` dies with ``std::bad_alloc``
    on ViT-B/16), and its kernels are the same in every layout."""

    def patch_embedding(x, w):
        patches = relax.op.reshape(relax.op.nn.conv2d(x, w, strides=4), (1, 32, 16))
        return relax.op.permute_dims(patches, [0, 2, 1])

    network = plus_epsilon_net("patches", (1, 3, 16, 16), (32, 3, 4, 4), patch_embedding)
    native, blocked = kernels_in_every_layout(network, target)
    assert native == blocked


def test_a_scalar_operand_does_not_stop_the_blocking(target):
    network = plus_epsilon_net(
        "conveps", (1, 16, 8, 8), (32, 16, 3, 3), lambda x, w: relax.op.nn.conv2d(x, w, padding=1)
    )
    tasks = extract_tasks(network, target, configuration=BLOCKED, cache=False)
    assert any((t.kernel_class.anchor or "").startswith("conv2d_NCHWc:") for t in tasks)
    reference = endtoend.build(prepare(network.mod, target, NATIVE), target)
    blocked = endtoend.build(prepare(network.mod, target, BLOCKED), target)
    assert endtoend.outputs_match(reference, blocked, network) is None


def test_a_corpus_made_blocked_tunes_and_lists_every_network_blocked(tmp_path, target, capsys):
    model = tmp_path / "conv16.json"
    model.write_text(tvm.ir.save_json(conv_net(channels=16, size=8).mod))
    corpus = tmp_path / "blocked"
    tiny = ["--trials-per-task", "1", "--trials-per-iter", "1", "--population", "4"]
    collect = ["collect", str(model), "--corpus", str(corpus), *tiny, "--json"]
    assert main([*collect, "--layout", "NCHW16c"]) == 0
    log = TuningLog.open(corpus / "datasets" / "logs" / "conv16")
    assert log.provenance()["configuration"] == {"layout": "NCHW16c", "fast_math": False}
    capsys.readouterr()
    assert main(["tasks", str(model), "--corpus", str(corpus), "--json"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    [conv] = [t for t in tasks if t["anchor_class"]]  # with the weight's and data's transforms
    assert conv["anchor_class"].startswith("conv2d_NCHWc:") and len(tasks) == log.record_count()
    # the corpus keeps its configuration: its logs are never mixed with native ones
    assert main([*collect, "--layout", "native"]) == 2
    assert "configuration is NCHW16c, not native" in capsys.readouterr().err
    # nor is a native log read as one of its own
    with pytest.raises(
        InputError, match="tuned with configuration NCHW16c, this corpus's is native"
    ):
        log.check_compatible(target, configuration=NATIVE)
