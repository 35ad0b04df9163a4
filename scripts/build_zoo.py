"""Regenerate the model zoo: the transfer-tuning paper's 11 networks as weight-less Relax IR.

Needs the ``zoo`` extra (torch, torchvision model code, transformers)::

    pip install -e '.[zoo]' && pip install --no-deps torchvision==0.28.0
    python scripts/build_zoo.py [--only resnet18 ...]

Weights are random and not stored: schedules depend on shapes, not values. Integer buffers
(BERT's position ids) are kept as constants, because random indices would read out of bounds.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

# torchvision's compiled ops are a CUDA build that cannot load here; the model code never calls
# them, but importing torchvision registers fake kernels for these two schemas.
for _schema in ("nms", "qnms"):
    with contextlib.suppress(RuntimeError):  # already defined by a working torchvision build
        torch.library.define(
            f"torchvision::{_schema}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
        )

import torchvision  # noqa: E402
import transformers  # noqa: E402
import tvm  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.torch import from_exported_program  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ZOO_DIR = ROOT / "datasets" / "zoo"
IMAGE = (1, 3, 224, 224)
SEQUENCE = 256  # the paper's sequence length for BERT and MobileBERT


def _vision(name: str, family: str):
    def build():
        model = getattr(torchvision.models, name)(weights=None)
        return model, {"image": torch.randn(*IMAGE)}

    return family, f"torchvision.models.{name}", build


def _bert(config_name: str, family: str):
    def build():
        config_cls = getattr(transformers, f"{config_name}Config")
        model_cls = getattr(transformers, f"{config_name}Model")
        model = model_cls(config_cls())
        ids = torch.randint(0, 1000, (1, SEQUENCE), dtype=torch.int64)
        return model, {"input_ids": ids}

    return family, f"transformers.{config_name}Model({config_name}Config())", build


NETWORKS = {
    "resnet18": _vision("resnet18", "resnet"),
    "resnet50": _vision("resnet50", "resnet"),
    "alexnet": _vision("alexnet", "alexnet"),
    "vgg16": _vision("vgg16", "vgg"),
    "mobilenetv2": _vision("mobilenet_v2", "mobilenet"),
    "googlenet": _vision("googlenet", "inception"),
    "mnasnet1_0": _vision("mnasnet1_0", "mnasnet"),
    "efficientnetb0": _vision("efficientnet_b0", "efficientnet"),
    "efficientnetb4": _vision("efficientnet_b4", "efficientnet"),
    "bert": _bert("Bert", "bert"),
    "mobilebert": _bert("MobileBert", "bert"),
}


class _Image(torch.nn.Module):
    """Names the input ``image`` in the exported graph; returns one tensor."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, image):
        return self.model(image)


class _Tokens(_Image):
    """Names the input ``input_ids``; returns the last hidden state, not BERT's dataclass."""

    def forward(self, input_ids):
        return self.model(input_ids).last_hidden_state


def export(name: str) -> dict:
    family, source, build = NETWORKS[name]
    torch.manual_seed(0)
    model, inputs = build()
    if name == "googlenet":
        model.aux_logits = False
        model.aux1 = model.aux2 = None
    wrapper = _Tokens if "input_ids" in inputs else _Image
    wrapped = wrapper(model.eval()).eval()
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
        "family": family,
        "source": source,
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
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "transformers": transformers.__version__,
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
