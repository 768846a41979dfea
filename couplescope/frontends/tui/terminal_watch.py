"""Notice the app's terminal going away when no SIGHUP says so.

A closed terminal usually sends the app SIGHUP, and the app then saves every run and
leaves (CoupleScopeApp.hang_up). But the kernel sends that signal to the terminal's session
leader, and to the app only once the leader has gone: a shell that ignores SIGHUP (`trap ''
HUP`, some wrappers and job launchers) never passes it on, and a loaded machine can delay
it. Meanwhile Textual's output thread dies on its first failed write, and the app's loop
blocks on its next one for good, with the run's worker still computing. Measured here: an
app under `trap '' HUP` whose tmux session was killed was still running, its worker busy,
with nothing saved.

So a thread reads the terminal's attributes twice a second (a tcgetattr: no output, no
input taken) and, when they fail with EIO (the terminal hung up), sends the app the SIGHUP
it should have had. The handler then runs in the main thread even while the loop is
blocked (a blocked lock acquire is interrupted by a signal).
"""

from __future__ import annotations

import errno
import os
import signal
import threading


class TerminalWatch:
    def __init__(self, fd: int, period: float = 0.5) -> None:
        self.fd, self.period = fd, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="couplescope-terminal-watch", daemon=True)
        self.hung_up = False

    def start(self) -> "TerminalWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        import termios

        while not self._stop.wait(self.period):
            try:
                termios.tcgetattr(self.fd)
            except termios.error as exc:
                if exc.args and exc.args[0] == errno.EIO:
                    self.hung_up = True
                    os.kill(os.getpid(), signal.SIGHUP)
                return   # not a terminal any more, in any case: nothing left to watch
            except (OSError, ValueError):
                return
