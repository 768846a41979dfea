"""The node sampler: a small process on each node of a multi-node job that samples that
node's ranks and the node itself, and hands the samples to the node's first rank.

Why a process of the job, on the node: on a cluster the parent (on a login node, or on
the batch script's node) cannot see a rank on another node at all; and it must not
sample one that happens to be on its own machine either, or a two-node test cluster on
one host would pass for one node. Why a process and not a thread of the rank: a thread
would compete with the measured calls for the GIL and a core, which is why the parent
never samples from inside a worker.

    python -m couplescope.probes.node --hz 10 --node n1 --ranks 0:4242,1:4243 --state-fd 5

It writes one JSON object per line on stdout (a pipe the node's first rank reads between
iterations, outside its timed calls; the samples then travel with the rank's events to
rank 0 and on to the parent, as `telemetry` events labelled with the node). A sample is
what couplescope.probes.ranks reads (a couplescope.probes.tree sample), plus

    "t": seconds since the epoch, "elapsed": seconds since the node's first rank started,
    "iteration": the iteration running ({"kind", "index"}) or null, read from the state
                 the rank writes after each iteration (see IterationState),
    "sampler": {"pid": this process's (one sampler a node), "cpu_percent": its CPU since the
                last sample (as every sample has it), "cpu_seconds": its CPU time so far,
                "dropped": samples lost because the rank did not read them in time}

Writes never block: a rank busy in a long call (or a model load) leaves samples in the
pipe; past what the pipe and a small buffer hold, the oldest are dropped and counted. It
ends when every rank it watches has gone, on SIGTERM, or when the rank that started it
dies (the kernel's parent-death signal). Imports psutil and NVML, never torch.
"""

from __future__ import annotations

import argparse
import errno
import json
import mmap
import os
import signal
import struct
import sys
import time

#: the iteration kinds, as the state encodes them (0: no iteration is running)
KINDS = ("warmup", "timed", "profiled")
#: samples kept while the pipe is full before the oldest are dropped (a minute at 10 Hz)
BUFFER_SAMPLES = 600
STATE_BYTES = 8


class IterationState:
    """The iteration a rank is running, shared with its node sampler through a small
    memory map: the rank writes 8 bytes after each iteration (no system call, nothing that
    wakes the sampler and puts it on the rank's core before its next timed call), the
    sampler reads them when it samples."""

    def __init__(self, fd: int) -> None:
        self.map = mmap.mmap(fd, STATE_BYTES)

    def set(self, current: dict | None) -> None:
        """{"kind", "index"} of the iteration now running, or None (loading, done)."""
        code = 0 if current is None else (KINDS.index(current["kind"]) + 1) << 48 | int(current["index"])
        struct.pack_into("<Q", self.map, 0, code)

    def get(self) -> dict | None:
        code = struct.unpack_from("<Q", self.map, 0)[0]
        kind = code >> 48
        return {"kind": KINDS[kind - 1], "index": code & (2**48 - 1)} if 0 < kind <= len(KINDS) else None

    def close(self) -> None:
        self.map.close()


def iteration_plan(warmup: int, timed: int, profiled: int) -> list[tuple[str, int]]:
    """The kinds of iteration a variant runs, in order, with their counts (zeros left out)."""
    return [(k, n) for k, n in zip(KINDS, (warmup, timed, profiled)) if n > 0]


def running_after(plan: list[tuple[str, int]], kind: str | None, index: int) -> dict | None:
    """The iteration running once iteration (kind, index) has ended; kind None: the model
    has just loaded, so the first one. None after the last."""
    kinds = [k for k, _ in plan]
    if kind is None:
        return {"kind": plan[0][0], "index": 1} if plan else None
    if kind not in kinds:
        return None
    if index < dict(plan)[kind]:
        return {"kind": kind, "index": index + 1}
    later = kinds[kinds.index(kind) + 1:]
    return {"kind": later[0], "index": 1} if later else None


class Outbox:
    """Lines for a non-blocking pipe: what does not fit waits, the oldest are dropped."""

    def __init__(self, fd: int, keep: int = BUFFER_SAMPLES) -> None:
        self.fd, self.keep = fd, keep
        self.lines: list[bytes] = []
        self.partial = b""      # the rest of a line the pipe took only part of
        self.dropped = 0
        os.set_blocking(fd, False)

    def send(self, line: bytes) -> bool:
        """Queue a line and write what the pipe takes; False once the reader has gone."""
        self.lines.append(line)
        if len(self.lines) > self.keep:
            del self.lines[0]
            self.dropped += 1
        while self.partial or self.lines:
            if not self.partial:
                self.partial = self.lines.pop(0)
            try:
                written = os.write(self.fd, self.partial)
            except BlockingIOError:
                return True
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    return False
                raise
            self.partial = self.partial[written:]
        return True


def run(hz: float, node: str, ranks: dict[int, int], state: IterationState | None, out_fd: int,
        gpu: bool = True) -> int:
    """Sample until every rank has gone (or a signal ends it); 0."""
    from couplescope.probes.gpu import GpuProbe
    from couplescope.probes.ranks import RanksSampler

    probe = GpuProbe() if gpu else None
    sampler = RanksSampler(ranks, probe)
    started = _started(min(ranks, key=ranks.get)) if ranks else time.time()
    outbox = Outbox(out_fd)
    period, tick = 1.0 / hz, time.monotonic()
    encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str).encode
    try:
        while True:
            sample = sampler.sample()
            if sample is None:
                return 0
            now = time.time()
            sample.update(t=now, node=node, elapsed=round(now - started, 3),
                          iteration=state.get() if state is not None else None)
            sample["sampler"].update(cpu_seconds=round(time.process_time(), 4), dropped=outbox.dropped)
            if not outbox.send(sampler.line(sample, encode)):
                return 0
            tick += period
            delay = tick - time.monotonic()
            if delay < 0:   # a tick missed (a busy node) is skipped, not made up
                tick, delay = time.monotonic(), 0.0
            time.sleep(delay)
    finally:
        if probe is not None:
            probe.close()


def _started(pid: int) -> float:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:
        return time.time()


def _die_with_parent() -> None:
    """SIGTERM when the rank that started us dies (Linux), so nothing outlives the job."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m couplescope.probes.node")
    p.add_argument("--hz", type=float, required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--ranks", required=True, help="rank:pid,rank:pid")
    p.add_argument("--state-fd", type=int, default=None)
    p.add_argument("--no-gpu", action="store_true")
    args = p.parse_args(argv)
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:   # the rank died before the signal was asked for
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ranks = {int(pid): int(rank) for rank, pid in (item.split(":") for item in args.ranks.split(","))}
    state = IterationState(args.state_fd) if args.state_fd is not None else None
    try:
        return run(args.hz, args.node, ranks, state, sys.stdout.fileno(), gpu=not args.no_gpu)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
