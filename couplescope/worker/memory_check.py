"""Refuse a size that would not fit, before allocating it.

A login node is shared: `--model polynomial --size 1000000000` used to grow to about
12 GB of RSS before failing, and deep-linear at 1e8 layers spent many minutes building
modules. So before the host arrays or the model exist, the workload's estimate of what
the worker will need (Workload.memory_estimate: host arrays, model, working memory; the
formulas are calibrated on measured peaks) is compared with a share of the memory
available to this process: MemAvailable, or what is left under a cgroup limit (a Slurm
job's, a container's) when that is less. A size over the limit is bad input, refused
with one line giving the estimate and the limit and how to override it
(`--memory-limit SIZE`, or `--memory-limit none`).

Under MPI on one host every rank allocates as much, so the estimate counts them all.
"""

from __future__ import annotations

import os

from couplescope.protocol.contract import MEMORY_LIMIT_ENV
from couplescope.protocol.errors import UsageError
from couplescope.protocol.sizes import bytes_text, parse_bytes

#: the share of the available memory a run may plan to use, unless --memory-limit says otherwise
DEFAULT_SHARE = 0.5


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_headroom() -> int | None:
    """Bytes left under this process's cgroup memory limit (v2 or v1), None if unlimited."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.strip().split(":", 2) for line in f if line.count(":") >= 2]
    except OSError:
        return None
    candidates = []
    for _, controllers, path in lines:
        path = path.lstrip("/")
        if controllers == "":   # v2
            for base in (os.path.join("/sys/fs/cgroup", path), "/sys/fs/cgroup"):
                candidates.append((os.path.join(base, "memory.max"), os.path.join(base, "memory.current")))
        elif "memory" in controllers.split(","):   # v1
            for base in (os.path.join("/sys/fs/cgroup/memory", path), "/sys/fs/cgroup/memory"):
                candidates.append((os.path.join(base, "memory.limit_in_bytes"),
                                   os.path.join(base, "memory.usage_in_bytes")))
    for limit_path, usage_path in candidates:
        limit, usage = _read_int(limit_path), _read_int(usage_path)
        if limit is not None and usage is not None:
            return max(0, limit - usage) if limit < 2**60 else None
    return None


def available_memory() -> int | None:
    """Bytes this process could still allocate without swapping or the OOM killer."""
    found = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    if found is None:
        try:
            import psutil

            found = psutil.virtual_memory().available
        except Exception:
            return None
    headroom = _cgroup_headroom()
    return min(found, headroom) if headroom is not None else found


def limit() -> tuple[int | None, str]:
    """(bytes a run may plan to use or None for no limit, how that limit came about)."""
    explicit = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if explicit:
        value = parse_bytes(explicit)
        return value, ("no limit (--memory-limit none)" if value is None
                       else f"--memory-limit {bytes_text(value)}")
    available = available_memory()
    if available is None:
        return None, "unknown available memory"
    return int(available * DEFAULT_SHARE), (f"{DEFAULT_SHARE:.0%} of the {bytes_text(available)} "
                                            "available")


def training_parts(parts: dict, optimizer: str) -> dict:
    """What a training step adds to an inference estimate: a gradient per parameter, the
    optimizer's state (Adam keeps two more copies of the parameters, SGD none) and the
    activations autograd keeps for backward (as much again as the forward's working
    memory), plus the target arrays (as large as the outputs)."""
    model = parts.get("model", 0)
    out = dict(parts)
    out["gradients"] = model
    if optimizer == "adam":
        out["optimizer state"] = 2 * model
    out["kept for backward"] = parts.get("working memory", 0)
    return out


def check(workload, size: int, dtype: str, processes: int = 1, spec=None) -> None:
    """Raise UsageError when `workload` at `size` would need more than the limit (a
    training spec's gradients, optimizer state and saved activations counted)."""
    parts = workload.memory_estimate(size, dtype)
    if not parts:
        return
    if spec is not None and spec.task == "train":
        parts = training_parts(parts, spec.optimizer or getattr(workload, "train_optimizer", "sgd"))
    allowed, why = limit()
    if allowed is None:
        return
    total = sum(parts.values()) * max(1, processes)
    if total <= allowed:
        return
    # parts under a mebibyte say nothing next to a total over the limit
    detail = ", ".join(f"{name} {bytes_text(value)}" for name, value in parts.items() if value >= 2**20)
    ranks = f" x {processes} ranks on this host" if processes > 1 else ""
    raise UsageError(f"--size {size} for {workload.name} needs about {bytes_text(total)} "
                     f"({detail}{ranks}), over the limit of {bytes_text(allowed)} ({why}); use a "
                     f"smaller --size, or --memory-limit {bytes_text(total * 1.25, round_up=True)} "
                     "(or none) to run it anyway")
