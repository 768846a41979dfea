"""The worker's entry point: read the spec, open the event channel, run, exit.

Exit codes (couplescope.protocol.contract): 0 finished, 1 failed, 2 bad input, 130
interrupted (SIGINT or SIGTERM from the parent, which keeps what was measured). The
backend chooses the team that measures (one process, or one rank of an MPI job); the
engine's loop is the same for both.

A worker never outlives the couplescope process that started it. Its parent stops it
deliberately on every exit path it can handle; for the ones it cannot (a SIGKILLed
parent, a crash), the kernel kills the worker when its parent process dies
(PR_SET_PDEATHSIG), even in the middle of a long model build or a C++ call where no
Python handler would run. Under a launcher (mpiexec, srun) the worker's parent is the
launcher's daemon, not couplescope, so a watchdog thread also checks once a second that
the couplescope process named in the environment is still there. Either way its temporary
files are in the folder the parent made (couplescope.protocol.scratch), swept by the next
couplescope that starts.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import threading


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def die_with_parent() -> None:
    """Be killed when the parent process dies; watch the couplescope process too when a
    launcher sits in between. Linux only (elsewhere the parent's own cleanup is all)."""
    from couplescope.protocol.contract import PARENT_PID_ENV

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    text = os.environ.get(PARENT_PID_ENV, "")
    if not text.isdigit():
        return
    parent = int(text)
    if os.getppid() != parent:   # a launcher in between, or the parent died before prctl
        threading.Thread(target=_watch, args=(parent,), name="couplescope-parent-watch", daemon=True).start()


def _watch(parent: int) -> None:
    import time

    while True:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os.kill(os.getpid(), signal.SIGKILL)
        except PermissionError:
            pass
        time.sleep(1.0)


@contextlib.contextmanager
def collector_paused():
    """Python's garbage collector off while the worker imports torch (about a thousand
    modules, hundreds of thousands of objects, none of them garbage): its collections
    walked them again and again: 2.64 s of CPU against 2.90 s (8 interleaved imports each,
    this project's build machine), 5.00 against 5.21 billion instructions (callgrind; the
    walks cost more in time than in instructions, as they miss the caches). On again before
    the model is built, so what is measured runs with the collector as the user's Python
    has it."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    die_with_parent()
    from couplescope.worker.channel import open_event_channel

    write = open_event_channel()
    signal.signal(signal.SIGTERM, _interrupt)
    with collector_paused():
        import torch  # noqa: F401  (every worker needs it; imported here, with the collector off)

        from couplescope import backends
        from couplescope.protocol.spec import RunSpec
        from couplescope.worker.engine import run

        from couplescope.protocol.contract import PACED_FLAG

    spec = RunSpec.from_dict(json.loads(argv[0]))
    backend = backends.get(spec.backend)
    return run(spec, backend, backend.team(spec, write), paced=PACED_FLAG in argv[1:])


def quiet_main() -> int:
    """main(), ended quietly by an interrupt that comes before the engine handles them (a
    SIGTERM to every process of a job, as scancel sends, can land while torch is still being
    imported): no traceback in the output the user is shown, exit 130 as documented."""
    from couplescope.protocol.contract import EXIT_INTERRUPTED

    try:
        return main()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        # leaving anyway: a second SIGTERM (scancel's to every process, then the parent's
        # stop) must not raise KeyboardInterrupt inside the interpreter's exit finalizers,
        # which printed a traceback under the variant's name (seen under load)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(quiet_main())
