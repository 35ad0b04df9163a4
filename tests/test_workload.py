"""Kernel classes decide which traces may replay on which workloads; descriptors are cheap facts."""

import pytest
from tiny import conv_net, matmul_net

from recommender.tasks.extract import extract_tasks


def only_task(network, target):
    tasks = extract_tasks(network, target)
    assert len(tasks) == 1
    return tasks[0]


def test_two_shapes_of_one_conv_share_a_kernel_class(target):
    small = only_task(conv_net(channels=8, size=16), target)
    wide = only_task(conv_net(channels=16, size=8, out_channels=32), target)
    assert small.kernel_class == wide.kernel_class
    assert small.descriptor.anchor_extents != wide.descriptor.anchor_extents


def test_conv_and_matmul_have_different_kernel_classes(target):
    conv = only_task(conv_net(), target)
    matmul = only_task(matmul_net(), target)
    assert conv.kernel_class != matmul.kernel_class
    assert conv.kernel_class.summary == "pad+conv2d_nchw+compute"
    assert matmul.kernel_class.summary == "matmul"


def test_descriptor_counts_flops_and_bytes(target):
    m, k, n = 16, 64, 32
    d = only_task(matmul_net(m, k, n), target).descriptor
    assert d.flops == pytest.approx(2 * m * k * n)
    assert d.bytes == 4 * (m * k + k * n + m * n)
    assert d.param_shapes == ((m, k), (k, n), (m, n))
    assert d.anchor_iter_kinds == "SSR"
    assert d.arithmetic_intensity == pytest.approx(d.flops / d.bytes)


def test_task_json_names_class_and_weight(target):
    row = only_task(conv_net(), target).to_json()
    assert row["kernel_class"].startswith("pad+conv2d_nchw+compute@")
    assert row["weight"] == 1
    assert row["flops"] > 0
