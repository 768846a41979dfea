"""What the node sampler reads: one node's ranks, whatever they start, and the node.

Why apart from couplescope.probes.tree (whose TreeSampler it extends): the parent samples
the one process tree it started, psutil's way; a node sampler (couplescope.probes.node)
watches up to hundreds of ranks on a budget of 1% of a core per node, so it reads
/proc itself, reads the ranks in turn and encodes each reading once.
"""

from __future__ import annotations

import os
import time

from couplescope.probes.gpu import NA, GpuProbe
from couplescope.probes.tree import SLOW_PERIOD, TreeSampler, tree_totals

#: processes the node sampler reads afresh per tick at most; with more on the node it reads
#: them in turn and each sample carries every process's latest reading (its CPU measured
#: over its own interval since its last one). Every process at every tick cost 1.27% of a
#: core at 10 Hz for 64 ranks and 2.46% for 128; 32 a tick still cost 1.02-1.05% for 64
#: ranks, 1.16-1.25% for 128 and 1.61% for 256; 16 a tick (with /proc/stat read directly
#: and each reading encoded once) 0.69-0.73% for 64, 0.81% for 128, 0.87-0.995% for 256
#: (benchmarks/telemetry_overhead.py; the budget is 1% per node). At 10 Hz a node's 32
#: ranks are each read 5 times a second, 128 ranks 1.25 times
READS_PER_TICK = 16


class RanksSampler(TreeSampler):
    """The ranks of one node (pid -> rank, as they reported themselves) and whatever they
    start, the node and its GPUs: what the node sampler reads. None once every rank is gone.
    Past READS_PER_TICK processes, each tick reads the next READS_PER_TICK of them in turn."""

    def __init__(self, ranks: dict[int, int], gpu: GpuProbe | None = None) -> None:
        super().__init__(0, gpu)   # no root: the ranks are the roots
        self.ranks = dict(ranks)
        self._latest: dict[int, dict] = {}   # pid -> its latest reading, for the ticks that skip it
        self._turn = 0                        # where this tick's reads begin among the processes
        self._fragments: dict[int, str] = {}  # pid -> the JSON of its latest reading (see `line`)
        self._me = os.getpid()   # a child of a rank, but not one of the rank's own processes
        self._cpu_seen: dict[int, tuple[float, float]] = {}   # pid -> (when, CPU seconds)
        self._slow_extra: dict[int, dict] = {}                # pid -> affinity, context switches
        self._slow_now = True
        self._stat_fds: dict[int, int] = {}                   # pid -> its /proc/<pid>/stat, kept open

    def _roots(self) -> list[int]:
        return list(self.ranks)

    def _tree(self) -> list[int]:
        return [pid for pid in super()._tree() if pid != self._me]

    def _identify(self, proc) -> tuple:
        try:
            name = proc.name()
        except self.ps.Error:
            name = NA
        if proc.pid in self.ranks:
            return "worker", self.ranks[proc.pid], name
        return "child", NA, name

    def sample(self) -> dict | None:
        """One sample of the node, as TreeSampler.sample gives it (None once every rank has
        gone), at a cost per tick bounded by READS_PER_TICK whatever the ranks: only the
        processes whose turn it is (and new ones) are read; the others keep their latest
        reading, and `line` reuses the JSON already made of it."""
        now = time.monotonic()
        known = self._known
        self._slow_now = now >= self._next_slow
        if self._slow_now:   # new processes and system memory, twice a second (TreeSampler.sample)
            self._next_slow = now + SLOW_PERIOD
            self._memory = self._read_memory()
            listed = self._tree()
            for pid in known.keys() - set(listed):
                self._forget(pid)
            for pid in listed:
                if pid not in known:
                    try:
                        proc = self.ps.Process(pid)
                    except self.ps.Error:   # ended since the listing
                        continue
                    known[pid] = (proc, *self._identify(proc))
        order = list(known)
        due = None
        if len(order) > READS_PER_TICK:   # this tick's turn: the next READS_PER_TICK, round the list
            start = self._turn % len(order)
            due = set((order + order)[start:start + READS_PER_TICK])
            self._turn = start + READS_PER_TICK
        latest, processes = self._latest, []
        for pid in order:
            if due is None or pid in due or pid not in latest:
                reading = self._read(*known[pid], first=pid not in latest)
                if reading is None:
                    self._forget(pid)
                    continue
                latest[pid] = reading
                self._fragments.pop(pid, None)
            processes.append(latest[pid])
        if not any(pid in known for pid in self.ranks):
            return None
        return {"processes": processes, "tree": tree_totals(processes),
                "sampler": {"pid": self._me, "cpu_percent": self._own_cpu()},
                "system": {"cpu_percent": self._per_core(), **self._memory},
                "gpu": self.gpu.sample([p["pid"] for p in processes]) if self.gpu is not None else NA}

    def line(self, sample: dict, encode) -> bytes:
        """`sample` as one JSON line (what `encode` makes of it), each process's reading
        encoded once, when it was read: at 128 ranks, encoding every reading at every tick
        was a fifth of the node sampler's CPU."""
        fragments, parts = self._fragments, []
        for reading in sample["processes"]:
            part = fragments.get(reading["pid"])
            if part is None:
                part = fragments[reading["pid"]] = encode(reading)
            parts.append(part)
        rest = encode({k: v for k, v in sample.items() if k != "processes"})
        joined = ",".join(parts)
        return ('{"processes":[' + joined + "]" + ("," + rest[1:] if len(rest) > 2 else "}") + "\n").encode()

    def _forget(self, pid: int) -> None:
        """A process that has gone: everything kept of it, and its open stat file."""
        for kept in (self._known, self._latest, self._fragments, self._cpu_seen, self._slow_extra):
            kept.pop(pid, None)
        fd = self._stat_fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def _stat(self, pid: int) -> bytes | None:
        """/proc/<pid>/stat, read again through the descriptor opened the first time (a
        pread instead of an open, a read and a close: half the CPU per rank; and a pid
        reused by another process is never read for this one: the old descriptor then
        fails). None when the process has gone."""
        fd = self._stat_fds.get(pid)
        if fd is None:
            fd = self._stat_fds[pid] = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            return os.pread(fd, 4096, 0)
        except ProcessLookupError:
            os.close(self._stat_fds.pop(pid))
            return None

    def _read(self, proc, role, rank, name, first: bool):
        """One process's counters from one read of /proc/<pid>/stat (state, CPU time,
        threads, RSS); its affinity and context switches on the slow ticks only, twice a
        second. psutil's way, a call per field, cost 2.2% of a core at 10 Hz for 32 ranks
        (benchmarks/telemetry_overhead.py); the budget is 1% per node. Without /proc:
        psutil's way."""
        try:
            data = self._stat(proc.pid)
        except FileNotFoundError:
            return None
        except OSError:
            return super()._read(proc, role, rank, name, first)
        if data is None:
            return None
        fields = data.rsplit(b")", 1)[1].split(None, 22)   # up to RSS, the 22nd after the name
        if fields[0] in (b"Z", b"X"):
            return None   # exited, not yet reaped
        now = time.monotonic()
        ticks = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
        rss = int(fields[21]) * _PAGE
        last = self._cpu_seen.get(proc.pid)
        self._cpu_seen[proc.pid] = (now, ticks)
        cpu = NA if last is None or now <= last[0] else round(100.0 * (ticks - last[1]) / (now - last[0]), 1)
        slow = self._slow_extra.get(proc.pid)
        if slow is None or self._slow_now:
            slow = self._slow_extra[proc.pid] = self._affinity_and_switches(proc.pid)
        return {"pid": proc.pid, "role": role, "rank": rank, "name": name,
                "cpu_percent": cpu, "rss": rss, "threads": int(fields[17]), **slow}

    def _affinity_and_switches(self, pid: int) -> dict:
        try:
            affinity = sorted(os.sched_getaffinity(pid))
        except (AttributeError, OSError):
            affinity = NA
        switches = NA
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                found = {k: int(v) for k, v in (line.split(b":") for line in f
                                                if line.startswith((b"voluntary_ctxt", b"nonvoluntary_ctxt")))}
            switches = {"voluntary": found.get(b"voluntary_ctxt_switches", 0),
                        "involuntary": found.get(b"nonvoluntary_ctxt_switches", 0)}
        except (OSError, ValueError):
            pass
        return {"affinity": affinity, "ctx_switches": switches}


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
