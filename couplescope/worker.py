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


def _open_event_channel():
    event_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = os.fdopen(event_fd, "w", buffering=1, encoding="utf-8")

    from couplescope import events

    def write(event: dict) -> None:
        stream.write(events.dumps(event) + "\n")
        stream.flush()

    return write


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

        return run_rank(spec, write)
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


if __name__ == "__main__":
    sys.exit(main())
