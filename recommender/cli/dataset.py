"""``recommender dataset build``: the transfer-benefit dataset, measured pair by pair."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core import paths
from .common import add_command, positive_int, print_json, rpc_option, target_options


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub,
        "dataset",
        cmd_dataset_build,
        "build (or resume) the transfer-benefit dataset: every same-class "
        "(source record, kernel) pair of the logged networks, measured",
    )
    p.add_argument("action", choices=["build"])
    p.add_argument("networks", nargs="*", help="zoo networks (default: every logged one)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="dataset dir, resumable (default: the corpus's datasets/transfer)",
    )
    p.add_argument("--top-n", type=positive_int, default=3, help="records per source workload")
    target_options(p)
    rpc_option(p)


def cmd_dataset_build(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..learn.dataset import build_dataset
    from ..logs.sources import log_dir
    from ..networks.zoo import load_zoo_network, zoo_names

    target = parse_target(args.target)
    names = args.networks or [n for n in zoo_names() if (paths.logs() / n).is_dir()]
    logs = {n: log_dir(n) for n in names}
    out = args.out or paths.transfer()
    written = build_dataset(
        {n: load_zoo_network(n) for n in names},
        logs,
        out,
        target,
        top_n=args.top_n,
        remote=RemoteDevice.parse(args.rpc) if args.rpc else None,
        progress=not args.json,
    )
    result = {"directory": str(out), "kernels": len(written), "networks": names}
    if args.json:
        print_json(result)
    else:
        print(f"{len(written)} kernels of {len(names)} networks in {out}")
    return 0
