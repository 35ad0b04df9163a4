"""Importing TVM without importing PyTorch first.

``tvm_ffi`` imports ``torch`` at its own import whenever torch is installed (a workaround for a
symbol conflict seen on Windows only), which is 2-3 s of every command that never touches torch:
most of a warm ``recommend`` (docs/tvm.md, "import tvm"). Torch stays importable afterwards and
the torch frontends (``tv:``, ``hf:``, ``.pt2``) work as before; what a process importing TVM
this way loses is tvm_ffi's conversion of ``torch.dtype`` arguments and its optional fast DLPack
path for torch tensors (they still pass through ``__dlpack__``). Nothing in the project uses
either.
"""

from __future__ import annotations

import sys


def import_tvm_without_torch() -> None:
    """Import ``tvm`` with ``import torch`` failing for its duration; a no-op when either is
    imported already (the process then keeps what it has)."""
    if "tvm" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes `import torch` raise
    try:
        import tvm  # noqa: F401
    finally:
        del sys.modules["torch"]
