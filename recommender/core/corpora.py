"""Corpora, one per CPU, and the one a command uses: chosen for its target.

A corpus is a directory ``corpora/<cpu>/`` holding the tuning logs (``datasets/logs``), the
transfer-benefit dataset (``datasets/transfer``), the trained cost model (``models/default``)
and the evaluation's state and pages (``out/``, ``docs/``), all made on that CPU. Schedules are
loop transformations, so they transfer between CPUs of one architecture, but their timings and
the model's ranking are the CPU's own.

The choice, in order: ``--corpus NAME|PATH``; ``$RECOMMENDER_HOME``; the corpus whose CPU is the
target's ``-mcpu``; else, among corpora of the target's architecture, the closest CPU: the
largest share of LLVM features in common (ISA extensions such as AVX-512 and AVX2, and the
tuning flags LLVM sets for the CPU, e.g. ``prefer-256-bit``), the same vendor breaking ties;
else an error. A corpus needs a cost model to rank with: on its own CPU its own; elsewhere, or
while it has none, preferably one trained on networks prepared in its configuration
(``ranking_model``), so
a corpus without a model of its own serves once it has logs of most of the zoo
(``SOURCE_NETWORKS``; one still being tuned gives way meanwhile). Choosing a corpus of another
CPU warns once, naming both CPUs and the command that tunes a corpus for this one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tvm
from tvm.target import codegen

from .configuration import DEFAULT, Configuration
from .configuration import read as read_configuration
from .errors import InputError

logger = logging.getLogger(__name__)

CHECKOUT = Path(__file__).resolve().parent.parent.parent
CORPORA = CHECKOUT / "corpora"
POOLED_MODEL = CHECKOUT / "models" / "pooled"  # trained on several CPUs' corpora (its metadata)
# With a borrowed model to rank, a corpus serves without a model of its own once it has logs of
# this many networks (the zoo's 11 but one still being tuned): on a Zen 5, the Zen 4 corpus's
# logs gave ResNet-18 11.30 ms where the Zen 3 corpus's, with a model, gave 20.87 ms
# (docs/results/cross_cpu_znver5_resnet18.json); on a Zen 4, its own logs ranked by the Zen 5's
# model beat the Zen 5's logs (docs/results/cross_cpu_znver4_resnet18.json).
SOURCE_NETWORKS = 10
TUNE_HERE = ".venv/bin/python scripts/rebuild_corpus.py"  # writes corpora/<this CPU>/


@dataclass(frozen=True)
class Corpus:
    """One CPU's corpus, described from its logs' provenance."""

    name: str
    root: Path
    cpu: str  # LLVM's -mcpu the logs were tuned for
    arch: str  # the machine's architecture, e.g. x86_64
    networks: tuple[str, ...]
    trials_per_task: int | None
    dataset_files: int
    has_model: bool
    configuration: Configuration = DEFAULT

    @classmethod
    def read(cls, root: Path) -> Corpus | None:
        """The corpus at ``root``, or None when it holds no tuning log."""
        provenances = sorted((root / "datasets" / "logs").glob("*/provenance.json"))
        if not provenances:
            return None
        try:
            first = json.loads(provenances[0].read_text())
            cpu = first["target_key"]["mcpu"] or "generic"
            arch = first["target_key"]["mtriple"].split("-")[0] or first["machine"]["arch"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise InputError(
                f"not a tuning log's provenance ({err})", path=provenances[0]
            ) from None
        return cls(
            name=root.name,
            root=root,
            cpu=cpu,
            arch=arch,
            networks=tuple(p.parent.name for p in provenances),
            trials_per_task=first.get("budget", {}).get("trials_per_task"),
            dataset_files=sum(1 for _ in (root / "datasets" / "transfer").glob("*/*.npz")),
            has_model=(root / "models" / "default" / "metadata.json").is_file(),
            configuration=read_configuration(root),
        )

    @classmethod
    def new(cls, root: Path, cpu: str, arch: str) -> Corpus:
        """A corpus without logs yet, to be made at ``root`` (its configuration may be set)."""
        return cls(root.name, root, cpu, arch, (), None, 0, False, read_configuration(root))

    @property
    def logs(self) -> Path:
        """Its tuning logs, one directory per network."""
        return self.root / "datasets" / "logs"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "root": str(self.root),
            "cpu": self.cpu,
            "arch": self.arch,
            "isa": sorted(
                f for f in cpu_features(self.cpu) if f.startswith(("avx", "sse4", "fma"))
            ),
            "networks": list(self.networks),
            "trials_per_task": self.trials_per_task,
            "dataset_files": self.dataset_files,
            "model": self.has_model,
            "configuration": self.configuration.to_json(),
        }


@dataclass(frozen=True)
class Choice:
    corpus: Corpus
    why: str
    exact: bool  # tuned on the target's CPU
    model: Path  # the cost model to rank with (``ranking_model``)


def find_corpora(base: Path = CORPORA) -> list[Corpus]:
    """Every corpus under ``base`` (a directory per CPU)."""
    found = [Corpus.read(d) for d in sorted(base.iterdir()) if d.is_dir()] if base.is_dir() else []
    return [c for c in found if c is not None]


@cache
def cpu_features(cpu: str) -> frozenset[str]:
    """LLVM's features of ``cpu`` (enabled ones, without the ``+``)."""
    target = tvm.target.Target({"kind": "llvm", "mcpu": cpu})
    return frozenset(f.lstrip("+") for f in codegen.llvm_get_cpu_features(target))


def closeness(a: str, b: str) -> float:
    """The share of LLVM features two CPUs have in common (Jaccard), 1.0 for the same CPU."""
    fa, fb = cpu_features(a), cpu_features(b)
    return len(fa & fb) / max(len(fa | fb), 1)


def model_configuration(model: Path) -> Configuration:
    """How the networks a saved cost model was trained on were prepared: its (first) dataset's
    corpus's configuration; the paper's for models that do not say."""
    try:
        data = json.loads((model / "metadata.json").read_text()).get("training_data")
        directory = Path(data["directory"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return DEFAULT
    root = (directory if directory.is_absolute() else CHECKOUT / directory).parent.parent
    return read_configuration(root)


def ranking_model(corpus: Corpus, cpu: str, pooled: Path, corpora: list[Corpus]) -> Path:
    """The cost model to rank ``corpus``'s candidates on ``cpu``. On its own CPU, its own. Else,
    or while it has none, preferably a model trained on networks prepared in the corpus's
    configuration: the pooled one (several CPUs' corpora) if so, else the closest CPU's own of
    that configuration among ``corpora``; else the pooled one whatever its configuration.
    Blocked convolutions ranked by a model of native ones came out 12-15% slower on ResNet-18
    (a Zen 4: 23.7-26.3 ms against 19.1-22.4 ms with the Zen 5's NCHW16c model,
    docs/results/cross_cpu_znver4_resnet18*.json); across CPUs of one configuration, pooling
    ranked best (docs/results/cross_cpu_models.json)."""
    own = corpus.root / "models" / "default"
    if corpus.has_model and corpus.cpu == cpu:
        return own
    has_pooled = (pooled / "metadata.json").is_file()
    if has_pooled and model_configuration(pooled) == corpus.configuration:
        return pooled
    alike = [
        c
        for c in corpora
        if c.has_model and c.configuration == corpus.configuration and c.arch == corpus.arch
    ]
    if alike:
        return max(alike, key=lambda c: closeness(cpu, c.cpu)).root / "models" / "default"
    return pooled if has_pooled else own


def _readable_corpora(base: Path) -> list[Corpus]:
    """The corpora under ``base`` that read: one broken corpus lends no model, and breaks no
    command that does not use it."""
    found = []
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        with contextlib.suppress(InputError):
            if directory.is_dir() and (corpus := Corpus.read(directory)) is not None:
                found.append(corpus)
    return found


def _vendor(cpu: str) -> str:
    return "amd" if cpu.startswith(("znver", "bdver", "btver", "amdfam")) else "other"


def choose(
    target: tvm.target.Target,
    explicit: str | Path | None = None,
    *,
    writing: bool = False,
    base: Path = CORPORA,
    pooled: Path = POOLED_MODEL,
) -> Choice:
    """The corpus for ``target`` (see the module docstring for the order). ``writing``: for
    commands that measure into it (collect, dataset build), only the target's own CPU will do;
    without one, ``corpora/<cpu>/`` is where it is made. ``pooled``: the model trained on every
    corpus (``ranking_model``)."""
    cpu = str(target.attrs.get("mcpu", "") or codegen.llvm_get_system_cpu())
    triple = str(target.attrs.get("mtriple", "") or codegen.llvm_get_system_triple())
    arch = triple.split("-")[0]
    given = explicit or os.environ.get("RECOMMENDER_HOME")
    if given:
        how = "--corpus" if explicit else "RECOMMENDER_HOME"
        return _given(given, cpu, how, writing, base, pooled)
    if writing:
        home = base / cpu
        corpus = Corpus.read(home) or Corpus.new(home, cpu, arch)
        model = ranking_model(corpus, cpu, pooled, _readable_corpora(base))
        return Choice(corpus, f"the corpus of this target's CPU ({cpu})", True, model)
    corpora = find_corpora(base)
    same_arch = [c for c in corpora if c.arch == arch]

    def model(c: Corpus) -> Path:
        return ranking_model(c, cpu, pooled, corpora)

    # a corpus still being tuned has no cost model to rank with: one that has serves meanwhile;
    # with a borrowed model, most of the zoo's logs are enough
    ready = [
        c
        for c in same_arch
        if c.has_model
        or (len(c.networks) >= SOURCE_NETWORKS and (model(c) / "metadata.json").is_file())
    ] or same_arch
    # a CPU's variants (another configuration: corpora/<cpu>-nchw16c/) give way to corpora/<cpu>/
    own = sorted((c for c in same_arch if c.cpu == cpu), key=lambda c: c.name != cpu)
    if own_ready := [c for c in own if c in ready]:
        chosen = own_ready[0]
        why = f"tuned on this target's CPU ({cpu})"
        if not chosen.has_model:
            why += f"; no cost model of its own yet (`{TUNE_HERE}` continues it)"
        return Choice(chosen, why, True, model(chosen))
    if not same_arch:
        raise InputError(
            f"no corpus for {arch} (target CPU {cpu}); corpora here: "
            + (", ".join(f"{c.name} ({c.cpu}, {c.arch})" for c in corpora) or "none")
            + f"; tune one on the device with `{TUNE_HERE} --rpc HOST:PORT:KEY`",
            path=base,
        )
    best = max(
        ready,
        key=lambda c: (closeness(cpu, c.cpu), _vendor(c.cpu) == _vendor(cpu), len(c.networks)),
    )
    why = (
        f"{cpu}'s own corpus is not complete ({len(own[0].networks)} networks, no cost model yet; "
        f"`{TUNE_HERE}` continues it)"
        if own
        else f"no corpus tuned on {cpu}"
    )
    why += (
        f"; {best.cpu} is the closest of {arch}'s "
        f"({closeness(cpu, best.cpu):.0%} of LLVM features in common)"
    )
    return Choice(best, why, False, model(best))


def _given(
    given: str | Path, cpu: str, how: str, writing: bool, base: Path, pooled: Path
) -> Choice:
    path = Path(given).expanduser()
    named = base / str(given)  # a bare name: a corpus under corpora/, made there if new
    if not path.is_dir() and (named.is_dir() or (writing and len(Path(given).parts) == 1)):
        path = named
    if not path.is_dir() and not writing:  # a corpus to measure into is made where it is given
        names = ", ".join(c.name for c in find_corpora(base)) or "none"
        raise InputError(f"{how}: no corpus {str(given)!r}; corpora here: {names}")
    corpus = Corpus.read(path) or Corpus.new(path, cpu, "")
    model = ranking_model(corpus, cpu, pooled, _readable_corpora(base))
    return Choice(corpus, f"given by {how}", corpus.cpu == cpu, model)


_WARNED: set[tuple[str, str]] = set()  # (corpus CPU, target CPU) pairs this command warned of


def already_warned(tuned_for: str, cpu: str) -> bool:
    """Whether this command said already that it uses ``tuned_for``'s data on ``cpu``: the logs
    and the model then say so at INFO level, so that a command warns once."""
    return (tuned_for, cpu) in _WARNED


def warn_if_other_cpu(choice: Choice, cpu: str) -> None:
    """One warning when the corpus was tuned on another CPU than the target's."""
    if not choice.exact and choice.corpus.networks:
        _WARNED.add((choice.corpus.cpu, cpu))
        logger.warning(
            "corpus %s was tuned on %s, not on this target's %s: its schedules are checked "
            "and timed here, but were the fastest there. For the best results tune a corpus "
            "here: %s",
            choice.corpus.name,
            choice.corpus.cpu,
            cpu,
            TUNE_HERE,
        )
