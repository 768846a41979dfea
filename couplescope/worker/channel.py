"""The worker's event stream: its original stdout, with fast iteration events batched.

Before anything else runs, file descriptor 1 is pointed at stderr, so whatever the
model, torch or a C library prints (even from C code) cannot corrupt the event stream.
This is also what lets the same worker run under mpiexec or srun, which forward each
rank's stdout.
"""

from __future__ import annotations

import os
import sys
import time

from couplescope.protocol import columns, events


class EventChannel:
    """Writes events to the event stream; fast iterations are sent in batches.

    Writing a line per iteration costs a system call and wakes the parent, which the
    scheduler often places on the worker's core just before the next timed call: for a
    call of a few microseconds that tripled its measured time. So iteration events wait
    in a buffer until FLUSH_SECONDS have passed since the last write; any other event
    (and the end of the run) writes the buffer at once. A worker killed with SIGKILL can
    lose at most the last FLUSH_SECONDS of iterations; SIGTERM and Ctrl-C lose nothing.

    What waits is also sent compactly: the `iteration` events of one rank (rank 0 of an
    MPI job writes every rank's, one per rank per step) become one `iterations` event per
    rank and run of consecutive calls, with a `rank` field: a thousand ranks send a
    thousand events per flush instead of a thousand per step, and the parent, which
    parses and handles every event, keeps up (benchmarks/parent_scale.py). Nothing is
    lost: `events.expand` gives back exactly the `iteration` events they stand for.
    """

    FLUSH_SECONDS = 0.05
    #: events that wait for the next flush: iterations, and the node samplers' samples
    #: (rank 0 writes every node's, several per exchange on a big job)
    BATCHED = ("iteration", "telemetry")

    def __init__(self, stream) -> None:
        self._dumps = events.dumps
        self._stream = stream
        self._pending: list[dict] = []
        self._last = time.monotonic()

    def __call__(self, event: dict) -> None:
        self._pending.append(event)
        if event["event"] not in self.BATCHED or time.monotonic() - self._last >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            dumps = self._dumps
            self._stream.write("".join(dumps(ev) + "\n" for ev in compact(self._pending)))
            self._pending.clear()
        self._stream.flush()
        self._last = time.monotonic()


def compact(pending: list[dict]) -> list[dict]:
    """The events to write for a buffer: each rank's consecutive `iteration` events of one
    variant and kind as one `iterations` event (in the order of their first call), then the
    other waiting events (samples) in their order, then whatever ended the wait. A lone
    call stays an `iteration` event; calls without a rank (one process) are left as they are."""
    runs: list[list[dict]] = []
    open_run: dict[tuple, list[dict]] = {}   # (variant, kind, rank) -> its run being filled
    rest: list[dict] = []
    for ev in pending:
        if ev["event"] != "iteration" or ev.get("rank") is None:
            rest.append(ev)
            continue
        key = (ev["variant"], ev["kind"], ev["rank"])
        run = open_run.get(key)
        if run is not None and run[-1]["index"] + 1 == ev["index"]:
            run.append(ev)
        else:   # its first call here, or not the next one: a run of its own
            run = open_run[key] = [ev]
            runs.append(run)
    return [run[0] if len(run) == 1 else _as_columns(run) for run in runs] + rest


def _as_columns(run: list[dict]) -> dict:
    first = run[0]
    ev = events.make("iterations", first["variant"], rank=first["rank"],
                     **columns.iteration_columns(first["kind"], first["index"], run))
    ev["t"] = run[-1]["t"]
    return ev


def open_event_channel() -> EventChannel:
    """Keep the original stdout for events; point fd 1 (and sys.stdout) at stderr."""
    event_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return EventChannel(os.fdopen(event_fd, "w", encoding="utf-8"))
