"""`couplescope --tensorboard RUN_DIR`: TensorBoard on 127.0.0.1 over a run's traces.

TensorBoard runs as a child process in its own process group, so the terminal's Ctrl-C
reaches only couplescope, which then ends the child deliberately (SIGTERM to its group,
SIGKILL if it lingers) and exits 0 without a traceback. Its own output goes to a log
file, shown only when it fails to start. Everything that can be wrong with the input
(no such directory, no traces in it, TensorBoard or the profiler plugin missing, a
port in use) is a one-line UsageError (exit 2) before anything starts.

The profiler plugin's page needs internet in the browser that views it (NEEDS_INTERNET
says what for): the address line is followed by that note and by `--perfetto`, which
opens the same traces with nothing from the internet (perfetto_server.py).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from couplescope.export.local_server import HOST, check_port, find_trace_root, free_port, tunnel_line
from couplescope.protocol import scratch
from couplescope.protocol.contract import TRACE_SUFFIXES
from couplescope.protocol.errors import UsageError

INSTALL = "pip install tensorboard torch-tb-profiler"
#: what the profiler plugin's page needs from the internet (torch-tb-profiler 0.4.3: its
#: page shows no view until google.charts has loaded; its trace view also loads a
#: web-components polyfill from cdnjs.cloudflare.com)
NEEDS_INTERNET = ("note: the PYTORCH_PROFILER tab needs internet in the browser that views it: it "
                  "loads Google Charts from www.gstatic.com before it shows any view, and spins "
                  "forever without (TIME SERIES and SCALARS need nothing from the internet)")
STARTUP_SECONDS = 60.0


def find_logdir(run_dir: str) -> str:
    """The directory to give TensorBoard: RUN_DIR/traces, or RUN_DIR itself when it holds
    traces below it (a traces directory, or a directory of runs to compare)."""
    return find_trace_root(run_dir, "--tensorboard")


def check_installed() -> None:
    missing = [name for module, name in (("tensorboard", "tensorboard"), ("torch_tb_profiler", "torch-tb-profiler"))
               if importlib.util.find_spec(module) is None]
    if missing:
        raise UsageError(f"--tensorboard needs {' and '.join(missing)}, which is not installed: {INSTALL}")


def command(logdir: str, port: int) -> list[str]:
    # the plugin loads its trace files in worker processes; --load_fast=false keeps the
    # pure-Python loader, which needs no Rust data server binary
    return [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", HOST,
            "--port", str(port), "--load_fast", "false"]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def stop(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """End TensorBoard and anything it started (its plugin's loader processes)."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def start(logdir: str, port: int, log_path: str, tmpdir: str | None = None) -> subprocess.Popen:
    """TensorBoard with its temporary files in `tmpdir` (the profiler plugin's loader
    processes leave pymp-* folders when they are ended rather than exiting: the caller
    removes the folder once TensorBoard has stopped)."""
    log = open(log_path, "w", encoding="utf-8")
    env = {**os.environ, "TMPDIR": tmpdir} if tmpdir else None
    try:
        return subprocess.Popen(command(logdir, port), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env=env)
    finally:
        log.close()


def dashboard(logdir: str) -> tuple[str, str]:
    """(the URL's fragment, what it shows): the profiler plugin where there are traces; a
    run exported without profiling has only scalars, which the profiler plugin would list
    no run for, so it opens on the Time Series dashboard."""
    for _root, _dirs, files in os.walk(logdir):
        if any(f.endswith(TRACE_SUFFIXES) for f in files):
            return "pytorch_profiler", "traces"
    return "timeseries", "per-iteration scalars, no profiler traces"


def wait_until_up(proc: subprocess.Popen, port: int, log_path: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    url = f"http://{HOST}:{port}/data/plugins_listing"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UsageError(f"TensorBoard did not start (exit code {proc.returncode}): "
                             f"{_last_line(log_path) or 'no output'}")
        if _answers(url):
            return
        time.sleep(0.2)
    stop(proc)
    raise UsageError(f"TensorBoard did not answer on {HOST}:{port} within {STARTUP_SECONDS:.0f} s: "
                     f"{_last_line(log_path) or 'no output'}")


def serve(run_dir: str, port: int | None = None, out=None) -> int:
    """Start TensorBoard over RUN_DIR's traces, print the address, wait for Ctrl-C.

    Returns 0 when stopped with Ctrl-C or SIGTERM, TensorBoard's exit code if it ends on its own.
    """
    out = out or sys.stdout
    logdir = find_logdir(run_dir)
    check_installed()
    if port is None:
        port = free_port()
    else:
        check_port(port)
    try:
        folder = scratch.folder()   # its log and its TMPDIR, removed when it has stopped
    except OSError as exc:
        raise UsageError(f"cannot create a temporary directory in {tempfile.gettempdir()} "
                         f"({exc.strerror or exc}); set TMPDIR to a writable directory") from None
    log_path = os.path.join(folder, "tensorboard.log")
    # multiprocessing names its sockets pymp-XXXXXXXX/listener-XXXXXXXX inside TMPDIR, and a
    # socket's path has at most 107 bytes: a folder too deep for that keeps the user's TMPDIR
    tmpdir = folder if len(folder) + len("/pymp-XXXXXXXX/listener-XXXXXXXX") < 107 else None
    fragment, shows = dashboard(logdir)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    proc = None
    try:
        proc = start(logdir, port, log_path, tmpdir)
        wait_until_up(proc, port, log_path)
        out.write(f"TensorBoard: http://{HOST}:{port}/#{fragment}  ({shows} in {logdir}; "
                  "Ctrl-C stops it)\n")
        if fragment == "pytorch_profiler":
            out.write(NEEDS_INTERNET + "\n" + f"offline, open the traces with: couplescope --perfetto "
                      f"{shlex.quote(run_dir)}\n")
        out.write(tunnel_line(port) + "\n")
        out.flush()
        code = proc.wait()
        out.write(f"TensorBoard ended by itself (exit code {code}): {_last_line(log_path)}\n")
        return code if code else 0
    except KeyboardInterrupt:
        out.write("TensorBoard stopped\n")
        out.flush()
        return 0
    finally:
        if proc is not None:
            stop(proc)
        signal.signal(signal.SIGTERM, previous)
        scratch.remove()


def _interrupt(signum, frame):
    raise KeyboardInterrupt
