"""Iterations in batches: no engine work between the calls of a batch, on either host.

Python work between two calls (the engine's check, its event) evicts what a tight call
loop keeps in the caches and branch predictors, and so inflates the very call it follows:
SimpleNet's forward on the python host measured 6.9 us back to back, 7.3 us with a fresh
host-memory tensor per call (what every direct coupling does) and 8.8 us with the engine's
check and event between calls; on the native host the same C++ call took 17 us in a tight
Python loop and 39 us with the engine's work between calls, against 13 us for a plain C++
loop. A simulation calls its model from its own loop, so the calls of a batch are made back
to back, doing between them only what the engine must: NaN into each host output before
the call (so a coupling that never writes fails its check) and the output copied into the
iteration's snapshot after it, both outside the timed region. The engine then checks every
snapshot and reports the batch: every call is still checked and reported.

Batches are sized so that one takes about BATCH_SECONDS (a signal is acted on within that),
hold at most MAX_BATCH iterations and MAX_SNAPSHOT_BYTES of snapshots; the first batch is a
single call (its time sizes the next).

Checking a snapshot costs more than a small model's call (SimpleNet: about 25 us of numpy
for a 5 us call), and a deterministic model writes the same bytes every call. So each
snapshot is first compared byte for byte with the last one the workload's check judged
(`same` in the records, one vectorised comparison per batch); an identical snapshot has,
by construction, the same check result. Every iteration is still compared; the full check
runs again on the first snapshot that differs in any byte, and whenever the host inputs
changed since the judged call (a coupling that writes into its inputs).

Two ways to make the calls: `PythonBatchRunner` (the python host: the coupling's own
call() in a Python loop) and couplescope.backends.native.batch (the native host: the loop
in C++).
"""

from __future__ import annotations

import math

from time import perf_counter

import numpy as np

from couplescope.protocol.columns import to_ns

BATCH_SECONDS = 0.1
MAX_BATCH = 1000
MAX_SNAPSHOT_BYTES = 64 * 2**20


class Batch:
    """What a batch made, in columns (one entry per call, in order): what the engine checks
    and reports as one `iterations` event without a Python object per call (for a
    microsecond model, a dict or a tuple per call cost more than the call).

    ns         each call's time, in whole nanoseconds (couplescope.protocol.columns says why)
    phases_ns  phase name -> each call's time in it, in nanoseconds (None where the call had none)
    errors     each call's output error (None when it wrote its outputs), or None for a
               batch in which every call wrote them
    losses     each training step's loss, or None (inference)
    done       the position of the first step whose train call said training is complete
               (a bridge module's), or None
    same       each call's outputs byte-identical to those the runner last judged
    failure    None, or (message, seconds) of the call that raised and ended the batch
    """

    __slots__ = ("ns", "phases_ns", "errors", "losses", "done", "same", "failure", "_runner")

    def __init__(self, runner, ns, phases_ns, errors, losses, done, same, failure) -> None:
        self._runner = runner
        self.ns, self.phases_ns, self.errors, self.losses = ns, phases_ns, errors, losses
        self.done = done
        self.same, self.failure = same, failure

    def __len__(self) -> int:
        return len(self.ns)

    def outputs(self, i: int) -> dict:
        """Call i's outputs: views of its snapshot (valid until the next batch)."""
        runner = self._runner
        return {n: runner._snapshots[n][i].view(a.dtype).reshape(a.shape, order=runner.order)
                for n, a in runner.outputs.items()}


def columns_of(raw: list) -> tuple[list, dict, list | None, list | None, int | None]:
    """(nanoseconds, phase columns in nanoseconds, output errors or None, losses or None,
    the position of the first step that said done or None) of calls made one by one:
    [(seconds, phases, output_error, extra)], extra holding a training step's loss and its done."""
    ns = to_ns([r[0] for r in raw])
    names: list[str] = []
    for r in raw:
        names.extend(n for n in r[1] if n not in names)
    phases = {n: to_ns([r[1].get(n) for r in raw]) for n in names}
    errors = [r[2] or None for r in raw]
    losses = [r[3]["loss"] for r in raw] if any("loss" in r[3] for r in raw) else None
    done = next((i for i, r in enumerate(raw) if r[3].get("done")), None)
    return ns, phases, (errors if any(errors) else None), losses, done


class BatchRunner:
    """`run(count)` -> a Batch of up to `count` iterations; subclasses make the calls
    (`_calls`). Owns the NaN patterns and snapshot buffers, the batch size and the check
    memo."""

    def __init__(self, outputs: dict, inputs: dict | None = None) -> None:
        self.outputs = outputs
        self.inputs = inputs or {}
        self.bytes = sum(a.nbytes for a in outputs.values())
        self.capacity = max(1, min(MAX_BATCH, MAX_SNAPSHOT_BYTES // max(self.bytes, 1)))
        #: the host outputs' memory order, which a snapshot's bytes are in (Fortran's, unless
        #: the host lays its arrays out row-major: the pytorch-fortran host)
        self.order = "F"
        self._nan = {n: np.full(a.shape, np.nan, dtype=a.dtype, order="F") for n, a in outputs.items()}
        self._snapshots = {n: np.empty((self.capacity, a.nbytes), dtype=np.uint8) for n, a in outputs.items()}
        self.per_call = None   # seconds, from the last batch
        self._judged = None    # (output rows, inputs) of the call whose check result is known
        self.judged_result = None
        #: a training variant's data (couplescope.worker.training_checks.Training): each call's
        #: inputs and targets are filled before it, and its loss read after it
        self.feeder = None

    def size(self, remaining: int) -> int:
        """How many calls the next batch makes: one until a call has been timed."""
        if self.per_call is None:
            return 1
        return max(1, min(remaining, self.capacity, int(BATCH_SECONDS / max(self.per_call, 1e-9))))

    def _calls(self, count: int, stop) -> tuple[tuple, tuple | None]:
        """Make up to `count` calls into the snapshots: ((nanoseconds, phase columns in
        nanoseconds, output errors or None, losses or None, done or None), failure or None),
        as `columns_of` gives them. Stop early when `stop()` is true or after BATCH_SECONDS."""
        raise NotImplementedError

    def run(self, count: int, stop=lambda: False) -> Batch:
        """Make up to `count` calls. The batch's `same` says which calls' outputs are
        byte-identical to those of the call `judge()` last recorded (so is their check)."""
        (ns, phases, errors, losses, done), failure = self._calls(count, stop)
        if ns:
            self.per_call = sorted(ns)[len(ns) // 2] / 1e9
        return Batch(self, ns, phases, errors, losses, done, self._same_as_judged(len(ns)), failure)

    def judge(self, index: int, result) -> None:
        """Remember the check result of the batch's call `index` (its snapshot and the
        inputs it read), so byte-identical outputs of later calls share it."""
        rows = {n: self._snapshots[n][index].copy() for n in self.outputs}
        self._judged = (rows, {n: a.copy() for n, a in self.inputs.items()})
        self.judged_result = result

    def _same_as_judged(self, count: int) -> np.ndarray:
        same = np.zeros(count, dtype=bool)
        if self._judged is None or count == 0:
            return same
        rows, inputs = self._judged
        if not all(np.array_equal(a, inputs[n]) for n, a in self.inputs.items()):
            self._judged = None   # the inputs changed: every output is judged again
            return same
        same[:] = True
        for name, row in rows.items():
            same &= (self._snapshots[name][:count] == row).all(axis=1)
        return same


def training_extra(coupling) -> dict:
    """A training step's loss, read after its timed call, and `done` when a bridge module's
    train call said training is complete (the engine ends the steps there)."""
    extra = {"loss": coupling.take_losses()}
    take_done = getattr(coupling, "take_done", None)
    if take_done is not None and take_done():
        extra["done"] = True
    return extra


class PythonBatchRunner(BatchRunner):
    """The python host's batches: the coupling's call() in a loop, timed as the engine's
    one-call loop times it (perf_counter around the call, or the seconds a host returns)."""

    def __init__(self, coupling, clock, outputs: dict, inputs: dict | None = None) -> None:
        super().__init__(outputs, inputs)
        self.coupling, self.clock = coupling, clock

    def _calls(self, count: int, stop):
        from couplescope.backends.base import error_text

        coupling, clock, call, copyto = self.coupling, self.clock, self.coupling.call, np.copyto
        feeder = self.feeder
        fills = [(a, self._nan[n]) for n, a in self.outputs.items()]
        snaps = [(a.ravel(order="K").view(np.uint8), self._snapshots[n]) for n, a in self.outputs.items()]
        raw, failure = [], None
        clock.reset()
        begin = perf_counter()
        for i in range(count):
            for out, nan in fills:
                copyto(out, nan)
            if feeder is not None:
                feeder.fill_next()
            coupling.output_error = None
            t0 = perf_counter()
            try:
                hosted = call()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # a failing model is a FAILED check, not a crash
                failure = (error_text(exc), perf_counter() - t0)
                clock.reset()
                break
            seconds = perf_counter() - t0
            extra = training_extra(coupling) if feeder is not None else {}
            raw.append((seconds if hosted is None else hosted, clock.reset(), coupling.output_error, extra))
            for flat, snapshot in snaps:
                snapshot[i] = flat
            if (perf_counter() - begin > BATCH_SECONDS or stop() or not math.isfinite(extra.get("loss", 0.0))
                    or extra.get("done")):
                break   # (a loss that is not finite ends the training there: the engine fails it;
                #          a step whose train call said done is the last: the engine honours it)
        return columns_of(raw), failure
