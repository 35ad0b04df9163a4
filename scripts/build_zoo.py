"""Regenerate the model zoo: the transfer-tuning paper's 11 networks as weight-less Relax IR.

Needs the ``zoo`` extra (torch, torchvision model code, transformers)::

    pip install -e '.[zoo]' && pip install --no-deps torchvision==0.28.0
    python scripts/build_zoo.py [--only resnet18 ...]

Weights are random and not stored: schedules depend on shapes, not values. Integer buffers
(BERT's position ids) are kept as constants, because random indices would read out of bounds.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from recommender.networks.torch_zoo import NETWORKS, torch_module, versions

ROOT = Path(__file__).resolve().parent.parent
ZOO_DIR = ROOT / "datasets" / "zoo"


def export(name: str) -> dict:
    wrapped, inputs = torch_module(name)
    with torch.no_grad():
        program = torch.export.export(wrapped, tuple(inputs.values()))
    mod = from_exported_program(program, keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)
    main = mod["main"]
    num_input = int(main.attrs["num_input"])
    weights = main.params[num_input:]
    # Keep integer buffers (position ids) as constants: their values are indices.
    integer = {
        var.name: value
        for var, value in zip(weights, params["main"])
        if not str(value.dtype).startswith("float")
    }
    if integer:
        mod = relax.transform.BindParams("main", integer)(mod)
    text = tvm.ir.save_json(mod).encode()
    path = ZOO_DIR / f"{name}.json.gz"
    path.write_bytes(gzip.compress(text, mtime=0))
    input_vars = main.params[:num_input]
    return {
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "family": NETWORKS[name].family,
        "source": NETWORKS[name].source,
        "inputs": [
            {"name": n, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            for n, t in zip([v.name for v in input_vars], inputs.values())
        ],
        "weights": len(weights) - len(integer),
        "constants_kept": sorted(integer),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(NETWORKS), help="networks to rebuild")
    args = parser.parse_args()
    ZOO_DIR.mkdir(parents=True, exist_ok=True)
    index_path = ZOO_DIR / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"models": {}}
    for name in args.only or list(NETWORKS):
        start = time.perf_counter()
        index["models"][name] = export(name)
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    index.update(
        schema=1,
        generated=datetime.date.today().isoformat(),
        versions={
            **versions(),
            "tvm": tvm.__version__,
        },
        batch=1,
        weights="random, bound at load time (seeded)",
    )
    index["models"] = {k: index["models"][k] for k in NETWORKS if k in index["models"]}
    index_path.write_text(json.dumps(index, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
