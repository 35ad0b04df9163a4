"""Networks come from the zoo, Hugging Face names, ONNX files, Relax JSON files; bad files and
unimportable graphs get one clear error."""

import gzip

import numpy as np
import onnx
import pytest
import torch
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

from recommender.core.errors import InputError
from recommender.core.targets import host_target
from recommender.networks import huggingface
from recommender.networks.frontends import load_network
from recommender.networks.onnx_prepare import TORCH_EXPORT_HINT, check_static_shapes
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


def test_a_model_file_is_imported_once_whatever_its_name(tmp_path, monkeypatch, caplog):
    """The second load of the same content reads the cached Relax module; another content, or
    an unreadable cache entry, is imported again."""
    from recommender.networks import import_cache, onnx_prepare

    first = load_network(str(tiny_onnx(tmp_path / "tiny.onnx")))
    imported = []
    real = onnx_prepare.onnx_to_relax
    monkeypatch.setattr(onnx_prepare, "onnx_to_relax", lambda *a: imported.append(a) or real(*a))
    (tmp_path / "copy").mkdir()
    copy = tiny_onnx(tmp_path / "copy" / "tiny.onnx")
    again = load_network(str(copy))
    assert not imported
    tvm.ir.assert_structural_equal(again.mod, first.mod)
    changed = onnx.load(str(copy))
    changed.graph.node[1].op_type = "Sigmoid"
    onnx.save(changed, str(copy))
    assert "sigmoid" in load_network(str(copy)).mod.script() and len(imported) == 1
    for entry in (import_cache.paths.cache_root() / "networks").glob("*.json.gz"):
        entry.write_bytes(b"not gzip")
    tvm.ir.assert_structural_equal(load_network(str(copy)).mod, load_network(str(copy)).mod)
    assert len(imported) == 2 and "unreadable cached import" in caplog.text


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


class ShuffleBlock(torch.nn.Module):
    """ShuffleNetV2's block in small: a conv, ``chunk`` into two halves, one half through a
    relu, then the channel shuffle. The legacy ONNX exporter writes ``chunk`` as a Slice whose
    bounds are computed from the input's shape (Shape/Gather/Add/Div/Mul)."""

    def __init__(self, groups: int = 2):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.groups = groups

    def forward(self, x):
        left, right = self.conv(x).chunk(2, dim=1)
        x = torch.cat((left, torch.relu(right)), dim=1)
        b, c, h, w = x.size()
        x = x.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).contiguous()
        return x.view(b, -1, h, w)


def export_shuffle(path, *, dynamic_batch: bool = False):
    torch.manual_seed(0)
    axes = {"x": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(
        ShuffleBlock().eval(),
        (torch.randn(1, 4, 8, 8),),
        str(path),
        input_names=["x"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    return path


def test_a_computed_reshape_imports_once_shapes_are_folded(tmp_path):
    path = export_shuffle(tmp_path / "shuffle.onnx")
    raw = from_onnx(onnx.load(str(path)), keep_params_in_input=True)
    with pytest.raises(InputError, match=r"shape known only at run time.*torch\.export"):
        check_static_shapes(raw, path=path, hint=f"; {TORCH_EXPORT_HINT}")
    network = load_network(str(path))
    assert [(i.name, i.shape) for i in network.inputs] == [("x", (1, 4, 8, 8))]
    assert len(extract_tasks(network, host_target(), cache=False)) >= 2


class KeyCache(torch.nn.Module):
    """A decoder's first step: transformers' empty cache, ``torch.tensor([])``, concatenated
    with the new keys (a 1-D empty tensor ``torch.cat`` skips, which Relax's concat refuses)."""

    def forward(self, keys):
        return torch.cat([torch.tensor([]), keys], dim=-2) * 2


def test_an_exported_program_concatenating_an_empty_cache_imports(tmp_path):
    keys = torch.randn(1, 2, 4, 8)
    path = tmp_path / "cache.pt2"
    torch.export.save(torch.export.export(KeyCache(), (keys,)), str(path))
    network = load_network(str(path))
    vm = relax.VirtualMachine(tvm.compile(network.mod, host_target()), tvm.cpu())
    (out,) = vm["main"](tvm.runtime.tensor(keys.numpy()))
    np.testing.assert_array_equal(out.numpy(), keys.numpy() * 2)


def test_a_dynamic_batch_needs_input_shape(tmp_path):
    path = export_shuffle(tmp_path / "shuffle.onnx", dynamic_batch=True)
    with pytest.raises(
        InputError,
        match=r"input 'x' has a dynamic shape \(batch x 4 x 8 x 8\); pin it with "
        r"--input-shape x:1x4x8x8",
    ):
        load_network(str(path))
    network = load_network(str(path), input_shapes={"x": (2, 4, 8, 8)})
    assert [(i.name, i.shape) for i in network.inputs] == [("x", (2, 4, 8, 8))]


@pytest.mark.parametrize(
    "shapes, message",
    [
        (
            {"image": (1, 4, 8, 8)},
            "names 'image', which is not an input of this model; its inputs: x",
        ),
        ({"x": (1, 4, 8)}, r"--input-shape x: expected 4 dimensions \(batch x 4 x 8 x 8\), got 3"),
        ({"x": (1, 3, 8, 8)}, "--input-shape x: dimension 1 is fixed to 4 in the model, got 3"),
    ],
)
def test_a_wrong_input_shape_is_named(tmp_path, shapes, message):
    path = export_shuffle(tmp_path / "shuffle.onnx", dynamic_batch=True)
    with pytest.raises(InputError, match=message):
        load_network(str(path), input_shapes=shapes)


def test_an_operator_tvm_lacks_is_named_with_node_and_opset(tmp_path):
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["y"]),
            helper.make_node("Frobnicate", ["y"], ["z"], name="frob1"),
        ],
        "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])],
    )
    path = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(
        InputError,
        match=r"does not support operator 'Frobnicate' \(domain 'ai.onnx', opset 17\), "
        r"used by node 'frob1'",
    ):
        load_network(str(path))


def test_a_shape_held_in_an_initializer_stays_static(tmp_path):
    """Expand to an int64 initializer, then Reshape with -1 (Swin V2 after simplification):
    TVM's importer would make the shape a parameter and fail on the Reshape."""
    shape = numpy_helper.from_array(np.array([4, 8], np.int64), "shape")
    flat = numpy_helper.from_array(np.array([-1], np.int64), "flat")
    graph = helper.make_graph(
        [
            helper.make_node("Expand", ["x", "shape"], ["y"]),
            helper.make_node("Reshape", ["y", "flat"], ["z"]),
        ],
        "expand",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [32])],
        initializer=[shape, flat],
    )
    path = tmp_path / "expand.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    network = load_network(str(path))
    assert [i.name for i in network.inputs] == ["x"]
    assert [int(d) for d in network.mod["main"].ret_ty.shape] == [32]


def test_options_that_do_not_apply_are_refused(conv_json):
    with pytest.raises(InputError, match="--input-shape applies to .onnx models"):
        load_network(str(conv_json), input_shapes={"x": (1, 8, 16, 16)})
    with pytest.raises(InputError, match="--seq-len applies to hf: models"):
        load_network("resnet18", seq_len=64)


TINY_BERT = (
    "bert",
    {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": 128,
    },
)


def test_a_tiny_transformers_configuration_imports(monkeypatch):
    monkeypatch.setitem(huggingface.KNOWN, "tiny-bert", TINY_BERT)
    network = load_network("hf:someorg/tiny-bert", seq_len=16)
    assert network.name == "tiny-bert"
    assert [(i.name, i.shape, i.dtype) for i in network.inputs] == [("input_ids", (1, 16), "int64")]
    classes = {t.kernel_class.anchor for t in extract_tasks(network, host_target(), cache=False)}
    assert "matmul" in " ".join(filter(None, classes))


def test_unknown_hf_names_and_long_sequences_are_refused():
    with pytest.raises(InputError, match="unknown Hugging Face model 'hf:bert-huge'.*hf:bert-base"):
        load_network("hf:bert-huge")
    with pytest.raises(InputError, match="--seq-len of hf:gpt2 must be at most 1024. Got 4096"):
        load_network("hf:gpt2", seq_len=4096)


def test_a_torchvision_classifier_imports_by_name():
    network = load_network("tv:squeezenet1_1")  # built offline, random weights
    assert network.name == "squeezenet1_1"
    assert [(i.shape, i.dtype) for i in network.inputs] == [((1, 3, 224, 224), "float32")]
    with pytest.raises(InputError, match="unknown torchvision classifier .tv:resnet9.*tv:resnet18"):
        load_network("tv:resnet9")
