"""The shipped model zoo: the transfer-tuning paper's 11 networks as weight-less Relax IR."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tvm

from ..core import paths
from ..core.errors import InputError
from .network import InputSpec, Network


@dataclass(frozen=True)
class ZooEntry:
    name: str
    file: Path
    family: str
    source: str
    inputs: tuple[InputSpec, ...]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "source": self.source,
            "inputs": [spec.to_json() for spec in self.inputs],
        }


@cache
def zoo_index(zoo_dir: Path | None = None) -> dict[str, ZooEntry]:
    """Read ``index.json`` of the zoo (written by ``scripts/build_zoo.py``)."""
    zoo_dir = zoo_dir or paths.zoo()
    index_path = zoo_dir / "index.json"
    try:
        index = json.loads(index_path.read_text())
        return {
            name: ZooEntry(
                name=name,
                file=zoo_dir / item["file"],
                family=item["family"],
                source=item["source"],
                inputs=tuple(
                    InputSpec(i["name"], tuple(i["shape"]), i["dtype"]) for i in item["inputs"]
                ),
            )
            for name, item in index["models"].items()
        }
    except FileNotFoundError:
        raise InputError("zoo index missing; run scripts/build_zoo.py", path=index_path) from None
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise InputError(f"zoo index is corrupt ({err!r})", path=index_path) from None


def families(networks: dict | None = None) -> dict[str, str]:
    """Model family of every zoo model, plus of ``networks`` (name: Network) that name one."""
    found = {name: entry.family for name, entry in zoo_index().items()}
    found.update({name: net.family for name, net in (networks or {}).items() if net.family})
    return found


def zoo_names() -> list[str]:
    return list(zoo_index())


def zoo_entry(name: str) -> ZooEntry:
    """The index entry of a zoo model; an unknown name is an input error that lists the zoo."""
    index = zoo_index()
    if name not in index:
        raise InputError(f"unknown zoo model {name!r}; choose one of: {', '.join(index)}")
    return index[name]


def load_zoo_network(name: str, *, seed: int = 0) -> Network:
    """Load a zoo network with seeded random weights, bound on first use (needs TVM only)."""
    entry = zoo_entry(name)
    try:
        text = gzip.decompress(entry.file.read_bytes()).decode()
        mod = tvm.ir.load_json(text)
    except FileNotFoundError:
        raise InputError("zoo model file missing", path=entry.file) from None
    except (OSError, EOFError, UnicodeDecodeError, RuntimeError, ValueError) as err:
        raise InputError(f"zoo model file is corrupt ({err})", path=entry.file) from None
    return Network(
        name=name,
        graph=mod,
        inputs=entry.inputs,
        family=entry.family,
        source=entry.source,
        weights_seed=seed,
    )
