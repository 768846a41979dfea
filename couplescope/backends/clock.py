"""The phase clock every backend times its calls with, and the phase names.

Keeping the clock here (not in each backend) means every backend's phases mean the
same thing and the profiler's `record_function` ranges carry the same names. Bridge
modules receive it as config["phase"].
"""

from __future__ import annotations

from time import perf_counter

#: Phase names, in the order they happen. Backends use these and nothing else. A training
#: step (--task train) has zero_grad, forward, loss, backward, allreduce (MPI) and step, or
#: replay (a step captured into one CUDA Graph, which cannot be split), or train (a step a
#: library makes in one call, which cannot be split either: pytorch-fortran's train).
PHASES = ("load", "marshal_in", "h2d", "zero_grad", "forward", "loss", "backward", "allreduce",
          "step", "replay", "train", "d2h", "marshal_out")
RANGE_PREFIX = "couplescope/"


class PhaseClock:
    """`with clock("forward"): ...` adds the wall time of the block to phases["forward"].

    Accumulates (cgdrag makes two calls per iteration). When `profiling` is on, each
    phase is also a torch.profiler range named couplescope/<phase> (profiler_range);
    off, no profiler call is made, so timed iterations pay nothing for it. When `sync`
    is set (a CUDA device), it is called before both timestamps so a phase is measured
    at its device-true length, not its launch cost; synchronising rather than CUDA events
    keeps host-only phases and device phases on one clock (docs/gpu.md says why and what
    it costs). Not re-entrant: phases do not nest.
    """

    __slots__ = ("phases", "profiling", "sync", "_name", "_t0", "_range")

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.profiling = False
        self.sync = None
        self._name = ""
        self._t0 = 0.0
        self._range = None

    @property
    def plain(self) -> bool:
        """True when a phase is nothing but a wall-clock interval (no profiler range, no
        device synchronisation): then `add` with the caller's own perf_counter readings
        times it for a fraction of a `with` block's cost."""
        return not self.profiling and self.sync is None

    def add(self, name: str, seconds: float) -> None:
        """Add `seconds` to a phase. A `with clock(...)` block costs about 0.5 us in
        Python (the context-manager protocol); a module that times its phases on every
        call with perf_counter and `add` pays about a fifth of that, which matters when
        the call itself takes microseconds (docs/bridge.md)."""
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    def reset(self) -> dict[str, float]:
        """Start a new iteration; returns the previous iteration's phases."""
        done, self.phases = self.phases, {}
        return done

    def __call__(self, name: str) -> "PhaseClock":
        self._name = name
        return self

    def __enter__(self) -> "PhaseClock":
        if self.profiling:
            self._range = profiler_range()[0](RANGE_PREFIX + self._name)
        if self.sync is not None:
            self.sync()
        self._t0 = perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        if self.sync is not None:
            self.sync()
        dt = perf_counter() - self._t0
        self.phases[self._name] = self.phases.get(self._name, 0.0) + dt
        if self._range is not None:
            profiler_range()[1](self._range)
            self._range = None


_RANGE: tuple = ()


def profiler_range() -> tuple:
    """(open, close) of a torch.profiler range: open(name) returns what close takes.

    The range is a user annotation, as `torch.profiler.record_function` makes it and as the
    native host's at::RecordFunction(USER_SCOPE) does, so both hosts' phases are the same
    kind of event. Its cost lands in profiled calls only (and partly inside the range it
    draws): under an active profiler record_function's open and close took 9.1 us on the
    build machines (two dispatcher operators), the bindings behind it
    (torch._C._autograd._record_function_with_args_enter/exit) 2.4 us; in a python-host
    SimpleNet call, 40 us and 20 us per range. So those are used where torch has them
    (benchmarks/profiler_overhead.py --ranges; docs/profiling.md has the figures)."""
    global _RANGE
    if not _RANGE:
        import torch

        autograd = torch._C._autograd
        if hasattr(autograd, "_record_function_with_args_enter"):
            _RANGE = (autograd._record_function_with_args_enter, autograd._record_function_with_args_exit)
        else:
            _RANGE = _record_function_range()
    return _RANGE


def _record_function_range() -> tuple:
    """(open, close) through the public torch.profiler.record_function."""
    from torch.profiler import record_function

    def open_range(name: str):
        handle = record_function(name)
        handle.__enter__()
        return handle

    return open_range, lambda handle: handle.__exit__(None, None, None)
