"""Networks come from the zoo, ONNX files, Relax JSON files; bad files get one clear error."""

import gzip

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from recommender.core.errors import InputError
from recommender.core.targets import host_target
from recommender.networks.frontends import load_network
from recommender.tasks.extract import extract_tasks


def tiny_onnx(path):
    """Conv (4 -> 8 channels, 3x3, pad 1) + Relu on a 1x4x8x8 image, weights as initializers."""
    weight = helper.make_tensor(
        "w", TensorProto.FLOAT, [8, 4, 3, 3], np.ones(8 * 4 * 9, np.float32).tolist()
    )
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["y"], ["z"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8, 8, 8])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def test_onnx_model_loads_and_yields_a_conv_task(tmp_path):
    network = load_network(str(tiny_onnx(tmp_path / "tiny.onnx")))
    assert network.name == "tiny"
    assert [(i.name, i.shape, i.dtype) for i in network.inputs] == [("x", (1, 4, 8, 8), "float32")]
    tasks = extract_tasks(network, host_target())
    assert [t.kernel_class.summary for t in tasks] == ["pad+conv2d_nchw+compute"]


def test_relax_json_model_loads_plain_and_gzipped(conv_json, tmp_path):
    gz = tmp_path / "tinyconv.json.gz"
    gz.write_bytes(gzip.compress(conv_json.read_bytes()))
    for path in (conv_json, gz):
        network = load_network(str(path))
        assert network.name == "tinyconv"
        assert [i.name for i in network.inputs] == ["x", "w"]


def test_unknown_model_name_lists_the_zoo():
    with pytest.raises(InputError, match="unknown model 'resnet1000'.*resnet18, resnet50"):
        load_network("resnet1000")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("broken.onnx", b"\x08\x07garbage", "not a readable ONNX file|cannot import"),
        ("broken.json", b'{"root": 1, "nodes": [', "not a Relax JSON module"),
        ("model.bin", b"", "unsupported model format '.bin'"),
    ],
)
def test_corrupt_model_files_are_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        load_network(str(path))
    assert str(path) in str(info.value)


def test_missing_model_file_is_named(tmp_path):
    with pytest.raises(InputError, match="model file not found"):
        load_network(str(tmp_path / "absent.onnx"))
