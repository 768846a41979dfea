"""SIGINT, SIGTERM and SIGHUP end a run the same way: stop the worker, keep what it measured.

SIGTERM is what a batch system sends at its time limit and on scancel (and what
`timeout` and `kill` send); SIGHUP comes when the terminal or ssh session closes. Left to
their default action they kill this process on the spot: no results.json, no summary,
and a worker (in a session of its own, so the signal never reached it) left running.

`handled()` installs one handler for all three, in the main thread, for the life of a
command. What the handler does depends on what is running:

- while a run's worker is going, the registered stopper (`Session.stop_for_signal`) ends
  it from a helper thread and returns: the worker reports being interrupted, the session
  finishes normally, the exporters write, the printer summarises, and the exit code is
  the signal's (129, 130, 143);
- otherwise (building the request, compiling the native host, between runs) it raises
  `Interrupted`, a KeyboardInterrupt that knows its signal, which the code around the
  run already treats as Ctrl-C.

A second signal while the first is being handled is only noted: the shutdown it would
interrupt (writing results.json, ending the worker) is already under way and bounded
(the worker is killed if it has not gone within a few seconds).
"""

from __future__ import annotations

import contextlib
import signal
import threading

from couplescope.protocol.contract import STOP_SIGNALS, exit_code_for_signal


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived outside a running worker: unwinds like Ctrl-C, knows its signal."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal_name(signum))
        self.signum = int(signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signum_of(exc: BaseException) -> int:
    """The signal behind a KeyboardInterrupt (a plain one is Ctrl-C: SIGINT)."""
    return getattr(exc, "signum", signal.SIGINT)


def exit_code_of(exc: BaseException) -> int:
    return exit_code_for_signal(signum_of(exc))


class _State:
    def __init__(self) -> None:
        self.stopper = None        # callable(signum) -> True when it stops the run itself
        self.received: int | None = None
        # re-entrant: the handler runs in the main thread, which may hold it already
        self.lock = threading.RLock()


_state = _State()


def _handler(signum, frame) -> None:
    with _state.lock:
        first = _state.received is None
        if first:
            _state.received = signum
        stopper = _state.stopper
    if not first:
        return   # already shutting down: let it finish
    if stopper is not None and stopper(signum):
        return
    raise Interrupted(signum)


def received() -> int | None:
    """The first stop signal since `handled()` began, or None."""
    return _state.received


#: handlers we replace: the defaults (a program's own handler, or SIG_IGN, is left alone:
#: SIGINT is ignored in a background job started by a non-interactive shell, and stays so)
_DEFAULTS = (signal.SIG_DFL, signal.default_int_handler)


@contextlib.contextmanager
def handled():
    """Route SIGINT, SIGTERM and SIGHUP to the run (see the module's docstring) for the
    duration; the previous handlers come back after. Only in the main thread (Python
    delivers signals there), and only over default handlers, so nesting is harmless and
    a library caller's own handlers win."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in STOP_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) in _DEFAULTS:
                previous[signum] = signal.signal(signum, _handler)
    if previous:
        with _state.lock:
            _state.received = None
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def stopping(stopper):
    """While the block runs, a stop signal calls `stopper(signum)` (from the main thread, in
    the signal handler: it must not block) instead of raising, if it returns True.

    Only from the main thread: code on another thread (a session on the app's run thread)
    leaves signals to the main thread's owner (the app, which stops its run and exits)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _state.lock:
        outer, _state.stopper = _state.stopper, stopper
    try:
        yield
    finally:
        with _state.lock:
            _state.stopper = outer
