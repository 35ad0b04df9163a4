"""Imported networks kept as Relax JSON, so that a network is exported and imported once.

Importing an ``hf:`` or ``tv:`` network (torch.export, then TVM's frontend) takes 5-15 s, an
ONNX file up to 40 s (onnx-simplifier), where ranking the same network again takes about a
second; the dataset build loads its 23 training targets on every resume. The weight-less
Relax module an import made is kept under ``paths.cache_root()/networks``, keyed by what it
came from (a name with its settings, or a file's content with the options), the versions of
TVM and of the packages that import, and the source of this package's importers, so that a fix
to one makes every entry stale. A failed import is not kept; an unreadable entry is imported
again. Deleting the directory is always safe.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import tvm

from ..core import paths

logger = logging.getLogger(__name__)

IMPORTERS = ("tvm", "apache-tvm", "torch", "torchvision", "transformers", "onnx", "onnxsim")


def cached_import(source: dict, make: Callable[[], tvm.IRModule]) -> tvm.IRModule:
    """The module ``make`` imports from ``source`` (JSON-able: what it is made from), read from
    the cache when an import of the same source, versions and importers made it before."""
    path = _entry(source)
    try:
        mod = tvm.ir.load_json(gzip.decompress(path.read_bytes()).decode())
        if isinstance(mod, tvm.IRModule):
            return mod
    except FileNotFoundError:
        pass
    except Exception as err:  # noqa: BLE001 - gzip, unicode and TVM's parser errors: import again
        logger.warning("%s: unreadable cached import (%s), imported again", path, err)
    mod = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(gzip.compress(tvm.ir.save_json(mod).encode(), mtime=0))
        tmp.replace(path)
    except OSError as err:  # a read-only cache: imported every time, as without one
        logger.warning("%s: import not cached (%s)", path, err)
    return mod


def file_digest(path: Path) -> str:
    """The content of a model file, hashed: the same file under another name or place hits."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(source: dict) -> Path:
    key = {"source": source, "versions": _versions(), "importers": _importers_digest()}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return paths.cache_root() / "networks" / f"{digest}.json.gz"


def _versions() -> dict[str, str | None]:
    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {package: version(package) for package in IMPORTERS}


def _importers_digest() -> str:
    """This package's importing code (``networks/*.py``), hashed."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()
