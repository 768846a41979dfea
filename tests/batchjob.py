"""Start `couplescope` as a batch system or a terminal would, and check what it leaves.

A job started from a non-interactive shell has SIGINT ignored; a terminal (and Slurm's
step) gives the default. `start()` restores the default handlers, puts the command in a
session of its own (setsid, like a batch step) and gives it a private TMPDIR, so the
test can see every temporary folder it makes. `Job.seen` collects every process of the
tree while the job runs, so `assert_nothing_left()` can check that none outlived it,
including a worker orphaned by a parent killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil


def _default_signals() -> None:
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)


class Job:
    def __init__(self, args, cwd, tmpdir, env=None, stdin=subprocess.DEVNULL) -> None:
        self.tmpdir = str(tmpdir)
        os.makedirs(self.tmpdir, exist_ok=True)
        full_env = dict(os.environ, NO_COLOR="1", TMPDIR=self.tmpdir)
        full_env.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "couplescope", *map(str, args)], cwd=cwd,
                                     stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=full_env, start_new_session=True,
                                     preexec_fn=_default_signals)
        self.seen: dict[int, psutil.Process] = {}
        self.out = self.err = ""

    def look(self) -> list[psutil.Process]:
        """Record the job's process tree now; return its live processes, parent first."""
        try:
            root = psutil.Process(self.proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        for p in tree:
            self.seen.setdefault(p.pid, p)
        return tree

    def workers(self) -> list[psutil.Process]:
        out = []
        for p in self.look()[1:]:
            try:
                if "couplescope.worker" in " ".join(p.cmdline()):
                    out.append(p)
            except psutil.Error:
                pass
        return out

    def wait_until(self, condition, timeout: float = 90.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self.look()
            if self.proc.poll() is not None:
                self.finish()
                raise AssertionError(f"the job ended (exit {self.proc.returncode}) before {what}:\n{self.err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(0.1)

    def signal(self, signum: int) -> None:
        self.look()
        self.proc.send_signal(signum)

    def finish(self, timeout: float = 60.0) -> int:
        if self.proc.returncode is None or not self.out:
            out, err = self.proc.communicate(timeout=timeout)
            self.out, self.err = self.out + (out or ""), self.err + (err or "")
        return self.proc.returncode

    def wait_for_the_tree_to_end(self, timeout: float) -> None:
        gone, alive = psutil.wait_procs(list(self.seen.values()), timeout=timeout)
        assert not alive, f"processes outlived the job by {timeout} s: {[p.pid for p in alive]}"

    def sweep_as_the_next_run_would(self, cwd) -> None:
        """A parent killed with SIGKILL cannot remove its scratch folder: the next
        couplescope command does (`--list` is the quickest)."""
        next_run = subprocess.run([sys.executable, "-m", "couplescope", "--list"], cwd=cwd,
                                  capture_output=True, text=True, env=dict(os.environ, TMPDIR=self.tmpdir))
        assert next_run.returncode == 0, next_run.stderr

    def assert_nothing_left(self, timeout: float = 10.0) -> None:
        """No process of the job's tree is alive, and its TMPDIR holds no couplescope folder."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.finish()
            raise AssertionError("the job was still running")
        gone, alive = psutil.wait_procs(list(self.seen.values()), timeout=timeout)
        names = []
        for p in alive:
            try:
                names.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
                p.kill()
            except psutil.Error:
                pass
        assert not alive, f"processes outlived the job: {names}"
        # torch's own caches (torchinductor_<user>) are meant to stay; ours are not
        left = sorted(n for n in os.listdir(self.tmpdir) if "couplescope" in n)
        assert not left, f"left in TMPDIR: {left}"


def timed_iterations(run_parent) -> int:
    """Timed iterations in the events.jsonl of the (only) run directory under `run_parent`."""
    found = list(run_parent.glob("*/events.jsonl")) if run_parent.exists() else []
    return found[0].read_text().count('"kind":"timed"') if found else 0


def results(run_parent) -> dict:
    return json.loads(next(run_parent.glob("*/results.json")).read_text())


class TerminalJob(Job):
    """A Job on a pseudo-terminal of 80x24 (stdin, stdout and stderr), as in a terminal
    window; `keys()` types, `screen` is everything it wrote (drained on a thread)."""

    def __init__(self, args, cwd, tmpdir, env=None) -> None:
        import fcntl
        import pty
        import struct
        import termios
        import threading

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.master = master
        self.tmpdir = str(tmpdir)
        os.makedirs(self.tmpdir, exist_ok=True)
        full_env = dict(os.environ, TMPDIR=self.tmpdir, TERM="xterm-256color", COLUMNS="80", LINES="24")
        full_env.update(env or {})

        def on_terminal():
            _default_signals()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)   # the pty is its controlling terminal

        self.proc = subprocess.Popen([sys.executable, "-m", "couplescope", *map(str, args)], cwd=cwd,
                                     stdin=slave, stdout=slave, stderr=slave, env=full_env,
                                     start_new_session=True, preexec_fn=on_terminal)
        os.close(slave)
        self.seen = {}
        self.out = self.err = ""
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:   # EIO: every process holding the terminal has gone
                return
            if not data:
                return
            self._chunks.append(data)

    @property
    def screen(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def keys(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 60.0) -> int:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        self.out = self.err = self.screen
        return self.proc.returncode


def mount_small_disk(path, size: str):
    """A tmpfs of `size` at `path` (a disk that fills up for real); pytest.skip where
    mounting is not allowed. Returns the function that unmounts it."""
    import pytest

    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({(r.stderr or r.stdout).strip()}); "
                    "needs root or CAP_SYS_ADMIN")
    return lambda: subprocess.run(["umount", "-l", str(path)], capture_output=True)
