"""What the two trace servers (`--tensorboard`, `--perfetto`) share: the address they
listen on, the port, finding a run's traces and the ssh-tunnel line.

Both listen on 127.0.0.1 only: a trace carries the run's spec and host names, and a
login node is shared; a reader elsewhere reaches it through an ssh tunnel, whose
command is printed with the address.
"""

from __future__ import annotations

import os
import socket

from couplescope.protocol.contract import TRACE_SUFFIXES
from couplescope.protocol.errors import UsageError

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            raise UsageError(f"--port {port} is in use on {HOST}; choose another or leave --port out "
                             "for a free one") from None


def port_in_use(exc: OSError, port: int) -> UsageError:
    """The one-line refusal for a port taken between the check and the bind."""
    return UsageError(f"--port {port} is in use on {HOST} ({exc.strerror or exc}); choose another "
                      "or leave --port out for a free one")


def has_traces(directory: str, scalars: bool = True) -> bool:
    """A profiler trace below `directory` (or, with `scalars`, a TensorBoard event file)."""
    for _root, _dirs, files in os.walk(directory):
        if any(f.endswith(TRACE_SUFFIXES) or (scalars and ".tfevents." in f) for f in files):
            return True
    return False


def find_trace_root(run_dir: str, flag: str, scalars: bool = True) -> str:
    """The directory to serve: RUN_DIR/traces, or RUN_DIR itself when it holds traces below
    it (a traces directory, or a directory of runs to compare). A UsageError naming `flag`
    otherwise."""
    run_dir = os.path.abspath(run_dir)
    if not os.path.isdir(run_dir):
        raise UsageError(f"{flag} {run_dir}: no such directory; give a run directory "
                         "written with --export (e.g. couplescope-runs/<run>)")
    traces = os.path.join(run_dir, "traces")
    for candidate in (traces, run_dir):
        if os.path.isdir(candidate) and has_traces(candidate, scalars):
            return candidate
    what = "*.pt.trace.json[.gz] or TensorBoard event files" if scalars else "*.pt.trace.json[.gz] profiler traces"
    scalars_only = not scalars and any(os.path.isdir(c) and has_traces(c) for c in (traces, run_dir))
    hint = ("; it has per-iteration scalars only: couplescope --tensorboard opens them" if scalars_only
            else "; write some with --export and --profile-iterations N (N > 0)")
    raise UsageError(f"{flag} {run_dir}: no traces in it (no {what}){hint}")


def tunnel_line(port: int) -> str:
    """How to open the address from another machine (a laptop, when this is a cluster node)."""
    return (f"from another machine: ssh -N -L {port}:{HOST}:{port} {socket.gethostname()}, then open "
            f"the same address there")
