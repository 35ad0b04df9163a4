"""A corpus's configuration: how every network is prepared before it is lowered to kernels.

The same network gives other kernels in another configuration (convolutions blocked by 16
channels, ``erf`` as a polynomial), so a log's records match only networks prepared the way its
own were. A corpus has one configuration, named in its ``corpus.json`` (absent: the default,
the paper's: layouts as imported, exact math); every command prepares networks by it, and every
log records it in its provenance, so that logs of two configurations are never mixed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

FILE = "corpus.json"
NATIVE = "native"  # the layouts the network was imported with


@dataclass(frozen=True)
class Configuration:
    """``layout``: ``native`` or ``NCHW{n}c`` (convolutions blocked by n channels, NCHW16c one
    AVX-512 register of fp32; ``tasks.layouts``). ``fast_math``: ``exp``, ``erf``, ``tanh``,
    softmax, GELU and sigmoid as vectorisable polynomials instead of a libm call per element
    (``tasks.fast_math``)."""

    layout: str = NATIVE
    fast_math: bool = False

    def __post_init__(self):
        block_of(self.layout)
        if not isinstance(self.fast_math, bool):
            raise InputError(f"fast_math must be true or false, not {self.fast_math!r}")

    @classmethod
    def from_json(cls, data: dict | None, *, where: Path | None = None) -> Configuration:
        """From a corpus's ``corpus.json`` or a log's provenance (absent: the default); an
        error names ``where`` it was read."""
        if data is None:
            return cls()
        if not isinstance(data, dict) or set(data) - {f.name for f in dataclasses.fields(cls)}:
            raise InputError(f"not a configuration: {data!r} (keys: layout, fast_math)", path=where)
        try:
            return cls(**data)
        except InputError as err:
            raise InputError(str(err), path=where) from None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        return self.layout + (", fast math" if self.fast_math else "")


def block_of(layout: str) -> int | None:
    """The channel block of a blocked layout ``NCHW{n}c`` (n >= 2), None for ``native``;
    anything else is an error naming the layouts there are."""
    match = re.fullmatch(r"NCHW(\d+)c", str(layout))
    if layout != NATIVE and not (match and int(match[1]) >= 2):
        raise InputError(
            f"unknown layout {layout!r}: {NATIVE!r} (as the network has it) or NCHW{{n}}c, "
            "convolutions blocked by n channels (NCHW16c: one AVX-512 register of fp32)"
        )
    return int(match[1]) if match else None


DEFAULT = Configuration()


def read(root: Path) -> Configuration:
    """The configuration of the corpus at ``root``."""
    path = root / FILE
    if not path.is_file():
        return DEFAULT
    try:
        return Configuration.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, InputError) as err:  # the error names the file: once
        raise InputError(f"not a corpus configuration: {err}", path=path) from None


def configure(root: Path, *, layout: str | None = None, fast_math: bool | None = None) -> None:
    """Set what is given of the corpus's configuration, once: a corpus with logs keeps its
    own, and giving it again is harmless."""
    current = read(root)
    given = {k: v for k, v in (("layout", layout), ("fast_math", fast_math)) if v is not None}
    wanted = dataclasses.replace(current, **given)
    if wanted == current:
        return
    if any((root / "datasets" / "logs").glob("*/provenance.json")):
        raise InputError(
            f"this corpus's configuration is {current}, not {wanted}: logs of two "
            "configurations are never mixed; give the other a corpus of its own (--corpus NAME)",
            path=root,
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / FILE).write_text(json.dumps(wanted.to_json(), indent=1) + "\n")
