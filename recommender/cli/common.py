"""What every command shares: output helpers, checked number types and the common options.

Numbers are checked where argparse parses them (``type=``), scikit-learn style: a bad value
stops the command before any work with exit code 2 and a message naming the option, the range
and the value, e.g. ``argument --top-k: must be an int in the range [0, inf). Got -1 instead.``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from ..core import paths
from ..core.configuration import block_of
from ..core.errors import InputError


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


def relative(path: Path) -> str:
    """A path inside the checkout as written in shipped metadata: relative to the checkout, so
    it moves with it (and names the corpus)."""
    path = path.resolve()
    return (
        str(path.relative_to(paths.CHECKOUT)) if path.is_relative_to(paths.CHECKOUT) else str(path)
    )


def format_table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _number(kind: type, low: int, *, closed: bool) -> Callable[[str], int | float]:
    """An argparse ``type=``: a finite ``kind`` at least ``low`` (above it unless ``closed``)."""
    interval = f"{'[' if closed else '('}{low}, inf)"
    expected = f"{'an int' if kind is int else 'a float'} in the range {interval}"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {expected}. Got {text!r} instead.") from None
        if not math.isfinite(value) or value < low or (value == low and not closed):
            raise argparse.ArgumentTypeError(f"must be {expected}. Got {text} instead.")
        return value

    return parse


non_negative_int = _number(int, 0, closed=True)
positive_int = _number(int, 1, closed=True)
positive_float = _number(float, 0, closed=False)


def add_command(
    sub: argparse._SubParsersAction, name: str, func: Callable, help: str
) -> argparse.ArgumentParser:
    """A subcommand running ``func(args)``, with ``--json`` like every command."""
    p = sub.add_parser(name, help=help, description=help)
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument(
        "--corpus",
        default=None,
        metavar="NAME|PATH",
        help="the corpus of logs, dataset and model to use (default: the one tuned on the "
        "target's CPU, else the closest; `recommender corpora` lists them)",
    )
    p.set_defaults(func=func)
    return p


def profile_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        choices=["server", "edge"],
        default="server",
        help="server: every core, --top-k 3; edge: 1 core (TVM_NUM_THREADS=1), --budget 60, "
        "--top-n 1; explicit options override",
    )


def target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        default=None,
        help="'host' (default: this CPU), 'llvm -mcpu=... -num-cores=N' or JSON",
    )


def model_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model", help="zoo name, hf:NAME, tv:NAME, or a .onnx / .json[.gz] Relax / .pt2 file"
    )
    network_options(p)


def network_options(p: argparse.ArgumentParser) -> None:
    """How a model is imported: ONNX input shapes, a Hugging Face sequence length."""
    p.add_argument(
        "--input-shape",
        type=input_shape,
        action=_InputShapes,
        default={},
        metavar="NAME:1x3x224x224",
        help="fix the shape of an ONNX input (repeatable); every input with a dynamic "
        "dimension needs one",
    )
    p.add_argument(
        "--seq-len",
        type=positive_int,
        default=None,
        help="sequence length of an hf: model (default 128)",
    )


def network_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of ``load_network`` that ``network_options`` parsed."""
    return {"input_shapes": args.input_shape, "seq_len": args.seq_len}


def input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``--input-shape NAME:DIMS``, DIMS positive ints joined by ``x`` (the name may hold ':')."""
    name, _, dims = text.rpartition(":")
    try:
        shape = tuple(int(d) for d in dims.split("x"))
    except ValueError:
        shape = ()
    if not name or not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(
            "must be NAME:DIMS with DIMS positive ints joined by 'x', e.g. image:1x3x224x224. "
            f"Got {text!r} instead."
        )
    return name, shape


class _InputShapes(argparse.Action):
    """Collects repeated ``--input-shape`` into a dict; naming one input twice is an error."""

    def __call__(self, parser, namespace, values, option_string=None):
        name, shape = values
        shapes = dict(getattr(namespace, self.dest))
        if name in shapes:
            parser.error(f"argument {option_string}: input {name!r} is given twice")
        shapes[name] = shape
        setattr(namespace, self.dest, shapes)


def configuration_options(p: argparse.ArgumentParser) -> None:
    """How a new corpus prepares every network (``core.configuration``): given once, when the
    corpus is made; a corpus with logs keeps its own."""
    p.add_argument(
        "--layout",
        type=layout_name,
        default=None,
        metavar="native|NCHW{n}c",
        help="the layout a new corpus tunes convolutions in (default: the corpus's; native for "
        "a new one); NCHW16c blocks them by 16 channels, an AVX-512 register of fp32",
    )
    p.add_argument(
        "--fast-math",
        action="store_true",
        default=None,
        help="a new corpus computes exp, erf, tanh, softmax, GELU and sigmoid as vectorisable "
        "polynomials",
    )


def layout_name(text: str) -> str:
    try:
        block_of(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def rpc_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rpc",
        default=None,
        metavar="HOST:PORT:KEY",
        help="time on a device registered with a TVM RPC tracker",
    )


def pool_with_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pool-with",
        type=Path,
        action="append",
        default=[],
        metavar="DATASET",
        help="train on this dataset too (another CPU's corpus, same configuration; repeatable): "
        "pooled, the model ranked better than each CPU's own (docs/results/cross_cpu_models.json)",
    )


def dataset_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dataset",
        type=Path,
        default=None,
        help="transfer-benefit dataset dir (default: the corpus's datasets/transfer)",
    )
