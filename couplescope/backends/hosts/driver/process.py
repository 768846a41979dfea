"""A library host's driver as a child process of the worker: commands in, one answer each.

The driver never outlives the worker: it is asked for SIGKILL when the worker's thread
that started it dies (PR_SET_PDEATHSIG), ignores SIGINT (a Ctrl-C at the terminal reaches
the whole process group; the worker ends the run, and its driver with it), and reads
end-of-file on its commands when the worker is gone. What the driver and the user's
library print on stderr is kept (and, with `echo`, written to the worker's stderr, where
the run's output is collected): the last lines say why a driver that stopped answering
stopped (FTorch prints "[ERROR]: ..." and exits; an uncaught C++ exception, as
pytorch-fortran rethrows libtorch's, is the runtime's "what(): ..." line). A call that
raised (forpy's embedded Python) is answered "raised N TEXT": DriverRaised.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading

PREFIX = "couplescope: "


class DriverEnded(RuntimeError):
    """The driver stopped before answering; the message is its own last words."""


class DriverRaised(RuntimeError):
    """A call the driver made raised (an embedded Python's exception): it answered
    "raised N TEXT" after making N iterations, and goes on serving."""

    def __init__(self, made: int, text: str) -> None:
        super().__init__(text)
        self.made, self.text = made, text


def _child_setup() -> None:   # pragma: no cover - runs in the child
    import ctypes

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class DriverProcess:
    def __init__(self, argv: list[str], env: dict, what: str, echo: bool = False) -> None:
        self.what = what
        #: what the driver prints on stderr is also written to the worker's (a Python
        #: module's print(): the run's output), besides being kept for why()
        self.echo = echo
        self.last_lines: collections.deque = collections.deque(maxlen=40)
        #: an uncaught C++ exception's message (the runtime's "what(): ..." line before it
        #: aborts: pytorch-fortran rethrows libtorch's), kept apart since the backtraces
        #: printed after it push it out of last_lines
        self.uncaught: str | None = None
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env,
                                     errors="replace", preexec_fn=_child_setup)
        self._stderr = threading.Thread(target=self._keep_stderr, name="couplescope-driver-stderr",
                                        daemon=True)
        self._stderr.start()
        self.expect("ready")

    def _keep_stderr(self) -> None:
        import sys

        for line in self.proc.stderr:
            self.last_lines.append(line.rstrip("\n"))
            if line.lstrip().startswith("what():"):
                self.uncaught = line.strip()[len("what():"):].strip()
            if self.echo:
                sys.stderr.write(line)

    def ask(self, command: str, expect: str) -> str:
        """Send one command; the words after `expect` in the driver's answer."""
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise DriverEnded(self.why()) from None
        return self.expect(expect)

    def expect(self, word: str) -> str:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise DriverEnded(self.why())
            if not line.startswith(PREFIX):
                self.last_lines.append(line.rstrip("\n"))   # the library printed it
                continue
            answer = line[len(PREFIX):].strip()
            if answer.startswith("error "):
                raise DriverEnded(f"{self.what}: {answer[len('error '):]}")
            if answer.startswith("raised ") and word == "done":
                made, _, text = answer[len("raised "):].partition(" ")
                raise DriverRaised(int(made), text)
            if answer.split(" ", 1)[0] != word:
                raise DriverEnded(f"{self.what} answered '{answer}' to a command expecting '{word}'")
            return answer[len(word):].strip()

    def why(self) -> str:
        """One line: the driver's exit and what it (or the library) said last."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr.join(timeout=2)
        said = [line.strip() for line in self.last_lines if line.strip()]
        errors = [line for line in said if "[ERROR]" in line or "Error" in line or "error" in line]
        last = self.uncaught or (errors or said or ["it printed nothing"])[-1]
        how = f"exit code {code}" if code is not None and code >= 0 else (
            f"signal {-code}" if code is not None else "still running")
        return f"{self.what} stopped ({how}): {last}"

    def resident_bytes(self) -> int | None:
        """The driver's resident memory (Linux's /proc), or None where it cannot be read."""
        try:
            with open(f"/proc/{self.proc.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    def end(self) -> None:
        """Ask it to quit; end it if it does not."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stdin):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


def driver_env(threads: int | None) -> dict:
    """The driver's environment: the worker's, with libtorch's intra-op threads set as a job
    script sets them (OMP_NUM_THREADS) when --threads is given; FTorch has no call for it."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env
