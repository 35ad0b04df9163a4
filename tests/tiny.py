"""Tiny real networks for the tests: convolutions of several shapes, a matmul, and both."""

from __future__ import annotations

from tvm import relax

from recommender.networks.network import Network, inputs_of


def _network(name: str, build) -> Network:
    bb = relax.BlockBuilder()
    build(bb)
    mod = bb.get()
    return Network(name=name, mod=mod, inputs=inputs_of(mod))


def conv_net(channels: int = 8, size: int = 16, out_channels: int | None = None) -> Network:
    """conv2d 3x3 (padding 1) + relu: one task, ``pad+conv2d_nchw+relu``."""
    out_channels = out_channels or channels

    def build(bb):
        x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))
        w = relax.Var("w", relax.TensorType((out_channels, channels, 3, 3), "float32"))
        with bb.function("main", [x, w]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.conv2d(x, w, padding=1))
                out = bb.emit_output(relax.op.nn.relu(y))
            bb.emit_func_output(out)

    return _network(f"conv{channels}x{size}", build)


def conv_shapes() -> list[Network]:
    """Six conv + relu networks of other shapes than ``conv_net()``: targets for transfer."""
    shapes = [(4, 16, 8), (8, 8, 16), (16, 8, 32), (8, 32, 8), (16, 16, 16), (32, 8, 16)]
    return [conv_net(c, size, out) for c, size, out in shapes]


def two_conv_net() -> Network:
    """Two conv + relu layers of different shapes: two tasks of one kernel class."""

    def build(bb):
        x = relax.Var("x", relax.TensorType((1, 8, 16, 16), "float32"))
        w1 = relax.Var("w1", relax.TensorType((16, 8, 3, 3), "float32"))
        w2 = relax.Var("w2", relax.TensorType((16, 16, 3, 3), "float32"))
        with bb.function("main", [x, w1, w2]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, w1, padding=1)))
                out = bb.emit_output(relax.op.nn.relu(relax.op.nn.conv2d(y, w2, padding=1)))
            bb.emit_func_output(out)

    return _network("twoconv", build)


def matmul_net(m: int = 16, k: int = 64, n: int = 32) -> Network:
    """A plain matmul: one task, ``matmul``."""

    def build(bb):
        a = relax.Var("a", relax.TensorType((m, k), "float32"))
        b = relax.Var("b", relax.TensorType((k, n), "float32"))
        with bb.function("main", [a, b]):
            with bb.dataflow():
                out = bb.emit_output(relax.op.matmul(a, b))
            bb.emit_func_output(out)

    return _network(f"matmul{m}x{k}x{n}", build)


def conv_matmul_net() -> Network:
    """conv + relu, flattened into a matmul: three tasks of three kernel classes."""

    def build(bb):
        x = relax.Var("x", relax.TensorType((1, 4, 8, 8), "float32"))
        w = relax.Var("w", relax.TensorType((8, 4, 3, 3), "float32"))
        m = relax.Var("m", relax.TensorType((512, 16), "float32"))
        with bb.function("main", [x, w, m]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, w, padding=1)))
                flat = bb.emit(relax.op.reshape(y, (1, 512)))
                out = bb.emit_output(relax.op.matmul(flat, m))
            bb.emit_func_output(out)

    return _network("convmatmul", build)
