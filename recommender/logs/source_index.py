"""A log's source schedules, read once: the index stored beside each log.

Reading a corpus's ten logs costs 20-40 s: every record line is JSON-decoded twice (validation,
then picking each workload's fastest), and the picked records' traces are replayed on their
workloads to decode them. The index (``sources.json.gz`` in the log's directory, shipped with
the corpus) keeps what ranking needs: per workload its JSON, structural hash, kernel class and
descriptor, and its ``top_n`` fastest records (run time, trace hash, and the record's JSON as a
string: most are never decoded, and parsing their nested traces was half of reading the
index). It is keyed by a hash of the log's two database files, so a log that grew
(``recommender collect``) is read again and its index rewritten. Traces are decoded only when
a candidate is applied (``SourceSchedule.trace``).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import logging
import os
from pathlib import Path

import tvm

from ..core import paths
from ..tasks.workload import BlockInfo, KernelClass, WorkloadDescriptor
from .tuning_log import RECORDS, WORKLOADS

logger = logging.getLogger(__name__)

INDEX = "sources.json.gz"
# 2: kernel classes without the model's variable names (workload.block_class_name);
# 3: each record's JSON kept as a string
FORMAT = 3
MIN_TOP_N = 3  # an index holds at least this many records per workload, so reruns reuse it


def log_hash(log_dir: Path) -> str:
    """Hash of the log's workload and record files: what the index was made from.

    Hashing a corpus's logs (100 MB) takes 0.1 s of every ranking, so the hash is remembered
    in the cache with the files' sizes and modification times, and made again when one changes.
    """
    files = [log_dir / name for name in (WORKLOADS, RECORDS)]
    stamp = [[f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    name = hashlib.sha256(str(log_dir.resolve()).encode()).hexdigest()[:24]
    memo = paths.cache_root() / "log_hashes" / f"{name}.json"
    try:
        known = json.loads(memo.read_text())
        if known["stamp"] == stamp:
            return known["hash"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: hash the files
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes())
    value = digest.hexdigest()[:24]
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stamp": stamp, "hash": value}))
        tmp.replace(memo)
    except OSError as err:
        logger.debug("%s: cannot remember the log's hash (%s)", memo, err)
    return value


def read_index(log_dir: Path, top_n: int) -> list[dict] | None:
    """The index's workloads (see ``workload_entry``), if it was made from the log as it is now
    with at least ``top_n`` records per workload, keeping those; None otherwise (absent,
    stale or unreadable: the log is read again)."""
    path = log_dir / INDEX
    if not path.exists():
        return None
    try:
        index = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError) as err:
        logger.warning("%s: unreadable source index, reading the log again (%s)", path, err)
        return None
    fresh = (
        index.get("format") == FORMAT
        and index.get("tvm") == tvm.__version__
        and index.get("top_n", 0) >= top_n
        and index.get("log_hash") == log_hash(log_dir)
    )
    if not fresh:
        return None
    return [w | {"records": w["records"][:top_n]} for w in index["workloads"]]


def write_index(log_dir: Path, top_n: int, workloads: list[dict]) -> None:
    """Store ``workloads`` (see ``workload_entry``) as the log's index, atomically."""
    index = {
        "format": FORMAT,
        "tvm": tvm.__version__,
        "top_n": top_n,
        "log_hash": log_hash(log_dir),
        "workloads": workloads,
    }
    path = log_dir / INDEX
    tmp = path.with_name(f"{INDEX}.{os.getpid()}.tmp")
    with tmp.open("wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
        out.write(json.dumps(index, separators=(",", ":")).encode())
    tmp.replace(path)


def workload_entry(
    workload_json: list,
    key: int,
    klass: KernelClass,
    descriptor: WorkloadDescriptor,
    records: list[tuple[float, list]],
) -> dict:
    """One workload of the index: ``records`` are its fastest (run time, record JSON), best
    first; each record is stored as JSON text (``SourceSchedule.trace`` parses it)."""
    return {
        "workload": workload_json,
        "key": str(key),
        "class": dataclasses.asdict(klass),
        "descriptor": dataclasses.asdict(descriptor),
        "records": [
            {"record": json.dumps(record), "run_s": run_s, "trace_key": trace_key(record)}
            for run_s, record in records
        ],
    }


def trace_key(record_json: list) -> str:
    """Hash of a record's trace JSON: with the workload's hash, it names the record."""
    return hashlib.sha256(json.dumps(record_json[0]).encode()).hexdigest()[:16]


def kernel_class_of(workload: dict) -> KernelClass:
    return KernelClass(**workload["class"])


def descriptor_of(workload: dict) -> WorkloadDescriptor:
    d = dict(workload["descriptor"])
    blocks = tuple(BlockInfo(**{**b, "extents": tuple(b["extents"])}) for b in d.pop("blocks"))
    tuples = ("op_kinds", "param_dtypes", "anchor_extents")
    fields = {k: tuple(v) if k in tuples else v for k, v in d.items()}
    fields["param_shapes"] = tuple(tuple(s) for s in d["param_shapes"])
    return WorkloadDescriptor(**fields, blocks=blocks)
