"""Tiny real networks for the tests: convolutions of several shapes, a matmul, and both."""

from __future__ import annotations

from tvm import relax

from recommender.networks.network import Network, inputs_of


def _network(name: str, build) -> Network:
    bb = relax.BlockBuilder()
    build(bb)
    mod = bb.get()
    return Network(name=name, graph=mod, inputs=inputs_of(mod))


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


def _conv_bias(bb, x, w, b):
    """conv2d 3x3 (padding 1) + a per-channel bias, as frameworks export a conv layer."""
    return bb.emit(relax.op.add(relax.op.nn.conv2d(x, w, padding=1), b))


def _conv_params(channels: int, size: int, out_channels: int) -> list[relax.Var]:
    return [
        relax.Var("x", relax.TensorType((1, channels, size, size), "float32")),
        relax.Var("w", relax.TensorType((out_channels, channels, 3, 3), "float32")),
        relax.Var("b", relax.TensorType((1, out_channels, 1, 1), "float32")),
    ]


def conv_residual_net(channels: int = 8, size: int = 16, out_channels: int = 16) -> Network:
    """conv2d + bias + a residual input + relu, as in a ResNet block: one task whose anchor
    (the convolution) is ``conv_net()``'s, with another epilogue."""

    def build(bb):
        x, w, b = params = _conv_params(channels, size, out_channels)
        r = relax.Var("r", relax.TensorType((1, out_channels, size, size), "float32"))
        with bb.function("main", [*params, r]):
            with bb.dataflow():
                y = _conv_bias(bb, x, w, b)
                out = bb.emit_output(relax.op.nn.relu(relax.op.add(y, r)))
            bb.emit_func_output(out)

    return _network(f"convres{channels}x{size}", build)


def conv_hardswish_net(channels: int = 8, size: int = 16, out_channels: int = 16) -> Network:
    """conv2d + bias + hardswish (``y * clip(y + 3, 0, 6) / 6``; Relax has no hardswish op), as
    in MobileNetV3: one task whose anchor is ``conv_net()``'s, with a four-op epilogue."""

    def build(bb):
        x, w, b = params = _conv_params(channels, size, out_channels)
        with bb.function("main", params):
            with bb.dataflow():
                y = _conv_bias(bb, x, w, b)
                three, six = relax.const(3.0, "float32"), relax.const(6.0, "float32")
                gate = relax.op.clip(relax.op.add(y, three), 0.0, 6.0)
                out = bb.emit_output(relax.op.divide(relax.op.multiply(y, gate), six))
            bb.emit_func_output(out)

    return _network(f"convhswish{channels}x{size}", build)


def mean_net(layers: int = 1, channels: int = 32, size: int = 16) -> Network:
    """``layers`` of relu(2x), then a global mean, as a classifier's pooling: Relax names the
    mean's reduction block after its input variable (``lv1_red`` after one layer, ``lv5_red``
    after three), a name that differs between networks for the same kernel."""

    def build(bb):
        x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = x
                for _ in range(layers):
                    y = bb.emit(relax.op.nn.relu(relax.op.multiply(y, relax.const(2.0))))
                out = bb.emit_output(relax.op.mean(y, axis=[2, 3], keepdims=True))
            bb.emit_func_output(out)

    return _network(f"mean{layers}", build)


def inverted_residual_net(channels: int = 16, size: int = 8, narrow: int = 24) -> Network:
    """MobileNetV2's block: 1x1 expansion to twice the channels + ReLU6, a 3x3 depthwise
    convolution with stride 2, a 1x1 projection to ``narrow`` channels."""
    wide = 2 * channels

    def build(bb):
        x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))
        expand = relax.Var("expand", relax.TensorType((wide, channels, 1, 1), "float32"))
        depthwise = relax.Var("depthwise", relax.TensorType((wide, 1, 3, 3), "float32"))
        project = relax.Var("project", relax.TensorType((narrow, wide, 1, 1), "float32"))
        with bb.function("main", [x, expand, depthwise, project]):
            with bb.dataflow():
                y = bb.emit(relax.op.clip(relax.op.nn.conv2d(x, expand), 0.0, 6.0))
                y = bb.emit(relax.op.nn.conv2d(y, depthwise, strides=2, padding=1, groups=wide))
                out = bb.emit_output(relax.op.nn.conv2d(y, project))
            bb.emit_func_output(out)

    return _network(f"invres{channels}x{size}", build)


def ffn_net(tokens: int = 16, hidden: int = 32) -> Network:
    """A transformer's feed-forward half: matmul to 4x the width, GELU, then softmax over a
    row (attention's), each a task of its own."""

    def build(bb):
        x = relax.Var("x", relax.TensorType((tokens, hidden), "float32"))
        w = relax.Var("w", relax.TensorType((hidden, 4 * hidden), "float32"))
        with bb.function("main", [x, w]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.gelu(relax.op.matmul(x, w)))
                out = bb.emit_output(relax.op.nn.softmax(y))
            bb.emit_func_output(out)

    return _network(f"ffn{tokens}x{hidden}", build)


def conv_silu_net(channels: int = 16, size: int = 8) -> Network:
    """conv2d + bias + SiLU as ONNX imports it (``x * sigmoid(x)``, EfficientNet's epilogue),
    then another conv2d + SiLU as torch.export imports it (``nn.silu``)."""

    def build(bb):
        x, w, b = params = _conv_params(channels, size, channels)
        with bb.function("main", params):
            with bb.dataflow():
                y = _conv_bias(bb, x, w, b)
                y = bb.emit(relax.op.multiply(y, relax.op.sigmoid(y)))
                out = bb.emit_output(relax.op.nn.silu(relax.op.nn.conv2d(y, w, padding=1)))
            bb.emit_func_output(out)

    return _network(f"convsilu{channels}x{size}", build)
