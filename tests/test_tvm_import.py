"""The command line imports TVM without PyTorch (tvm_ffi would import torch first, 2-3 s of
every command); torch and the torch frontend still work afterwards in the same process."""

import subprocess
import sys

AFTER_A_TORCHLESS_IMPORT = """
import sys
from recommender.core.tvm_import import import_tvm_without_torch

import_tvm_without_torch()
assert "tvm" in sys.modules and "torch" not in sys.modules

import numpy as np
import torch
import tvm
from recommender.networks.frontends import _relax_from_program

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))

x = torch.rand(1, 4, 8, 8)
mod = _relax_from_program(torch.export.export(Tiny().eval(), (x,)), source="Tiny")
assert "main" in [gv.name_hint for gv in mod.functions]
np.testing.assert_array_equal(tvm.runtime.from_dlpack(x).numpy(), x.numpy())  # via __dlpack__
print("ok")
"""


def test_torch_and_its_frontend_work_after_tvm_was_imported_without_it():
    out = subprocess.run(
        [sys.executable, "-c", AFTER_A_TORCHLESS_IMPORT], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
