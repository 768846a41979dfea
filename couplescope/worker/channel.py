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

from couplescope.protocol import events


class EventChannel:
    """Writes events to the event stream; fast iterations are sent in batches.

    Writing a line per iteration costs a system call and wakes the parent, which the
    scheduler often places on the worker's core just before the next timed call: for a
    call of a few microseconds that tripled its measured time. So iteration events wait
    in a buffer until FLUSH_SECONDS have passed since the last write; any other event
    (and the end of the run) writes the buffer at once. A worker killed with SIGKILL can
    lose at most the last FLUSH_SECONDS of iterations; SIGTERM and Ctrl-C lose nothing.
    """

    FLUSH_SECONDS = 0.05

    def __init__(self, stream) -> None:
        self._dumps = events.dumps
        self._stream = stream
        self._pending: list[str] = []
        self._last = time.monotonic()

    def __call__(self, event: dict) -> None:
        self._pending.append(self._dumps(event) + "\n")
        if event["event"] != "iteration" or time.monotonic() - self._last >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._stream.write("".join(self._pending))
            self._pending.clear()
        self._stream.flush()
        self._last = time.monotonic()


def open_event_channel() -> EventChannel:
    """Keep the original stdout for events; point fd 1 (and sys.stdout) at stderr."""
    event_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return EventChannel(os.fdopen(event_fd, "w", encoding="utf-8"))
