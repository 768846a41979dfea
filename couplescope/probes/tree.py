"""Reading processes, the system and the GPUs: what a telemetry sample holds.

Used by the parent's sampler thread (couplescope.core.telemetry) for the processes it
started, and by the node sampler (couplescope.probes.node) that the ranks of a
multi-node job start on every node, so a sample means the same wherever it was taken.
Nothing here starts a thread or knows of events; nothing raises into a run: a value that
cannot be read is the string "n/a".

    sample = {"processes": [{pid, role, rank, name, cpu_percent, rss, threads, affinity,
                             ctx_switches: {voluntary, involuntary}}],
              "tree": {processes, cpu_percent, rss, threads},
              "sampler": {pid, cpu_percent}: the process taking the sample (couplescope's
                         parent, or a node sampler), so that `others_cpu_percent` can tell
                         other processes' CPU from couplescope's own,
              "system": {cpu_percent: [per core], memory_used, memory_total, memory_percent,
                         load: [1, 5, 15 minute load averages]},
              "gpu": [per device, see couplescope.probes.gpu] | "n/a"}
"""

from __future__ import annotations

import os
import time

from couplescope.probes.gpu import NA, GpuProbe
from couplescope.protocol.contract import is_worker_argv

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
#: seconds between looks for new processes in the tree (and reads of system memory)
SLOW_PERIOD = 0.5


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- sampling a process tree ----------------------------------------------------------------

class TreeSampler:
    """Reads one process tree (root pid and all descendants), the system and the GPUs.

    The parent's sampler watches the worker it started (under mpiexec every rank is a
    descendant). Ranks that srun started descend from Slurm's step daemon, on whichever
    node: those are sampled on their own node (RanksSampler, couplescope.probes.node),
    never adopted by the parent, which could not tell a rank on another node that
    happens to be this machine (a test cluster) from one on its own.
    """

    def __init__(self, root_pid: int, gpu: GpuProbe | None = None) -> None:
        import psutil

        self.ps = psutil
        self.gpu = gpu
        self._known: dict[int, tuple] = {}   # pid -> (psutil.Process, role, rank, name)
        self._parents: dict[int, int | None] = {}   # every pid on the machine -> its parent
        try:
            self.root = psutil.Process(root_pid) if root_pid > 0 else None
        except psutil.Error:
            self.root = None
        self._cpu_last = self._cpu_times()
        self._own_last = (time.monotonic(), time.process_time())
        self._next_slow = 0.0
        self._memory: dict = {}

    def _cpu_times(self):
        """(busy + idle, idle) clock ticks per core, or None."""
        return _core_times() or _core_times_psutil(self.ps)

    def _per_core(self) -> list:
        """Busy percent per core since the last sample (our own deltas: no shared psutil state)."""
        now, last = self._cpu_times(), self._cpu_last
        self._cpu_last = now
        if not now or not last or len(now) != len(last):
            return NA
        out = []
        for (total0, idle0), (total1, idle1) in zip(last, now):
            total = total1 - total0
            out.append(round(100.0 * (total - (idle1 - idle0)) / total, 1) if total > 0 else 0.0)
        return out

    def _own_cpu(self):
        """This process's CPU since the last sample, percent of one core (all its threads:
        the sampler, and in the parent the printer or the app)."""
        wall, cpu = time.monotonic(), time.process_time()
        (wall0, cpu0), self._own_last = self._own_last, (wall, cpu)
        return round(100.0 * (cpu - cpu0) / (wall - wall0), 1) if wall > wall0 else NA

    def _roots(self) -> list[int]:
        return [self.root.pid] if self.root is not None else []

    def _tree(self) -> list[int]:
        """Pids of the roots and all their descendants, roots first ([] once they are gone).

        Why not psutil's children(recursive=True): it reads /proc/<pid>/stat of every
        process on the machine at every tick (about 1.5 ms with 90 processes, far more on
        a busy node). Here the parent of each pid is read once, when the pid first
        appears in /proc, so a tick costs one listdir plus the new pids.
        """
        roots = self._roots()
        if not roots:
            return []
        try:
            live = {int(n) for n in os.listdir("/proc") if n.isdigit()}
        except OSError:   # no /proc (macOS ...): psutil's way
            found = []
            for pid in roots:
                try:
                    found += [pid, *(c.pid for c in self.ps.Process(pid).children(recursive=True))]
                except self.ps.NoSuchProcess:
                    pass
                except self.ps.Error:  # AccessDenied listing children: the root alone
                    found.append(pid)
            return found
        parents = self._parents
        for pid in parents.keys() - live:
            del parents[pid]
        for pid in live - parents.keys():
            parents[pid] = _parent_of(pid)
        roots = [pid for pid in roots if pid in live]
        if not roots:
            return []
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            if parent is not None:
                children.setdefault(parent, []).append(pid)
        tree, todo = list(roots), list(roots)
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
            load = [round(v, 2) for v in os.getloadavg()]
        except (AttributeError, OSError):
            load = NA
        try:
            vm = self.ps.virtual_memory()
            return {"memory_used": vm.used, "memory_total": vm.total, "memory_percent": vm.percent,
                    "load": load}
        except Exception:
            return {"memory_used": NA, "memory_total": NA, "memory_percent": NA, "load": load}

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
                    proc = self.root if self.root is not None and pid == self.root.pid else self.ps.Process(pid)
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
        if not alive.intersection(self._roots()):
            return None
        return {"processes": processes, "tree": tree_totals(processes),
                "sampler": {"pid": os.getpid(), "cpu_percent": self._own_cpu()},
                "system": {"cpu_percent": self._per_core(), **self._memory},
                "gpu": self.gpu.sample([p["pid"] for p in processes]) if self.gpu is not None else NA}


def others_cpu_percent(sample: dict):
    """CPU that processes other than couplescope's own used while the sample was taken, in
    percent of one core: the whole machine's busy time less the measured tree's and the
    sampler's process's (couplescope's parent or a node sampler). What a shared node's other
    jobs took: the worker's own share says nothing of them (a worker that sleeps in its
    calls uses little CPU on a quiet machine). "n/a" when a part cannot be read."""
    cores = (sample.get("system") or {}).get("cpu_percent")
    tree = (sample.get("tree") or {}).get("cpu_percent")
    own = (sample.get("sampler") or {}).get("cpu_percent")
    if not isinstance(cores, list) or not cores or not is_number(tree) or not is_number(own):
        return NA
    return round(max(0.0, sum(cores) - tree - own), 1)


_PROC_STAT: list = []   # /proc/stat, opened once per process and read with pread


def _core_times() -> list | None:
    """(total, idle + iowait) clock ticks of every core, from one pread of /proc/stat kept
    open: psutil.cpu_times(percpu=True) opens, reads and parses it into named tuples, which
    at 10 Hz cost about 0.1 ms of CPU more per tick (on a 1%-of-a-core budget of 1 ms).
    None without /proc."""
    try:
        if not _PROC_STAT:
            _PROC_STAT.append(os.open("/proc/stat", os.O_RDONLY))
        data = os.pread(_PROC_STAT[0], 1 << 16, 0)
    except OSError:
        return None
    out = []
    for line in data.split(b"\n")[1:]:   # the first line is all cores together
        if not line.startswith(b"cpu"):
            break
        fields = [int(v) for v in line.split()[1:]]
        out.append((sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)))
    return out or None


def _core_times_psutil(ps) -> list | None:
    try:
        return [(sum(t), t.idle + getattr(t, "iowait", 0)) for t in ps.cpu_times(percpu=True)]
    except Exception:
        return None


def _parent_of(pid: int):
    """The parent pid from /proc/<pid>/stat, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return int(data[data.rindex(b")") + 2:].split()[1])   # after "(comm) ": state, ppid
    except (OSError, ValueError, IndexError):
        return None


def tree_totals(processes: list) -> dict:
    def total(key):
        values = [v for v in (p[key] for p in processes) if type(v) in (int, float)]   # not "n/a", not bool
        return round(sum(values), 1) if values else NA
    return {"processes": len(processes), "cpu_percent": total("cpu_percent"),
            "rss": total("rss"), "threads": total("threads")}
