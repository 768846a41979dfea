"""The worker's entry point: read the spec, open the event channel, run, exit.

Exit codes (couplescope.protocol.contract): 0 finished, 1 failed, 2 bad input, 130
interrupted (SIGINT, SIGTERM or SIGHUP). The backend chooses the team that measures (one
process, or one rank of an MPI job); the engine's loop is the same for both.

A worker never outlives its parent: it asks the kernel for SIGTERM when the parent dies
(Linux), and a stop signal that Python cannot act on because the main thread is inside
a long C call (a huge model being built) is acted on by a watchdog thread instead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading

#: after a stop signal, how long the main thread has to wind down by itself before the
#: watchdog ends the process (the parent's own escalation to SIGKILL comes at 5 s)
STOP_GRACE_SECONDS = 3.0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def die_with_parent() -> bool:
    """Ask for SIGTERM when the parent dies; False when the parent is already gone."""
    from couplescope.protocol.contract import PARENT_PID_ENV

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)   # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    parent = os.environ.get(PARENT_PID_ENV, "")
    # started directly by couplescope: that process must be our parent still (a launcher's
    # ranks have the launcher's daemon as theirs, and carry no such variable)
    return not parent.isdigit() or os.getppid() == int(parent)


def watch_stop_signals(cleanup) -> None:
    """A thread woken by every signal (signal.set_wakeup_fd: nothing to do until one comes).

    Python runs a signal handler only when the main thread returns to the interpreter; a
    worker inside one long C call (allocating a model far too big, one 5 s forward) would
    ignore SIGTERM until it returns, and one whose parent died would run on alone. So
    after a stop signal the main thread has STOP_GRACE_SECONDS to finish by itself;
    after that, this thread removes the worker's scratch folder (`cleanup`) and ends the
    process with 128 + the signal.
    """
    stops = {int(getattr(signal, name)) for name in ("SIGINT", "SIGTERM", "SIGHUP")}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

    def watch() -> None:
        while True:
            data = reader.recv(64)
            hit = [b for b in data if b in stops]
            if not data or not hit:
                continue
            threading.Event().wait(STOP_GRACE_SECONDS)
            try:
                cleanup()
            finally:
                os._exit(128 + hit[0])

    threading.Thread(target=watch, name="couplescope-stop-watchdog", daemon=True).start()
    watch_stop_signals.sockets = (reader, writer)   # kept alive with the process


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not die_with_parent():
        return 128 + int(signal.SIGTERM)   # the parent died while we started: nobody to measure for
    from couplescope.worker.channel import open_event_channel

    write = open_event_channel()
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), _interrupt)
    from couplescope.protocol import scratch
    from couplescope.protocol.contract import SCRATCH_ENV

    # the saved model and anything else the worker writes: a subfolder of the parent's
    # scratch folder, removed on every way out (the watchdog's too)
    tmpdir = scratch.join(os.environ.get(SCRATCH_ENV))
    remove = scratch.remove
    watch_stop_signals(remove)
    from couplescope import backends
    from couplescope.protocol.spec import RunSpec
    from couplescope.worker.engine import run

    spec = RunSpec.from_dict(json.loads(argv[0]))
    backend = backends.get(spec.backend)
    try:
        return run(spec, backend, backend.team(spec, write), tmpdir)
    except BrokenPipeError:
        # the parent is gone (its end of the event stream closed): nobody to report to
        remove()
        os._exit(128 + int(signal.SIGTERM))
    finally:
        remove()


if __name__ == "__main__":
    sys.exit(main())
