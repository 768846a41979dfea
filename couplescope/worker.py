"""The worker: `python -m couplescope.worker SPEC_JSON` measures one variant.

Events go to the worker's original stdout, one JSON object per line. Before anything
else runs, file descriptor 1 is pointed at stderr, so whatever the model, torch or a
C library prints (even from C code) cannot corrupt the event stream. This is also what
lets the same worker run under mpiexec or srun, which forward each rank's stdout.

Exit codes: 0 finished, 1 failed, 2 bad input, 130 interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


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
        from couplescope import events

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


def _open_event_channel() -> EventChannel:
    event_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return EventChannel(os.fdopen(event_fd, "w", encoding="utf-8"))


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    write = _open_event_channel()
    signal.signal(signal.SIGTERM, _interrupt)
    from couplescope.engine import Emitter, failure, run_variant
    from couplescope.errors import UsageError
    from couplescope.spec import RunSpec

    spec = RunSpec.from_dict(json.loads(argv[0]))
    if spec.backend == "mpi":  # this process is one rank of an MPI job
        from couplescope.mpi_worker import run_rank

        try:
            return run_rank(spec, write)
        finally:
            write.flush()
    emit = Emitter(write)
    emit.variant = spec.label
    profile_window = None
    if spec.profile_iterations:
        try:
            from couplescope.profiling import profile_window
        except ImportError:
            profile_window = None
    try:
        run_variant(spec, emit, profile_window)
        return 0
    except UsageError as exc:
        failure(emit, exc, "usage")
        return 2
    except KeyboardInterrupt as exc:
        failure(emit, exc, "interrupted")
        return 130
    except Exception as exc:
        failure(emit, exc, "error")
        return 1
    finally:
        write.flush()


if __name__ == "__main__":
    sys.exit(main())
