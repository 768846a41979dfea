"""Start a worker process for a variant and read its event stream (the parent's side).

The worker runs in its own session (process group) so a Ctrl-C in the terminal reaches
only the parent, which then ends the worker deliberately: SIGTERM to the whole group
(the worker reports what it measured and exits 130), SIGKILL if it does not go. Its
stderr is drained on a thread (a full pipe would stall the worker) and kept, so a
crash can be explained with its last lines.

A worker must not outlive this process (a parent killed with SIGKILL, or dead of a
bug, would leave it running at ppid 1, holding gigabytes and a core). On Linux the
process this starts asks the kernel for SIGTERM when its parent dies
(prctl PR_SET_PDEATHSIG): a worker does so itself, first thing (couplescope.worker.main,
told our pid to check we are still there); a launcher (mpiexec, srun) is started
through a few lines of Python that ask and then exec it, and takes its ranks down.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading

from couplescope.protocol import events
from couplescope.protocol import scratch
from couplescope.protocol.contract import PARENT_PID_ENV, SCRATCH_ENV, worker_argv

#: run before a launcher: die with the parent (PR_SET_PDEATHSIG = 1), unless it is gone
#: already (the kernel would not tell us then), then become the launcher (argv: parent
#: pid, signal, command...). -I -S: no site, no user paths, a few milliseconds.
DIE_WITH_PARENT = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(sys.argv[2]), 0, 0, 0)\n"
    "os.getppid() == int(sys.argv[1]) or os._exit(128 + int(sys.argv[2]))\n"
    "os.execvp(sys.argv[3], sys.argv[3:])\n")


def dies_with_parent(cmd: list[str]) -> list[str]:
    """`cmd` wrapped so that it ends when this process does (Linux); unchanged elsewhere."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-I", "-S", "-c", DIE_WITH_PARENT, str(os.getpid()),
            str(int(signal.SIGTERM)), *cmd]


def same_package_env(env: dict) -> dict:
    """Make the worker import the very couplescope this process runs.

    `python -m` puts the working directory first on sys.path: started inside a source
    checkout, a worker would import the source tree instead of the installed package
    (a different version, or one whose models/ are not inside it). PYTHONSAFEPATH
    (Python 3.11+) drops the working directory; PYTHONPATH names our own package root.
    """
    # this file is couplescope/core/runner.py: the package root is three levels up
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    return {**env, "PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join(paths)}


def worker_command(spec) -> list[str]:
    """The command that runs one variant; a backend may wrap it (mpiexec ...)."""
    from couplescope import backends

    return backends.get(spec.backend).command(spec, worker_argv(sys.executable, spec.to_dict()))


def backend_env(spec) -> dict:
    """Variables the backend's launch needs (Open MPI run as root)."""
    from couplescope import backends

    return backends.get(spec.backend).env(spec)


def prepare_launch(spec, emit) -> None:
    """What must exist before a variant's worker starts: the native host, compiled on first
    use (in a subprocess: this process never imports torch). Reports with host_build
    events; raises NativeBuildError when the build fails."""
    if spec.host != "native":
        return
    from couplescope.backends import native

    directory = native.build_dir()
    path, seconds = native.ensure_built(
        lambda message: emit(events.make("host_build", spec.label, status="building",
                                         directory=directory, message=message)))
    if seconds is None:
        emit(events.make("host_build", spec.label, status="cached", directory=directory))
    else:
        emit(events.make("host_build", spec.label, status="built", directory=directory,
                         seconds=round(seconds, 3)))


class WorkerProcess:
    """One running variant. Iterate `events()`; `stop()` ends it; `returncode` after."""

    #: called by the session before the worker starts (replayed workers have none)
    prepare = staticmethod(prepare_launch)

    def __init__(self, spec, env: dict | None = None, stderr_sink=None) -> None:
        self.spec = spec
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self._stderr_sink = stderr_sink
        cmd = worker_command(spec)
        full_env = same_package_env(dict(os.environ))
        full_env.update(backend_env(spec))
        full_env.update(env or {})
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        full_env[SCRATCH_ENV] = scratch.folder()   # the worker's files go in ours
        full_env.pop(PARENT_PID_ENV, None)
        if cmd == worker_argv(sys.executable, spec.to_dict()):
            full_env[PARENT_PID_ENV] = str(os.getpid())   # the worker asks to die with us
        else:
            cmd = dies_with_parent(cmd)                   # a launcher: asked for it, then exec'd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env, text=True,
                                     bufsize=1, start_new_session=True, encoding="utf-8",
                                     errors="replace")
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_tail.append(line.rstrip("\n"))
            if self._stderr_sink is not None:
                self._stderr_sink(line)

    def events(self):
        """Yield events as the worker writes them; lines that are not events are kept as stderr."""
        for line in self.proc.stdout:
            event = events.parse(line)
            if event is None:
                if line.strip():
                    self.stderr_tail.append(line.rstrip("\n"))
                continue
            yield event
        self.proc.wait()
        self._drain.join(timeout=2)

    def stop(self, timeout: float = 5.0) -> None:
        """End the worker (and anything it started): SIGTERM to its group, then SIGKILL."""
        if self.proc.poll() is not None:
            return
        # MPI launchers put each rank in a process group of its own: remember them, so
        # none is orphaned if the launcher has to be killed
        descendants = _descendants(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        _kill_survivors(descendants, timeout)

    @property
    def returncode(self):
        return self.proc.returncode

    def crash_reason(self) -> str:
        """One line for a worker that died without saying why."""
        from couplescope import backends

        reason = backends.get(self.spec.backend).crash_reason(self.spec, list(self.stderr_tail),
                                                              self.proc.returncode)
        if reason:
            return reason
        tail = [line for line in self.stderr_tail if line.strip()]
        last = tail[-1].strip() if tail else "no output"
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"worker ended with {how}: {last}"


def _descendants(pid: int) -> list:
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # psutil missing or the process already gone: nothing to remember
        return []


def _kill_survivors(processes: list, timeout: float) -> None:
    """SIGTERM, then SIGKILL, whatever of `processes` outlived the worker."""
    if not processes:
        return
    import psutil

    alive = [p for p in processes if p.is_running()]
    for p in alive:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(alive, timeout=min(timeout, 2.0))
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
