"""The native host's batches: the loop over a batch's calls runs in C++ (host.cpp's
run_batch), so not even Python's interpreter loop sits between two calls. What a batch
does and why is couplescope.backends.batch."""

from __future__ import annotations

import numpy as np

from couplescope.backends.batch import BATCH_SECONDS, BatchRunner, columns_of


class NativeBatchRunner(BatchRunner):
    """Batches made by a native host object (DirectHost, EmbeddedHost, ...) through its
    `call_batch(count, budget, slots)`; `phase_names` name the phases its rows carry."""

    def __init__(self, native, host, outputs: dict, phase_names: tuple[str, ...],
                 before=lambda: None, inputs: dict | None = None) -> None:
        super().__init__(outputs, inputs)
        self.host, self.phase_names = host, phase_names
        self.native = native
        self.before = before   # clears what a call before the batch left (the phase clock)
        self._slots = [native.OutputSlot(a.ctypes.data, self._nan[n].ctypes.data,
                                         self._snapshots[n].ctypes.data, a.nbytes)
                       for n, a in outputs.items()]

    def _calls(self, count: int, stop):
        self.before()
        feeds = []
        if self.feeder is not None:   # a training batch: every step's inputs and targets
            rows = self.feeder.fill_rows(count)
            self._feeding = rows      # alive until the host has copied them
            feeds = [self.native.InputSlot(array.ctypes.data, buffer.ctypes.data, array.nbytes)
                     for array, buffer in rows.values()]
        raw, width, output_errors, failure, extras, failed_after = self.host.call_batch(
            count, BATCH_SECONDS, self._slots, feeds)
        rows = np.frombuffer(raw, dtype=np.float64).reshape(-1, width)   # the host's doubles, per call
        made = len(rows)
        if self.feeder is not None and made < count:
            self.feeder.unfill(count - made)   # the steps not made: the next batch makes them on the same data
        failed = (failure, failed_after) if failure else None
        errors = None
        if output_errors:   # the few calls whose output was not written
            errors = [None] * made
            for i, message in output_errors:
                errors[i] = message
        if any(extras):   # what the host's own Python timed (a bridge module), a step's loss and done
            return columns_of([self._call(row, error, extra) for row, error, extra
                               in zip(rows.tolist(), errors or [None] * made, extras)]), failed
        if not made:
            return ([], {}, None, None, None), failed
        # the common case, in columns straight from the rows, in nanoseconds (the host's
        # clock counts them: rounding gives them back exactly): a phase the host did not
        # time in a call (0) is None there, and a phase no call had is left out
        ns = np.rint(rows * 1e9).astype(np.int64)
        timed = ns != 0
        phases = {}
        for j, name in enumerate(self.phase_names, 1):
            if timed[:, j].all():
                phases[name] = ns[:, j].tolist()
            elif timed[:, j].any():
                phases[name] = [v or None for v in ns[:, j].tolist()]
        return (ns[:, 0].tolist(), phases, errors, None, None), failed

    def _call(self, row, error, extra) -> tuple:
        """One call as columns_of takes it, merging what the host's Python timed."""
        extra = dict(extra or {})
        loss = extra.pop("step_loss", None)   # a training step's loss (not its phase)
        done = extra.pop("step_done", False)  # its train call said training is complete
        phases = extra
        for name, value in zip(self.phase_names, row[1:]):
            if value:
                phases[name] = phases.get(name, 0.0) + value
        return row[0], phases, error, ({} if loss is None else {"loss": loss}) | ({"done": True} if done else {})
