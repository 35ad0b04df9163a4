"""Make torchvision importable beside the CPU torch build, for torchvision and transformers.

torchvision's compiled ops here are a CUDA build that cannot load, and ``import torchvision``
then fails with "operator torchvision::nms does not exist". transformers imports torchvision
when it is installed, so building a BERT fails the same way. Model code never calls these ops:
defining their two schemas before the import is enough.
"""

from __future__ import annotations

import contextlib

import torch


def define_torchvision_schemas() -> None:
    """Define ``torchvision::nms`` and ``qnms`` unless a working torchvision already did."""
    for schema in ("nms", "qnms"):
        with contextlib.suppress(RuntimeError):  # already defined
            torch.library.define(
                f"torchvision::{schema}",
                "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
            )
