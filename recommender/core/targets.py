"""Where schedules are built for and timed on: an llvm target, and optionally a remote device."""

from __future__ import annotations

import difflib
import json
import os
import socket
import struct
from dataclasses import dataclass

import tvm

from .errors import InputError


def host_target(num_cores: int | None = None) -> tvm.target.Target:
    """The machine we run on: detected ``mcpu`` and core count (MetaSchedule needs num-cores)."""
    cores = num_cores or len(os.sched_getaffinity(0))
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": cores})


def use_target_threads(target: tvm.target.Target) -> int:
    """Run TVM's kernels in this process and its workers on the target's cores, unless
    ``TVM_NUM_THREADS`` is set already; returns the thread count in force.

    Without ``TVM_NUM_THREADS`` (or ``OMP_NUM_THREADS``) TVM's runtime uses half the hardware
    threads on x86, assuming two per core: on a 2-vCPU virtual machine without SMT, one thread,
    while PyTorch and ONNX Runtime use both cores (docs/tvm.md, "Threads"). Set before the
    runtime's thread pool starts (its first parallel kernel), and inherited by every worker.
    """
    cores = str(int(target.attrs["num-cores"]))
    return int(os.environ.setdefault("TVM_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", cores)))


def parse_target(spec: str | None, *, num_cores: int | None = None) -> tvm.target.Target:
    """A target from ``None``/``"host"`` (this CPU), a JSON object, or ``llvm -key=value`` text.

    TVM 0.27 rejects CLI-style target strings, so ``llvm -mtriple=aarch64-linux-gnu
    -mcpu=cortex-a72 -num-cores=4`` is turned into the dict form here.
    """
    if spec is None or spec == "host":
        return host_target(num_cores)
    spec = spec.strip()
    if spec.startswith("{"):
        try:
            config = json.loads(spec)
        except json.JSONDecodeError as err:
            raise InputError(f"--target is not valid JSON: {err}") from None
    else:
        kind, *options = spec.split()
        config = {"kind": kind}
        for option in options:
            key, sep, value = option.lstrip("-").partition("=")
            if not sep:
                raise InputError(f"--target option {option!r} must look like -key=value")
            config[key] = int(value) if value.isdigit() else value
    if config.get("kind") != "llvm":
        raise InputError(f"--target kind must be 'llvm' (CPUs only), got {config.get('kind')!r}")
    if num_cores is not None:
        config["num-cores"] = num_cores
    config.setdefault("num-cores", len(os.sched_getaffinity(0)))
    cores = config["num-cores"]
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise InputError(
            f"--target -num-cores must be an int in the range [1, inf). Got {cores!r} instead."
        )
    if "mcpu" in config:  # TVM only logs an unknown one and builds for a generic CPU
        check_cpu(str(config["mcpu"]), config.get("mtriple") or None)
    try:
        return tvm.target.Target(config)
    except Exception as err:  # TVM raises several types for a bad config
        raise InputError(f"--target {spec!r} is not a valid TVM target: {err}") from None


def llvm_cpus(triple: str | None = None) -> list[str]:
    """The CPU names LLVM (inside TVM) knows for ``triple``, by default this machine's: what
    ``llc -mtriple=TRIPLE -mcpu=help`` lists.

    Raises
    ------
    InputError
        LLVM does not know the triple (TVM would crash listing its CPUs).
    """
    triple = triple or tvm.target.codegen.llvm_get_system_triple()
    if not tvm.target.codegen.llvm_is_valid_cpu("generic", triple):
        raise InputError(f"--target -mtriple={triple} is not a triple LLVM knows")
    target = tvm.target.Target({"kind": "llvm", "mtriple": triple})
    return sorted(str(cpu) for cpu in tvm.target.codegen.llvm_get_cpu_archlist(target))


def check_cpu(cpu: str, triple: str | None = None) -> None:
    """Refuse an ``-mcpu`` that LLVM does not know for ``triple`` (default: this machine's),
    naming the closest CPU names and how to list them all.

    Examples
    --------
    >>> check_cpu("cortex-a72", "aarch64-linux-gnu")  # a remote board's CPU: fine
    """
    codegen = tvm.target.codegen
    host_triple = codegen.llvm_get_system_triple()
    triple = triple or host_triple
    if codegen.llvm_is_valid_cpu(cpu, triple):
        return
    known = llvm_cpus(triple)
    closest = difflib.get_close_matches(cpu, known, n=3, cutoff=0.5)
    hint = f" Closest: {', '.join(closest)}." if closest else ""
    if triple == host_triple:
        hint += f" This machine's is {codegen.llvm_get_system_cpu()} (--target host)."
    lister = f"from recommender.core.targets import llvm_cpus; print(*llvm_cpus({triple!r}))"
    raise InputError(
        f"--target -mcpu must be a CPU LLVM knows for {triple}. Got {cpu!r} instead.{hint} "
        f'All {len(known)} (as `llc -mtriple={triple} -mcpu=help` lists them): python -c "{lister}"'
    )


def target_key(target: tvm.target.Target) -> dict:
    """The parts of a target that make timings comparable: kind, triple, cpu, cores."""
    return {
        "kind": str(target.kind.name),
        "mtriple": str(target.attrs.get("mtriple", "")),
        "mcpu": str(target.attrs.get("mcpu", "")),
        "num-cores": int(target.attrs.get("num-cores", 0)),
    }


def same_cpu(key: dict | None, target: tvm.target.Target) -> bool:
    """True when a stored ``target_key`` names ``target``'s CPU, whatever its core count.

    Schedules tuned with more cores replay on fewer (parallel loops just run on fewer threads),
    so a MetaSchedule reference may come from the same CPU with another core count.
    """
    ours = target_key(target)
    return key is not None and all(key.get(k) == ours[k] for k in ("kind", "mtriple", "mcpu"))


def target_arch(target: tvm.target.Target) -> str:
    """The architecture ``target`` builds for: its triple's, or this machine's when it has none."""
    triple = str(target.attrs.get("mtriple", ""))
    return triple.split("-")[0] if triple else os.uname().machine


def same_arch(key: dict | None, target: tvm.target.Target, arch: str | None = None) -> bool:
    """True when schedules tuned for ``key`` (on an ``arch`` machine, when known) can be timed
    on ``target``, maybe on another CPU: the same kind and triple.

    A schedule is a loop transformation of the kernel, not machine code: one tuned on another
    CPU of the architecture builds and runs here, only maybe slower than one tuned here.
    """
    if key is None or key.get("kind") != str(target.kind.name):
        return False
    if key.get("mtriple", "") != str(target.attrs.get("mtriple", "")):
        return False
    return arch is None or arch == target_arch(target)


def is_host_compatible(target: tvm.target.Target) -> bool:
    """True when code built for ``target`` runs on this machine (same triple, or none given)."""
    return target_arch(target) == os.uname().machine


@dataclass(frozen=True)
class RemoteDevice:
    """A device behind TVM's RPC tracker (``python -m tvm.exec.rpc_tracker``), found by key."""

    host: str
    port: int
    key: str

    @classmethod
    def parse(cls, spec: str) -> RemoteDevice:
        """``HOST:PORT:KEY``, e.g. ``127.0.0.1:9190:rasp4``."""
        host, sep1, rest = spec.partition(":")
        port, sep2, key = rest.partition(":")
        if not (sep1 and sep2 and host and key and port.isdigit()):
            raise InputError(f"--rpc must be HOST:PORT:KEY (e.g. 127.0.0.1:9190:pi4), got {spec!r}")
        if not 1 <= int(port) <= 65535:
            raise InputError(
                f"--rpc PORT must be an int in the range [1, 65535]. Got {port} instead."
            )
        return cls(host, int(port), key)

    def __str__(self) -> str:
        return f"{self.host}:{self.port}:{self.key}"

    def check(self, timeout_s: float = 5.0) -> None:
        """Fail within seconds, before anything is written, if the tracker is unreachable or
        has no device with this key (TVM's own client retries for a minute)."""
        from tvm.rpc import base

        try:
            with socket.create_connection((self.host, self.port), timeout=timeout_s) as sock:
                sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
                magic = struct.unpack("<i", base.recvall(sock, 4))[0]
                if magic != base.RPC_TRACKER_MAGIC:
                    raise InputError(f"--rpc {self}: {self.host}:{self.port} is not a TVM tracker")
                base.sendjson(sock, [base.TrackerCode.SUMMARY])
                summary = base.recvjson(sock)[1]
        except OSError as err:
            raise InputError(
                f"--rpc {self}: no RPC tracker reachable at {self.host}:{self.port} "
                f"({err.strerror or err})"
            ) from None
        keys = sorted(summary.get("queue_info", {}))
        if self.key not in keys:
            raise InputError(
                f"--rpc {self}: no device registered with key {self.key!r} "
                f"(registered: {', '.join(keys) or 'none'})"
            )
