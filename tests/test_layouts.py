"""Convolutions in a blocked layout (NCHW16c): one kernel MetaSchedule tunes like any other,
computing what the NCHW network computes."""

import tvm
from tiny import conv_residual_net
from tvm import relax

from recommender.evaluate import endtoend
from recommender.networks.network import Network, inputs_of
from recommender.tasks.extract import extract_tasks, prepare
from recommender.tasks.layouts import blocked_convolutions, blocked_network


def test_a_blocked_convolution_is_one_tunable_kernel_computing_what_nchw_computes(target):
    network = conv_residual_net(channels=16, size=8, out_channels=32)  # channels divide by 16
    blocked = Network("blocked", blocked_convolutions(network.mod, target), network.inputs)
    kernels = [t for t in extract_tasks(blocked, target, cache=False) if t.kernel_class.anchor]
    [conv] = kernels  # bias, residual add and relu fused into it, kept blocked
    assert conv.kernel_class.anchor.startswith("conv2d_NCHWc:SSSSSRRR:")
    assert conv.descriptor.param_shapes[1] == (2, 1, 3, 3, 16, 16)  # OIHW16i16o weight
    assert {"add", "compute"} <= set(conv.descriptor.op_kinds)
    reference = endtoend.build(prepare(network.mod), target)
    assert (
        endtoend.outputs_match(reference, endtoend.build(prepare(blocked.mod), target), network)
        is None
    )


def conv_epsilon_net() -> Network:
    """conv2d, then ``+ T.float32(1e-05)``: a scalar operand, as the ONNX importer leaves batch
    norm's epsilon; ``ConvertLayout`` crashes (segfault) on one anywhere in the function."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 16, 8, 8), "float32"))
    w = relax.Var("w", relax.TensorType((32, 16, 3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, w, padding=1))
            out = bb.emit_output(relax.op.add(y, tvm.tirx.FloatImm("float32", 1e-05)))
        bb.emit_func_output(out)
    mod = bb.get()
    return Network("conveps", mod, inputs_of(mod))


def test_a_scalar_operand_does_not_stop_the_blocking(target):
    network = conv_epsilon_net()
    blocked = blocked_network(network, target)
    assert blocked.name == "conveps-nchw16c" and blocked.inputs == network.inputs
    anchors = [t.kernel_class.anchor for t in extract_tasks(blocked, target, cache=False)]
    assert any(a and a.startswith("conv2d_NCHWc:") for a in anchors)
    reference = endtoend.build(prepare(network.mod), target)
    blocked_build = endtoend.build(prepare(blocked.mod), target)
    assert endtoend.outputs_match(reference, blocked_build, network) is None
