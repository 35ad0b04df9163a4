"""The zoo's networks as PyTorch modules: what the zoo was exported from, and the eager baseline.

PyTorch eager is what a user runs without a compiler, so the evaluation times it on the same
input shape, interleaved with TVM's builds. Importing this module needs the ``zoo`` extra
(torch, torchvision's model code, transformers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..core.timing import seconds_per_run
from .torch_compat import define_torchvision_schemas

define_torchvision_schemas()

import torchvision  # noqa: E402
import transformers  # noqa: E402

IMAGE = (1, 3, 224, 224)
SEQUENCE = 256  # the paper's sequence length for BERT and MobileBERT

Builder = Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]]


@dataclass(frozen=True)
class TorchNetwork:
    family: str
    source: str
    build: Builder


def _vision(name: str, family: str) -> TorchNetwork:
    def build():
        model = getattr(torchvision.models, name)(weights=None)
        return model, {"image": torch.randn(*IMAGE)}

    return TorchNetwork(family, f"torchvision.models.{name}", build)


def _bert(config_name: str, family: str) -> TorchNetwork:
    def build():
        config_cls = getattr(transformers, f"{config_name}Config")
        model_cls = getattr(transformers, f"{config_name}Model")
        model = model_cls(config_cls())
        ids = torch.randint(0, 1000, (1, SEQUENCE), dtype=torch.int64)
        return model, {"input_ids": ids}

    return TorchNetwork(family, f"transformers.{config_name}Model({config_name}Config())", build)


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


def versions() -> dict[str, str]:
    return {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "transformers": transformers.__version__,
    }


def torch_module(name: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """The zoo network ``name`` in inference mode (seeded random weights), and its inputs."""
    torch.manual_seed(0)
    model, inputs = NETWORKS[name].build()
    if name == "googlenet":  # the auxiliary classifiers only run in training
        model.aux_logits = False
        model.aux1 = model.aux2 = None
    wrapper = _Tokens if "input_ids" in inputs else _Image
    return wrapper(model.eval()).eval(), inputs


def eager_timer(name: str, threads: int) -> Callable[[], float]:
    """A timing round of ``name`` in PyTorch eager on ``threads`` threads: one warm-up run,
    then runs for at least 0.2 s; returns seconds per run (TVM's ``time_evaluator`` protocol)."""
    module, inputs = torch_module(name)
    args = tuple(inputs.values())

    def one_round() -> float:
        torch.set_num_threads(threads)
        with torch.inference_mode():
            return seconds_per_run(lambda: module(*args))

    return one_round
