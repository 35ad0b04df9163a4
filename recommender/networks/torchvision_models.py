"""torchvision's classification networks by name (``tv:resnet34``), built offline with random
weights.

torchvision ships each architecture's code: ``get_model(name, weights=None)`` builds it without
a download, and seeded random weights do for tuning (schedules depend on shapes). The model
goes to Relax through torch.export at batch 1, 224x224 (Inception v3: 299x299); every one of
torchvision's classifiers imports so (``docs/import_matrix.md``). Needs the ``zoo`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import InputError

if TYPE_CHECKING:
    import torch

PREFIX = "tv:"
LARGE_INPUT = {"inception_v3": 299}  # the others take 224x224


def is_tv_name(spec: str) -> bool:
    return spec.startswith(PREFIX)


def names() -> list[str]:
    """torchvision's classification networks, sorted."""
    return sorted(_torchvision().models.list_models(module=_torchvision().models))


def known_name(spec: str) -> str:
    """``tv:resnet34`` -> ``resnet34``; an unknown one lists what there is."""
    name = spec.removeprefix(PREFIX)
    if name not in names():
        raise InputError(
            f"unknown torchvision classifier {spec!r}; choose one of: "
            + ", ".join(PREFIX + known for known in names())
        )
    return name


def torch_module(spec: str) -> tuple[torch.nn.Module, torch.Tensor]:
    """The model ``spec`` (``tv:NAME``) in inference mode, seeded random weights, and an image."""
    import torch

    name = known_name(spec)
    torch.manual_seed(0)
    model = _torchvision().models.get_model(name, weights=None)
    if hasattr(model, "aux_logits"):  # GoogLeNet, Inception v3: auxiliary heads train only
        model.aux_logits = False
        for head in ("aux1", "aux2", "AuxLogits"):
            if hasattr(model, head):
                setattr(model, head, None)
    size = LARGE_INPUT.get(name, 224)
    return model.eval(), torch.randn(1, 3, size, size)


def export_program(spec: str) -> torch.export.ExportedProgram:
    """The model ``spec`` exported at batch 1 (its one input: the image)."""
    import torch

    model, image = torch_module(spec)
    return torch.export.export(model, (image,))


def _torchvision():
    try:
        from .torch_compat import define_torchvision_schemas

        define_torchvision_schemas()
        import torchvision
    except ImportError:
        raise InputError("tv: models need torch and torchvision: pip install '.[zoo]'") from None
    return torchvision
