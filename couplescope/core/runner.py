"""Start a worker process for a variant and read its event stream (the parent's side).

The worker runs in its own session (process group) so a Ctrl-C in the terminal reaches
only the parent, which then ends the worker deliberately: SIGTERM to the whole group
(the worker reports what it measured and exits 130), SIGKILL if it does not go. Its
stderr is drained on a thread (a full pipe would stall the worker) and kept: its last
lines explain a crash, and `output` (what the worker printed: a user module's print()s,
which the worker sends to stderr) is handed to the user when the worker has ended.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

from couplescope.protocol import events, scratch
from couplescope.protocol.contract import (FINISH_COMMAND, PARENT_PID_ENV, is_worker_argv,
                                           round_command, worker_argv)


#: run before a launcher (mpiexec, srun): ask the kernel for SIGTERM when this process dies
#: (PR_SET_PDEATHSIG, kept across exec), unless it has died already, then become the
#: launcher. SIGTERM, not SIGKILL: srun then cancels its job and mpiexec ends its ranks.
_DIE_WITH_PARENT = ("import ctypes, os, signal, sys\n"
                    "ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
                    "os.getppid() == int(sys.argv[1]) or os._exit(143)\n"
                    "os.execvp(sys.argv[2], sys.argv[2:])\n")


def dies_with_parent(cmd: list[str]) -> list[str]:
    """`cmd` started so that it ends when this process does (Linux); unchanged elsewhere.
    A worker asks for it itself (couplescope.worker.main); a launcher cannot."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *cmd]


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


def worker_command(spec, paced: bool = False) -> list[str]:
    """The command that runs one variant; a backend may wrap it (mpiexec ...)."""
    from couplescope import backends

    return backends.get(spec.backend).launcher(spec).command(
        spec, worker_argv(sys.executable, spec.to_dict(), paced=paced))


def backend_env(spec) -> dict:
    """Variables the backend's launch needs (Open MPI run as root)."""
    from couplescope import backends

    return backends.get(spec.backend).launcher(spec).env(spec)


class LiveWorkers:
    """Real workers: a `WorkerProcess` per variant (couplescope.core.workers, the seam).

    One object per run: a host's build key (the native host's, a library host's) is worked
    out once per host and key, by the first variant that needs it, and what was built (or
    found in the cache) then serves every later one; workers are told where it is (the
    host's `worker_env`) instead of working the key out again, each of them, each MPI rank
    included."""

    processes = True

    def __init__(self, stderr_sink=None) -> None:
        self._stderr_sink = stderr_sink
        #: (host, build key) -> (build directory, what the worker is handed) or the failure
        self._builds: dict = {}
        #: host -> build key, worked out by the first variant on it that has the same inputs
        self._keys: dict = {}

    def _build_key(self, host, spec) -> str:
        inputs = host.key_inputs(spec)
        if (host.name, inputs) not in self._keys:
            self._keys[(host.name, inputs)] = host.build_key(spec)
        return self._keys[(host.name, inputs)]

    def prepare(self, spec, emit) -> None:
        """The variant's host built on first use (the native host compiles in a subprocess:
        this process never imports torch), reported with host_build events; raises the
        host's build error when the build fails (and again, without building again, for
        every later variant of this run that needs the same build)."""
        from couplescope.backends import hosts

        host = hosts.of(spec)
        if not host.needs_build(spec):
            return
        key = self._build_key(host, spec)
        done = self._builds.get((host.name, key))
        if isinstance(done, Exception):
            raise done
        if done is not None:   # built for an earlier variant of this run
            emit(events.make("host_build", spec.label, status="cached", directory=done[0]))
            return
        directory = host.build_dir(key)
        try:
            path, seconds = host.ensure_built(
                spec, lambda message: emit(events.make("host_build", spec.label, status="building",
                                                       directory=directory, message=message)), key)
        except Exception as exc:
            self._builds[(host.name, key)] = exc
            raise
        self._builds[(host.name, key)] = (directory, path)
        if seconds is None:
            emit(events.make("host_build", spec.label, status="cached", directory=directory))
        else:
            emit(events.make("host_build", spec.label, status="built", directory=directory,
                             seconds=round(seconds, 3)))

    def env_for(self, spec) -> dict:
        """What this run tells `spec`'s worker beside the listeners: where its host's build is."""
        from couplescope.backends import hosts

        host = hosts.of(spec)
        if not host.needs_build(spec):
            return {}
        done = self._builds.get((host.name, self._build_key(host, spec)))
        return host.worker_env(done[1]) if isinstance(done, tuple) else {}

    def start(self, spec, env: dict, shares=None) -> "WorkerProcess":
        return WorkerProcess(spec, {**env, **self.env_for(spec)}, stderr_sink=self._stderr_sink,
                             paced=shares is not None)


#: what torch's profiler (kineto) writes to stderr every time it starts and stops, whatever
#: the model: trace markers that say nothing to the user, so they are neither shown as a
#: module's output nor kept in <variant>.output.log (kineto's warnings and errors are)
TORCH_MARKER = re.compile(r"^USDT:.*\] profiler_(start|stop)\s*$")


class WorkerProcess:
    """One running variant, a worker process (a couplescope.core.workers.WorkerHandle).
    Iterate `events()`; `stop()` ends it; `returncode` after.

    Paced (--rounds), the worker waits after its warm-up for a command on its stdin:
    `run_round` sends one, and `events()` then yields up to that round's round_finished (the
    process stays, its model loaded, for the next); `finish` ends the rounds."""

    #: the last lines of what a worker printed that are kept for the user
    OUTPUT_LINES = 1000

    def __init__(self, spec, env: dict | None = None, stderr_sink=None, paced: bool = False) -> None:
        self.spec = spec
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        #: the last OUTPUT_LINES lines the worker printed (stderr and stray stdout), and how
        #: many it printed in all
        self.output: collections.deque[str] = collections.deque(maxlen=self.OUTPUT_LINES)
        self.output_total = 0
        self._output_lock = threading.Lock()   # lines come from the stderr thread and from events()
        self._stderr_sink = stderr_sink
        self.paced = paced
        self._stream = None                    # the one reader of its stdout, kept across rounds
        cmd = worker_command(spec, paced)
        if not is_worker_argv(cmd):   # a launcher around the worker
            cmd = dies_with_parent(cmd)
        full_env = same_package_env(dict(os.environ))
        full_env.update(backend_env(spec))
        self._scratch = scratch.worker_env()   # its temporary files, removed when it ends
        full_env.update(self._scratch)
        full_env[PARENT_PID_ENV] = str(os.getpid())
        full_env.update(env or {})
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if paced else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env, text=True,
                                     bufsize=1, start_new_session=True, encoding="utf-8",
                                     errors="replace")
        #: called with a message the user must hear now (a pending srun step); the session sets it
        self.on_notice = None
        self._gave_up: str | None = None   # why the launch was abandoned (the failure's line)
        self._cleaned = False
        self._heard = threading.Event()    # the worker has written its first event
        #: where its processes run (rank_info events), for a crash's line: "rank 1 on node n2"
        self.placements: list[dict] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_stderr(self) -> None:
        from couplescope import backends

        backend = backends.get(self.spec.backend)
        for line in self.proc.stderr:
            self._printed(line)
            if self._stderr_sink is not None:
                self._stderr_sink(line)
            if not self._heard.is_set():
                notice = backend.launcher(self.spec).notice(self.spec, line)
                if notice is not None:
                    self._notice(*notice)

    def _printed(self, line: str) -> None:
        """A line the worker printed (not an event): kept for a crash's reason and for the user."""
        line = line.rstrip("\n")
        if TORCH_MARKER.match(line):
            return
        with self._output_lock:
            self.stderr_tail.append(line)
            self.output.append(line)
            self.output_total += 1

    def _notice(self, message: str, give_up_after: float | None) -> None:
        """Tell the user now; if the worker still has not spoken after `give_up_after`
        seconds, end the launch and make `message` the failure's line."""
        if self.on_notice is not None:
            self.on_notice(message)
        if give_up_after is None:
            return

        def give_up():
            if not self._heard.wait(give_up_after) and self.proc.poll() is None:
                self._gave_up = f"{message.split(';')[0]}; gave up after {give_up_after:.0f} s"
                self.stop()
        threading.Thread(target=give_up, name="couplescope-launch-wait", daemon=True).start()

    def events(self):
        """Yield events as the worker writes them, until it has ended; paced, until it ends
        the round it was given (its round_finished is the last event yielded)."""
        if self._stream is None:
            self._stream = self._read()
        for event in self._stream:
            yield event
            if self.paced and event["event"] == "round_finished":
                return

    def _send(self, command: str) -> None:
        """A command on the paced worker's stdin; a worker already gone reads nothing, and
        says so by ending its stream (the session reports how it ended)."""
        try:
            self.proc.stdin.write(command)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def run_round(self, round_number: int, iterations: int) -> None:
        """Measure `iterations` timed iterations as round `round_number` (paced)."""
        self._send(round_command(round_number, iterations))

    def finish(self) -> None:
        """The rounds are over: the worker profiles, finishes and ends (paced)."""
        self._send(FINISH_COMMAND)

    def _read(self):
        """Every event the worker writes; lines that are not events are kept as stderr."""
        for line in self.proc.stdout:
            event = events.parse(line)
            if event is not None:
                self._heard.set()
            if event is None:
                if line.strip():
                    self._printed(line)
                continue
            if event["event"] == "rank_info":
                self.placements.append(event)
            yield event
        self.proc.wait()
        self._drain.join(timeout=2)
        self._ended()

    def _ended(self) -> None:
        """Once the launch has ended: its temporary folder goes, and the backend releases
        what the launcher may have left (srun: a job of ours). Once only."""
        if self.proc.poll() is None or self._cleaned:
            return
        self._cleaned = True
        if self.proc.stdin is not None:   # paced: the commands' pipe
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        shutil.rmtree(self._scratch["TMPDIR"], ignore_errors=True)
        from couplescope import backends

        backends.get(self.spec.backend).launcher(self.spec).cleanup(self.spec)

    def stop(self, timeout: float = 5.0) -> None:
        """End the worker (and anything it started): SIGTERM to its group, then SIGKILL."""
        if self.proc.poll() is not None:
            self._ended()
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
        self._ended()

    @property
    def returncode(self):
        return self.proc.returncode

    def crash_kind(self) -> str:
        """"lost" when the launcher says a node of the job failed, else "error"."""
        from couplescope import backends

        lost = backends.get(self.spec.backend).launcher(self.spec).lost_node(self.spec, list(self.stderr_tail),
                                                                             self.placements)
        return "lost" if lost else "error"

    def crash_reason(self, after: str = "") -> str:
        """One line for a worker that died without saying why; `after` says how far it got
        ("after warm-up iteration 2"), from the events the parent received."""
        from couplescope import backends

        if self._gave_up:
            return self._gave_up
        launch = backends.get(self.spec.backend).launcher(self.spec)
        reason = launch.crash_reason(self.spec, list(self.stderr_tail), self.proc.returncode, self.placements)
        if reason:
            return f"{reason} ({after})" if after and self.crash_kind() == "lost" else reason
        tail = [line for line in self.stderr_tail if line.strip()]
        last = f"its last output: {tail[-1].strip()}" if tail else "it printed nothing"
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"worker ended with {how}{' ' + after if after else ''}; {last}"


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
