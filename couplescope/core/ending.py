"""Signals that end a run in the parent: each is handled as Ctrl-C is.

A batch scheduler ends a job with SIGTERM (Slurm at the time limit and on scancel, then
SIGKILL after KillWait; `timeout` too), and closing an ssh session or a tmux pane sends
SIGHUP. Python's defaults for those two kill the process on the spot: the worker was left
running (it is in a session of its own, so the terminal's signals do not reach it), no
results.json was written and temporary files stayed in /tmp. Here both raise `Ended`, a
KeyboardInterrupt, so they take the path Ctrl-C has always taken: the session stops the
worker, keeps its last words, the exporters write what was measured, and the command exits
128 + the signal's number (130, 143, 129). After the first signal the later ones are
ignored until the run is saved: a second SIGTERM (or an impatient second Ctrl-C) must not
lose the results the first one is saving. A signal the process was started ignoring stays
ignored: `nohup` ignores SIGHUP, and a shell's background job ignores SIGINT, on purpose.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

#: the signals that end a run, as a shell numbers them
ENDING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Ended(KeyboardInterrupt):
    """The run was ended by a signal (`signum`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signum_of(exc: BaseException) -> int:
    """The signal behind a KeyboardInterrupt (a plain one is Ctrl-C's SIGINT)."""
    return getattr(exc, "signum", signal.SIGINT)


@contextmanager
def signals_end_the_run():
    """While the block runs (in the main thread), SIGINT, SIGTERM and SIGHUP raise Ended;
    after the first, the others are ignored until the block has finished. Elsewhere than
    the main thread it does nothing (signals are only delivered there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    first: list[int] = []

    def handler(signum, frame):
        if first:
            return
        first.append(signum)
        raise Ended(signum)

    previous = {}
    for sig in ENDING:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue   # ignored on purpose (nohup for SIGHUP, a shell's background job for SIGINT)
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
