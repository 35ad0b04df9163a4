"""A log's files as shipped: gzipped in git (``NAME.gz``, about 25x smaller), plain for TVM.

TVM reads and appends the plain files; they are recreated from the packed ones on first use
and packed again when a collection stops, byte-identical for identical content (no time stamp
in the gzip header), so an unchanged log leaves git clean.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path

from ..core.errors import InputError


def pack(directory: Path, names: Iterable[str]) -> None:
    """Write ``NAME.gz`` beside each plain file ``NAME`` of ``directory``."""
    for name in names:
        plain = directory / name
        if plain.exists():
            packed = directory / (name + ".gz")
            tmp = packed.with_name(packed.name + ".tmp")
            with tmp.open("wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
                out.write(plain.read_bytes())
            tmp.replace(packed)


def unpack(directory: Path, names: Iterable[str]) -> None:
    """Recreate each plain file from ``NAME.gz`` where it is missing, or is an older prefix of
    it (a pulled log that grew); a plain file that differs otherwise is left to the log's
    validation. A plain file as large as the packed content is not decompressed at all."""
    for name in names:
        plain, packed = directory / name, directory / (name + ".gz")
        if not packed.exists():
            continue
        if plain.exists() and plain.stat().st_size >= _unpacked_size(packed):
            continue  # nothing to recreate: decompressing would only confirm it
        try:
            content = gzip.decompress(packed.read_bytes())
        except (OSError, EOFError) as err:
            raise InputError(f"corrupt packed log ({err})", path=packed) from None
        if not plain.exists() or (
            plain.stat().st_size < len(content) and content.startswith(plain.read_bytes())
        ):
            plain.write_bytes(content)


def _unpacked_size(packed: Path) -> int:
    """The size gzip's trailer gives for the decompressed content (ISIZE, modulo 2**32: a log
    stays far below 4 GB); a file too short to have one gives -1 (decompressing will say)."""
    with packed.open("rb") as f:
        if f.seek(0, 2) < 18:  # header 10 + trailer 8
            return -1
        f.seek(-4, 2)
        return int.from_bytes(f.read(4), "little")
