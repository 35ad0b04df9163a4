"""``recommender dataset build``: the transfer-benefit dataset, measured pair by pair."""

from __future__ import annotations

import argparse
import dataclasses
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
    p.add_argument(
        "--training-targets",
        nargs="*",
        default=None,
        metavar="MODEL",
        help="also measure these networks as targets only (zoo, hf:, tv: names or files; "
        "without names: the 23 of learn.target_networks.TRAINING_TARGETS): more kernels to "
        "learn from, never held out by the evaluation",
    )
    target_options(p)
    rpc_option(p)


def cmd_dataset_build(args) -> int:
    from ..core.targets import RemoteDevice, parse_target
    from ..learn.dataset import build_dataset
    from ..learn.target_networks import TRAINING_TARGETS
    from ..logs.sources import log_dir
    from ..networks.zoo import load_zoo_network, zoo_names

    target = parse_target(args.target)
    names = args.networks or [n for n in zoo_names() if (paths.logs() / n).is_dir()]
    logs = {n: log_dir(n) for n in names}
    out = args.out or paths.transfer()
    networks = {n: load_zoo_network(n) for n in names}
    if args.training_targets is not None:
        networks |= training_targets(args.training_targets or list(TRAINING_TARGETS), logs)
    written = build_dataset(
        networks,
        logs,
        out,
        target,
        top_n=args.top_n,
        remote=RemoteDevice.parse(args.rpc) if args.rpc else None,
        progress=not args.json,
        training_targets=[n for n in networks if n not in logs],
    )
    result = {"directory": str(out), "kernels": len(written), "networks": list(networks)}
    if args.json:
        print_json(result)
    else:
        print(f"{len(written)} kernels of {len(networks)} networks in {out}")
    return 0


def training_targets(specs: list[str], logs: dict) -> dict:
    """The networks ``specs`` name, loaded, each with its family where the default list has
    one; a name that is also a source is refused (it would be held out and trained on)."""
    from tqdm import tqdm

    from ..core.errors import InputError
    from ..learn.target_networks import TRAINING_TARGETS
    from ..networks.frontends import load_network

    loaded = {}
    for spec in tqdm(specs, desc="training targets", unit="network"):
        network = load_network(spec)
        if network.name in logs:
            raise InputError(f"--training-targets: {spec} is a logged network, a source")
        family = TRAINING_TARGETS.get(spec, network.family)
        loaded[network.name] = dataclasses.replace(network, family=family)
    return loaded
