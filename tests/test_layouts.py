"""Convolutions in a blocked layout (NCHW16c): one kernel MetaSchedule tunes like any other,
computing what the NCHW network computes."""

from tiny import conv_residual_net

from recommender.evaluate import endtoend
from recommender.networks.network import Network
from recommender.tasks.extract import extract_tasks, prepare
from recommender.tasks.layouts import blocked_convolutions


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
