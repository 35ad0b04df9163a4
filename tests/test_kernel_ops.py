"""A TVM kernel read back as the operator ONNX Runtime and PyTorch would run instead: the
kernel benchmark compares them on the same operator, so the reading must be exact."""

import numpy as np
import pytest
import tvm
from tiny import conv_net
from tvm import relax

from recommender.backend.measure import arg_specs
from recommender.core.configuration import Configuration
from recommender.core.targets import host_target
from recommender.evaluate.kernel_bench import (
    HeavyWorkload,
    bench_workload,
    best_by_workload,
    gflops,
)
from recommender.evaluate.kernel_ops import (
    RuntimeOp,
    onnx_file,
    relax_convolution,
    runtime_op,
    torch_run,
    torch_timer,
)
from recommender.networks.network import Network, inputs_of
from recommender.tasks.extract import extract_tasks

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")


def one_kernel(name, shapes, body) -> Network:
    """A network of one fused kernel: ``body`` maps the input vars to the output."""
    bb = relax.BlockBuilder()
    params = [relax.Var(n, relax.TensorType(s, "float32")) for n, s in shapes.items()]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    return Network(name=name, graph=mod, inputs=inputs_of(mod))


DEPTHWISE_STRIDED = one_kernel(
    "depthwise",
    {"x": (1, 8, 9, 9), "w": (8, 1, 3, 3), "b": (1, 8, 1, 1)},
    lambda x, w, b: relax.op.add(relax.op.nn.conv2d(x, w, strides=2, padding=1, groups=8), b),
)
MATMUL_BIAS = one_kernel(
    "linear",
    {"x": (4, 16), "w": (16, 12), "b": (12,)},
    lambda x, w, b: relax.op.add(relax.op.matmul(x, w), b),
)
DEPTHWISE_BLOCKABLE = one_kernel(  # 16 channels: blocked by 16 in NCHW16c
    "depthwise16",
    {"x": (1, 16, 9, 9), "w": (16, 1, 3, 3), "b": (1, 16, 1, 1)},
    lambda x, w, b: relax.op.add(relax.op.nn.conv2d(x, w, strides=2, padding=1, groups=16), b),
)
CONV_BIAS = one_kernel(
    "conv16",
    {"x": (1, 16, 8, 8), "w": (32, 16, 3, 3), "b": (1, 32, 1, 1)},
    lambda x, w, b: relax.op.add(relax.op.nn.conv2d(x, w, padding=1), b),
)
BATCHED = one_kernel(
    "batched", {"a": (3, 5, 8), "c": (3, 8, 6)}, lambda a, c: relax.op.matmul(a, c)
)


def tvm_output(kernel: tvm.IRModule, inputs: list[np.ndarray]) -> np.ndarray:
    """The unscheduled kernel run on ``inputs`` (reshaped to its own parameter shapes)."""
    _, specs = arg_specs(kernel)
    lib = tvm.compile(kernel, target="llvm").jit()
    args = [tvm.runtime.tensor(a.reshape(s)) for a, (s, _) in zip(inputs, specs)]
    out = tvm.runtime.tensor(np.zeros(specs[-1][0], "float32"))
    lib["main"](*args, out)
    return out.numpy()


@pytest.mark.parametrize("network", [DEPTHWISE_STRIDED, MATMUL_BIAS, BATCHED], ids=lambda n: n.name)
def test_the_operator_computes_what_the_kernel_does(network, tmp_path):
    [task] = extract_tasks(network, host_target(), cache=False)
    op = runtime_op(task.mod)
    assert op is not None and op.flops > 0
    inputs = op.random_inputs()
    expected = tvm_output(task.mod, inputs)

    path, feeds = onnx_file(op, tmp_path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    [from_ort] = session.run(None, feeds)
    np.testing.assert_allclose(from_ort.reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
    from_torch = torch_run(op)().numpy()
    np.testing.assert_allclose(from_torch.reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
    assert 0 < torch_timer(op, threads=1)() < 1  # seconds per run of a tiny operator


def test_the_convolution_reads_stride_padding_and_groups_back():
    [task] = extract_tasks(DEPTHWISE_STRIDED, host_target(), cache=False)
    op = runtime_op(task.mod)
    assert op.kind == "conv2d"
    assert dict(op.attrs) == {"stride": 2, "pads": (1, 1, 1, 1), "groups": 8}
    assert op.shapes == ((1, 8, 9, 9), (8, 1, 3, 3), (8,))  # data, weight, bias as ONNX's Conv


@pytest.mark.parametrize("network", [DEPTHWISE_BLOCKABLE, CONV_BIAS], ids=lambda n: n.name)
def test_a_blocked_convolution_reads_back_as_the_nchw_one_it_was(network):
    def anchored(configuration):
        tasks = extract_tasks(network, host_target(), configuration=configuration, cache=False)
        [task] = [t for t in tasks if t.kernel_class.anchor]
        return task

    native, blocked = anchored(Configuration()), anchored(Configuration(layout="NCHW16c"))
    assert blocked.kernel_class.anchor.split(":")[0].endswith("_NCHWc")
    assert runtime_op(blocked.mod) == runtime_op(native.mod)


def test_a_kernel_is_timed_as_each_databases_best_record_and_in_each_runtime(
    conv_log, target, tmp_path
):
    work_dir, _ = conv_log
    [task] = extract_tasks(conv_net(), target)
    heavy = HeavyWorkload(int(task.structural_key), task)
    databases = {"tiny-log": best_by_workload({"conv": work_dir}, target), "empty": {}}
    row = bench_workload(heavy, databases, target, threads=1, onnx_dir=tmp_path, rounds=2)
    assert set(row["ms"]) == {"tiny-log", "onnxruntime", "pytorch"}  # checked, then timed
    assert row["failures"] == {"empty": "no record of this workload"}
    assert row["op"]["kind"] == "conv2d" and set(gflops(row)) == set(row["ms"])


def test_a_convolution_rebuilt_from_its_operator_computes_what_pytorch_does():
    op = RuntimeOp(
        "conv2d",
        ((1, 8, 10, 10), (16, 8, 3, 3), (16,)),
        (("stride", 2), ("pads", (1, 1, 0, 0)), ("groups", 1)),  # asymmetric, as ONNX allows
    )
    vm = relax.VirtualMachine(tvm.compile(relax_convolution(op), host_target()), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in op.random_inputs()]).numpy()
    np.testing.assert_allclose(out, torch_run(op)().numpy(), rtol=1e-4, atol=1e-4)
