"""Live CPU and GPU telemetry, sampled by the parent while a worker runs.

Why in the parent: a sampler inside the measured process would compete with it for the
GIL and a core and skew what it measures. Here a thread of the parent watches the
worker's whole process tree from outside with psutil (every MPI rank under mpiexec is a
descendant of the worker's pid) and the GPUs through NVML, at --telemetry-hz.

Every value that cannot be read -- a process gone between two samples, AccessDenied, no
NVML, a driver without a function -- is the string "n/a"; nothing here raises into a
run. Samples travel as "telemetry" events through `session.emit` (thread-safe; the
listener is couplescope.core.telemetry.listener), so every front end and exporter sees
them like any other event:

    sample = {"elapsed": s since the worker started, "iteration": {"kind", "index"} | None,
              "processes": [{pid, role, rank, name, cpu_percent, rss, threads, affinity,
                             ctx_switches: {voluntary, involuntary}}],
              "tree": {processes, cpu_percent, rss, threads},
              "system": {cpu_percent: [per core], memory_used, memory_total, memory_percent},
              "gpu": [per device, see gpu_telemetry] | "n/a"}

CPU percent is of one core (200 = two cores busy); memory is in bytes. results.json keeps
a bounded timeline of `scalar_series` per variant and a summary (telemetry_record.py).
"""

from __future__ import annotations

import os
import threading
import time

from couplescope.core.telemetry.gpu import NA, GpuProbe
from couplescope.protocol.contract import PARENT_PID_ENV, is_worker_argv
from couplescope.protocol.errors import UsageError
from couplescope.results.telemetry import is_number

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
#: seconds between looks for new processes in the tree (and reads of system memory)
SLOW_PERIOD = 0.5
#: above this a sample costs more than it tells: psutil's CPU percent over <10 ms is noise
MAX_HZ = 100.0


def check_rate(hz) -> float:
    """--telemetry-hz as a number of samples per second; UsageError outside 0..MAX_HZ."""
    try:
        rate = float(hz)
    except (TypeError, ValueError):
        rate = float("nan")
    if not 0 <= rate <= MAX_HZ:   # also rejects nan
        raise UsageError(f"--telemetry-hz must be between 0 (off) and {MAX_HZ:g} samples per second "
                         f"(got {hz}); the default is 10")
    return rate


def cores_available() -> int:
    """Cores this process (and so a worker it starts) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# -- sampling a process tree ----------------------------------------------------------------

class TreeSampler:
    """Reads one process tree (root pid and all descendants), the system and the GPUs."""

    def __init__(self, root_pid: int, gpu: GpuProbe | None = None, adopt_workers: bool = False) -> None:
        import psutil

        self.ps = psutil
        self.gpu = gpu
        self._known: dict[int, tuple] = {}   # pid -> (psutil.Process, role, rank, name)
        self._parents: dict[int, int | None] = {}   # every pid on the machine -> its parent
        try:
            self.root = psutil.Process(root_pid)
        except psutil.Error:
            self.root = None
        self._cpu_last = self._cpu_times()
        self._next_slow = 0.0
        self._memory: dict = {}
        #: srun's tasks descend from Slurm's step daemon, not from the launched srun: with
        #: `adopt_workers`, worker processes that carry this process's pid in their
        #: environment (contract.PARENT_PID_ENV, which srun passes on) are watched too
        self._adopt = f"{PARENT_PID_ENV}={os.getpid()}".encode() if adopt_workers else None
        self._adopted: set[int] = set()

    def _cpu_times(self):
        try:
            return self.ps.cpu_times(percpu=True)
        except Exception:
            return None

    def _per_core(self) -> list:
        """Busy percent per core since the last sample (our own deltas: no shared psutil state)."""
        now, last = self._cpu_times(), self._cpu_last
        self._cpu_last = now
        if not now or not last or len(now) != len(last):
            return NA
        out = []
        for a, b in zip(last, now):
            total = sum(b) - sum(a)
            idle = (b.idle - a.idle) + (getattr(b, "iowait", 0) - getattr(a, "iowait", 0))
            out.append(round(100.0 * (total - idle) / total, 1) if total > 0 else 0.0)
        return out

    def _tree(self) -> list[int]:
        """Pids of the root and all its descendants, root first ([] once the root is gone).

        Why not psutil's children(recursive=True): it reads /proc/<pid>/stat of every
        process on the machine at every tick (about 1.5 ms with 90 processes, far more on
        a busy node). Here the parent of each pid is read once, when the pid first
        appears in /proc, so a tick costs one listdir plus the new pids.
        """
        if self.root is None:
            return []
        try:
            live = {int(n) for n in os.listdir("/proc") if n.isdigit()}
        except OSError:   # no /proc (macOS ...): psutil's way
            try:
                return [self.root.pid, *(c.pid for c in self.root.children(recursive=True))]
            except self.ps.NoSuchProcess:
                return []
            except self.ps.Error:  # AccessDenied listing children: the root alone
                return [self.root.pid]
        parents = self._parents
        for pid in parents.keys() - live:
            del parents[pid]
        for pid in live - parents.keys():
            parents[pid] = _parent_of(pid)
            if self._adopt is not None and _is_our_worker(pid, self._adopt):
                self._adopted.add(pid)
        self._adopted &= live
        if self.root.pid not in live:
            return []
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            if parent is not None:
                children.setdefault(parent, []).append(pid)
        tree, todo = [self.root.pid, *self._adopted], [self.root.pid, *self._adopted]
        while todo:
            kids = children.get(todo.pop(), ())
            tree.extend(kids)
            todo.extend(kids)
        return list(dict.fromkeys(tree))

    def _identify(self, proc) -> tuple:
        """Role, MPI rank and name of a process seen for the first time (read once)."""
        def read(fn, default):
            try:
                return fn()
            except self.ps.Error:
                return default
        args = read(proc.cmdline, [])
        # the worker's own argv (contract.worker_argv); a launcher only carries it further on
        is_worker = is_worker_argv(args)
        role = "worker" if is_worker else ("root" if proc == self.root else "child")
        rank = NA
        if role == "worker":
            env = read(proc.environ, {})
            rank = next((int(env[v]) for v in _RANK_VARS if str(env.get(v, "")).isdigit()), NA)
        return role, rank, read(proc.name, NA)

    def _read(self, proc, role, rank, name, first: bool):
        """One process's counters; None when it vanished. AccessDenied gives "n/a" per field."""
        ps = self.ps

        def get(fn):
            try:
                return fn()
            except (ps.NoSuchProcess, ps.ZombieProcess):
                raise
            except Exception:  # AccessDenied, unsupported on this platform
                return NA
        try:
            with proc.oneshot():
                if get(proc.status) in (ps.STATUS_ZOMBIE, ps.STATUS_DEAD):
                    return None   # exited, not yet reaped: its counters read as zeros
                mem = get(proc.memory_info)
                if mem != NA and mem.rss == 0:
                    return None   # exiting: its memory is already released
                cpu = get(lambda: proc.cpu_percent(None))
                ctx = get(proc.num_ctx_switches)
                return {"pid": proc.pid, "role": role, "rank": rank, "name": name,
                        # the first reading of a process has no interval to measure over
                        "cpu_percent": NA if first else cpu,
                        "rss": mem.rss if mem != NA else NA,
                        "threads": get(proc.num_threads),
                        "affinity": get(proc.cpu_affinity),
                        "ctx_switches": NA if ctx == NA else {"voluntary": ctx.voluntary,
                                                              "involuntary": ctx.involuntary}}
        except ps.Error:  # NoSuchProcess / ZombieProcess: ended between two samples
            return None

    def _read_memory(self) -> dict:
        try:
            vm = self.ps.virtual_memory()
            return {"memory_used": vm.used, "memory_total": vm.total, "memory_percent": vm.percent}
        except Exception:
            return {"memory_used": NA, "memory_total": NA, "memory_percent": NA}

    def sample(self) -> dict | None:
        """One sample, or None once the root process has gone.

        Processes already known are read every tick; looking for new ones (a /proc
        listing) and system memory happen at most every SLOW_PERIOD seconds: each /proc
        read costs about 0.2 ms of CPU on the build machines, and the budget at 10 Hz is
        1 ms per tick. A new MPI rank is therefore seen within half a second.
        """
        processes, alive = [], set()
        now = time.monotonic()
        slow_tick = now >= self._next_slow
        if slow_tick:   # new processes and system memory: twice a second is enough (cost, see above)
            self._next_slow = now + SLOW_PERIOD
            pids = self._tree()
            self._memory = self._read_memory()
        else:
            pids = list(self._known)
        for pid in pids:
            known = self._known.get(pid)   # kept while the pid lives: cpu_percent needs the last reading
            first = known is None
            if first:
                try:
                    proc = self.root if pid == self.root.pid else self.ps.Process(pid)
                except self.ps.Error:   # ended since the listing
                    continue
                known = (proc, *self._identify(proc))
                self._known[pid] = known
            got = self._read(*known, first=first)
            if got is not None:
                processes.append(got)
                alive.add(pid)
        for pid in set(self._known) - alive:
            del self._known[pid]
        if self.root is None or self.root.pid not in alive:
            return None
        return {"processes": processes, "tree": _tree_totals(processes),
                "system": {"cpu_percent": self._per_core(), **self._memory},
                "gpu": self.gpu.sample([p["pid"] for p in processes]) if self.gpu is not None else NA}


def _is_our_worker(pid: int, marker: bytes) -> bool:
    """A couplescope worker started for this process (its argv and environment say so)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"couplescope.worker" not in f.read():
                return False
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def _parent_of(pid: int):
    """The parent pid from /proc/<pid>/stat, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return int(data[data.rindex(b")") + 2:].split()[1])   # after "(comm) ": state, ppid
    except (OSError, ValueError, IndexError):
        return None


def _tree_totals(processes: list) -> dict:
    def total(key):
        values = [p[key] for p in processes if is_number(p[key])]
        return round(sum(values), 1) if values else NA
    return {"processes": len(processes), "cpu_percent": total("cpu_percent"),
            "rss": total("rss"), "threads": total("threads")}


class SamplerThread(threading.Thread):
    """Calls `deliver(sampler.sample())` at `hz` until stopped; keeps its own CPU time.

    Ticks are scheduled on a fixed grid (a slow sample does not shift the later ones);
    missed ticks are skipped, not bunched. An unexpected error ends nothing: it is kept in
    `error` (first one only) and sampling goes on.
    """

    def __init__(self, sampler, hz: float, deliver) -> None:
        super().__init__(name="couplescope-telemetry", daemon=True)
        self.sampler, self.period, self.deliver = sampler, 1.0 / hz, deliver
        self.cpu_seconds = 0.0
        self.samples = 0
        self.error: str | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        start_cpu, tick = time.thread_time(), time.monotonic()
        while not self._halt.is_set():
            try:
                sample = self.sampler.sample()
                if sample is not None:
                    self.samples += 1
                    self.deliver(sample)
            except Exception as exc:  # a bug here must not stop a measurement
                self.error = self.error or f"{type(exc).__name__}: {exc}"
            self.cpu_seconds = time.thread_time() - start_cpu
            tick += self.period
            delay = tick - time.monotonic()
            if delay < 0:
                tick, delay = time.monotonic(), 0.0
            self._halt.wait(delay)

    def stop(self, timeout: float = 5.0) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout)
