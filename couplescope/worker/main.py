"""The worker's entry point: read the spec, open the event channel, run, exit.

Exit codes (couplescope.protocol.contract): 0 finished, 1 failed, 2 bad input, 130
interrupted (SIGINT or SIGTERM). The backend chooses the team that measures (one
process, or one rank of an MPI job); the engine's loop is the same for both.
"""

from __future__ import annotations

import json
import signal
import sys


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from couplescope.worker.channel import open_event_channel

    write = open_event_channel()
    signal.signal(signal.SIGTERM, _interrupt)
    from couplescope import backends
    from couplescope.protocol.spec import RunSpec
    from couplescope.worker.engine import run

    spec = RunSpec.from_dict(json.loads(argv[0]))
    backend = backends.get(spec.backend)
    return run(spec, backend, backend.team(spec, write))


if __name__ == "__main__":
    sys.exit(main())
