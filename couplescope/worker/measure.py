"""The measured loop: a prepared variant's iterations, timed, checked and reported.

What the engine (couplescope.worker.engine) and the profiled window
(couplescope.worker.profiling) share: the variant ready to measure (`Prepared`), the
one-call loop (`measure`) and the batches a host makes back to back. Both import it and
it imports neither, so the engine can run the profiled window and the window can run
iterations without an import cycle between them (docs/architecture.md; a lint-imports
contract keeps it so).

Only the coupling's call sits inside the timed region; the output reset, the check and
the event writing happen between iterations. A training variant (`Prepared.training`,
couplescope.worker.training_checks) fills its step's data where an inference variant resets its
outputs, and judges the step's loss where an inference variant checks its outputs.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from couplescope.backends.base import Coupling, error_text, essential_line
from couplescope.backends.clock import PhaseClock
from couplescope.backends.batch import training_extra
from couplescope.protocol.columns import per_call, shared, to_ns
from couplescope.worker.training_checks import LossNotFinite


@dataclass
class Prepared:
    """A variant ready to measure: workload, host arrays, expected output, coupling."""

    spec: object
    workload: object
    size: int
    dtype: str
    arrays: dict
    outputs: dict
    expected: dict
    calls: list
    clock: PhaseClock
    coupling: Coupling
    tolerance: float
    #: the batches' runner, made on first use (couplescope.backends.batch)
    runner: object = None
    #: --task train: the data, reference and checks of the steps (worker.training_checks.Training)
    training: object = None

    def check(self, outputs: dict | None = None) -> tuple[float, bool, str | None]:
        """Max relative error and pass/fail of the outputs the last call wrote (or of an
        iteration's snapshot of them, from a batch)."""
        if outputs is None and self.coupling.output_error:
            return float("inf"), False, self.coupling.output_error
        err = self.workload.check(self.outputs if outputs is None else outputs, self.expected, self.arrays)
        passed = bool(np.isfinite(err) and err <= self.tolerance)
        return err, passed, None

    def batch_runner(self):
        """The coupling's own batches (a native host's, in C++), else the python host's
        loop; made once, so what it learnt (batch size, the judged output) carries over."""
        if self.runner is None:
            from couplescope.backends.batch import PythonBatchRunner

            outputs = {} if self.training else self.outputs   # a step's check is its loss
            self.runner = self.coupling.call_batch or PythonBatchRunner(self.coupling, self.clock,
                                                                        outputs, self.arrays)
            self.runner.feeder = self.training
        return self.runner

    def poison_outputs(self) -> None:
        """Fill outputs with NaN so a coupling that never writes host memory fails its check;
        a training step's data instead (it checks its loss, not its outputs)."""
        if self.training is not None:
            self.training.fill_next()
        else:
            for out in self.outputs.values():
                out.fill(np.nan)
        self.coupling.output_error = None

    def judge_step(self, kind: str, index: int, loss: float) -> tuple[float, bool, str | None]:
        return self.training.judge(loss, kind, index, self.coupling)


def measure(prepared: Prepared, emit, kind: str, count: int, after=None, batch: bool = False,
            first: int = 1) -> int:
    """Run `count` iterations of one kind, numbered from `first` (a round's go on from the
    last round's), emitting an event after each; `after(kind, index)` runs after every
    event, outside the timed region. With `batch` (one process), the calls run in batches
    with nothing of the engine between them (couplescope.backends.batch). Returns how many
    ran. Nothing is kept here: the events are the record (a list of every iteration grew
    the worker by ~30 MiB over 50 000 calls and looked like a leak)."""
    if batch:
        return _measure_batched(prepared, prepared.batch_runner(), emit, kind, count, after,
                                first - 1) - (first - 1)
    coupling, clock = prepared.coupling, prepared.clock
    for index in range(first, first + count):
        prepared.poison_outputs()
        clock.reset()
        error = None
        hosted = None
        t0 = perf_counter()
        try:
            hosted = coupling.call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a failing model is a FAILED check, not a crash
            error = error_text(exc)
        seconds = perf_counter() - t0
        if hosted is not None:   # timed by the host itself (native: in C++)
            seconds = hosted
        phases = clock.reset()
        extra, done = {}, False
        if prepared.training is not None:
            extra = training_extra(coupling) if error is None else {"loss": float("nan")}
            done = extra.pop("done", False)
            if error is None:
                err, passed, error = prepared.judge_step(kind, index, extra["loss"])
            else:
                err, passed = float("inf"), False
        elif error is None:
            err, passed, error = prepared.check()
        else:
            err, passed = float("inf"), False
        _record(emit, index, kind, seconds, phases, err, passed, error, after, extra)
        if "loss" in extra and not np.isfinite(extra["loss"]):
            raise LossNotFinite(error or f"the call failed at {kind} step {index}")
        if done:
            prepared.training.said_done(kind, index)   # raises TrainingComplete where honoured
    return count


#: the signals that end a run; while a batch of several calls runs they only take note,
#: and act once the batch is reported
_ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                        if hasattr(signal, name))


@contextmanager
def signals_noted():
    """Yields a list that the ending signals append to instead of acting; on leaving, the
    first one noted is raised again with the handlers it found. A batch of short calls then
    loses none of the calls it made (they are checked and reported first), and acts on a
    signal within one batch (about 0.1 s)."""
    noted: list[int] = []
    previous = {}
    for sig in _ENDING_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: noted.append(signum))
        except (ValueError, OSError):   # not the main thread: nothing is deferred
            pass
    try:
        yield noted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if noted:
            signal.raise_signal(noted[0])


def _measure_batched(prepared: Prepared, runner, emit, kind: str, count: int, after,
                     before: int = 0) -> int:
    """The same iterations, their calls made back to back by the host: each iteration's
    outputs come back as a snapshot and are checked here, after the batch, and the batch
    is reported as one `iterations` event (columns; a JSON object per call would cost the
    worker and the parent more than a small model's call). A batch of one call (a slow
    model) stays interruptible in the middle of its call, as the one-call loop is."""
    index, count = before, before + count   # numbered on from the calls made `before`
    while index < count:
        size = runner.size(count - index)
        with (signals_noted() if size > 1 else nullcontext([])) as noted:
            index = _one_batch(prepared, runner, emit, kind, index, count, size, after,
                               stop=lambda: bool(noted))
    return index


def _one_batch(prepared, runner, emit, kind, index, count, size, after, stop) -> int:
    """One batch made, checked and reported, in columns (backends/batch.py says why)."""
    batch = runner.run(size, stop)
    (errs, passes, errors), diverged = _judged(prepared, runner, batch, kind, index)
    ns, phases, losses = batch.ns, batch.phases_ns, batch.losses
    n = len(batch)
    if batch.failure is not None and index + n < count:   # the call that raised: FAILED
        message, failed_after = batch.failure
        prepared.clock.reset()
        errs, passes, errors = (per_call(c, n) for c in (errs, passes, errors))
        ns, errs, passes = ns + to_ns([failed_after]), errs + [float("inf")], passes + [False]
        errors = errors + [first_line_of(message)]
        phases = {name: column + [None] for name, column in phases.items()}
        losses = None if losses is None else losses + [float("nan")]
        n += 1
    if n:   # in nanoseconds, a check result every call shares as one value (protocol.columns)
        fields = {"kind": kind, "first_index": index + 1, "ns": ns, "phases_ns": phases,
                  "max_rel_error": errs, "passed": passes, "error": errors}
        if losses is not None:   # training steps
            fields["loss"] = losses
        emit("iterations", **fields)
    if after is not None:
        for step in range(index + 1, index + n + 1):
            after(kind, step)
    if diverged:
        raise LossNotFinite(diverged)
    if batch.done is not None:   # not an event field: said after the batch
        prepared.training.said_done(kind, index + batch.done + 1)   # raises TrainingComplete where honoured
    return index + n


def _judged(prepared, runner, batch, kind, index) -> tuple[tuple, str | None]:
    """((max_rel_error, passed, error) columns, why the training diverged or None) of a
    batch: a training step is judged by its loss, a call whose outputs are byte-identical
    to those already judged shares their result, any other call's outputs are checked.
    A column is one value when every call shares it (protocol.columns)."""
    n = len(batch)
    judged = runner.judged_result   # what `same` refers to (judge() below replaces it)
    same, output_errors = batch.same, batch.errors
    if prepared.training is None and output_errors is None and judged is not None and n and same.all():
        return judged, None   # the common case: one result for every call
    errs, passes, errors = [], [], []
    diverged = None
    for i in range(n):
        if output_errors is not None and output_errors[i]:
            result = (float("inf"), False, output_errors[i])
        elif prepared.training is not None:
            loss = batch.losses[i]
            result = prepared.judge_step(kind, index + i + 1, loss)
            if not np.isfinite(loss) and diverged is None:
                diverged = result[2]
        elif same[i]:
            result = judged
        else:
            result = prepared.check(batch.outputs(i))
            runner.judge(i, result)
        errs.append(result[0])
        passes.append(result[1])
        errors.append(result[2])
    return (shared(errs), shared(passes), shared(errors)), diverged


def first_line_of(text: str) -> str:
    return essential_line(text) or "the call failed"


def _record(emit, index, kind, seconds, phases, err, passed, error, after, extra=None) -> None:
    emit("iteration", index=index, kind=kind, seconds=seconds, phases=phases,
         max_rel_error=err, passed=passed, error=error, **(extra or {}))
    if after is not None:
        after(kind, index)
