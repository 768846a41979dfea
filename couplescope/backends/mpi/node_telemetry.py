"""The node sampler, seen from the rank that starts it (the node's first rank).

Each node of a job whose ranks may run elsewhere than the parent (srun, host lists) gets
one node sampler (couplescope.probes.node), started by its node-local rank 0 once every
rank has said where it runs. That rank tells it which iteration is running (8 bytes in a
shared memory map, written after each iteration) and collects its samples from a pipe,
at most once per sampling period and only between iterations; the samples then leave
with the rank's other events at the next exchange, so they reach the parent through the
one event channel, as `telemetry` events labelled with the node.

Nothing here runs inside a timed call, and a rank that has no sampler (every rank but
the node's first, or telemetry off) pays one attribute test per iteration.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time

from couplescope.protocol import events
from couplescope.protocol.contract import NODE_TELEMETRY_HZ_ENV

#: the pipe the samples wait in while the rank is busy (Linux allows 1 MiB unprivileged)
PIPE_BYTES = 1 << 20


def rate() -> float:
    """Samples per second the parent asked for (0: none)."""
    try:
        return max(0.0, float(os.environ.get(NODE_TELEMETRY_HZ_ENV, "0")))
    except ValueError:
        return 0.0


class NodeTelemetry:
    """One node's sampler process, its iteration state and the samples it sent."""

    def __init__(self, variant: str, node: str, ranks: dict[int, int], hz: float, plan) -> None:
        from couplescope.probes.node import IterationState

        self.variant, self.node, self.plan = variant, node, plan
        self.period = 1.0 / hz
        self._file = tempfile.TemporaryFile()   # unlinked: nothing to remove, whatever happens
        self._file.truncate(8)
        self.state = IterationState(self._file.fileno())
        cmd = [sys.executable, "-m", "couplescope.probes.node", "--hz", str(hz), "--node", node,
               "--ranks", ",".join(f"{rank}:{pid}" for pid, rank in sorted(ranks.items(), key=lambda kv: kv[1])),
               "--state-fd", str(self._file.fileno())]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     pass_fds=(self._file.fileno(),))
        self._fd = self.proc.stdout.fileno()
        try:
            fcntl.fcntl(self._fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except OSError:
            pass   # the default 64 KiB: fewer samples wait while a call runs long
        os.set_blocking(self._fd, False)
        self._rest = b""
        self._next_look = 0.0
        self.delivered = 0   # samples handed on so far

    def running(self, kind: str | None, index: int = 0, done: bool = False) -> None:
        """The iteration after (kind, index) is running (kind None: the model has loaded)."""
        from couplescope.probes.node import running_after

        self.state.set(None if done else running_after(self.plan, kind, index))

    def events(self, force: bool = False) -> list[dict]:
        """The samples that arrived, as telemetry events; at most once a sampling period
        unless forced (a pipe read is cheap, but not free between microsecond calls)."""
        now = time.monotonic()
        if not force and now < self._next_look:
            return []
        self._next_look = now + self.period
        chunks = []
        while True:
            try:
                chunk = os.read(self._fd, PIPE_BYTES)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        if not chunks:
            return []
        data = self._rest + b"".join(chunks)
        lines = data.split(b"\n")
        self._rest = lines.pop()
        out = []
        for line in lines:
            try:
                sample = json.loads(line)
            except ValueError:
                continue
            ev = events.make("telemetry", self.variant, sample=sample, node=self.node)
            ev["t"] = sample.pop("t", ev["t"])
            out.append(ev)
        self.delivered += len(out)
        return out

    def last_events(self, wait: float = 2.0) -> list[dict]:
        """The run is ending: what the sampler sent since the last look, after waiting (at
        most `wait` seconds) for its first sample if it has sent none yet (a run shorter
        than the sampler's start-up, about 0.2 s), then the sampler ends."""
        got = self.events(force=True)
        deadline = time.monotonic() + wait
        while not got and not self.delivered and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.02)
            got = self.events(force=True)
        return got + self.stop()

    def stop(self) -> list[dict]:
        """End the sampler; the samples it had sent."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        last = self.events(force=True)
        self.proc.stdout.close()
        self.state.close()
        self._file.close()
        return last


def start(team, placements: list[dict]) -> NodeTelemetry | None:
    """On the node's first rank, when the parent asked for node telemetry: the sampler of
    this node's ranks. None elsewhere."""
    hz = rate()
    if hz <= 0 or team.local_rank != 0:
        return None
    from couplescope.probes.node import iteration_plan

    mine = placements[team.rank].get("node")
    ranks = {p["pid"]: p["rank"] for p in placements if p.get("node") == mine}
    spec = team.spec
    plan = iteration_plan(spec.warmup, spec.iterations, spec.profile_iterations)
    return NodeTelemetry(team.variant, mine, ranks, hz, plan)
