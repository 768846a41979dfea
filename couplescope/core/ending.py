"""Signals that end a run in the parent: each is handled as Ctrl-C is.

A batch scheduler ends a job with SIGTERM (Slurm at the time limit and on scancel, then
SIGKILL after KillWait; `timeout` too), and closing an ssh session or a tmux pane sends
SIGHUP. Python's defaults for those two kill the process on the spot: the worker was left
running (it is in a session of its own, so the terminal's signals do not reach it), no
results.json was written and temporary files stayed in /tmp. Here both raise `Ended`, a
KeyboardInterrupt, so they take the path Ctrl-C has always taken: the session stops the
worker, keeps its last words, the exporters write what was measured, and the command exits
128 + the signal's number (130, 143, 129). Once the run has taken the first signal in hand
(`acknowledge()`: the session has stopped its workers and is saving), later ones are
ignored: a second SIGTERM (or an impatient second Ctrl-C) must not lose the results the
first one is saving. A signal the process was started ignoring stays ignored: `nohup`
ignores SIGHUP, and a shell's background job ignores SIGINT, on purpose.

Python runs a signal's handler wherever the main thread happens to be, and an exception
raised there can be lost: in a finalizer or a weakref callback (Python only prints it), or
in a library's bare `except:`. Then the run, ignoring every later signal, would measure
until SIGKILL (one CI run did, after a SIGTERM; what lost that one was never found). So
the signal is also recorded: the session asks `raise_if_pending()` at every event and
between variants and rounds, and until the signal is acknowledged a later one raises
Ended again instead of being ignored.
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


class _Received:
    """The signal that came during a `signals_end_the_run` block, and whether the run has
    taken it in hand."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.acknowledged = False


#: the block that is running (signals are only handled in the main thread: one at a time)
_active: _Received | None = None


def pending() -> int | None:
    """The signal that came and that nothing has acted on yet (None: none came, it was
    acknowledged, or no `signals_end_the_run` block is running)."""
    received = _active
    if received is None or received.acknowledged:
        return None
    return received.signum


def raise_if_pending() -> None:
    """Raise Ended for a signal that came and was lost before anything acted on it."""
    signum = pending()
    if signum is not None:
        raise Ended(signum)


def acknowledge() -> None:
    """The run has the signal in hand (its workers are being stopped, what was measured is
    being saved): from now on later signals are ignored."""
    if _active is not None:
        _active.acknowledged = True


@contextmanager
def signals_end_the_run():
    """While the block runs (in the main thread), SIGINT, SIGTERM and SIGHUP raise Ended;
    once the first is acknowledged, the others are ignored until the block has finished.
    Elsewhere than the main thread it does nothing (signals are only delivered there)."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = _Received()

    def handler(signum, frame):
        if received.acknowledged:
            return
        if received.signum is None:
            received.signum = signum
        raise Ended(received.signum)

    previous = {}
    for sig in ENDING:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue   # ignored on purpose (nohup for SIGHUP, a shell's background job for SIGINT)
        previous[sig] = signal.signal(sig, handler)
    outer, _active = _active, received
    try:
        yield
    finally:
        _active = outer
        for sig, old in previous.items():
            signal.signal(sig, old)
