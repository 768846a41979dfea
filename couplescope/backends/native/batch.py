"""Iterations in batches on the native host: no Python between the calls of a batch.

Python work between two calls (the engine's output reset, check, event) evicts what a
host's tight loop keeps in the caches and branch predictors: on SimpleNet, the same C++
call took 17 us in a tight Python loop and 39 us with the engine's work between calls,
against 13 us for a plain C++ loop. A compiled simulation calls its model from compiled
code, so the native host makes a batch of calls in C++, doing between them only what the
engine would (NaN into the outputs before each call, each output copied into the
iteration's snapshot after it), outside the timed region. The engine then checks every
iteration's snapshot and emits its event: every call is still checked and reported.

Batches are sized so that one takes about BATCH_SECONDS (a Ctrl-C is handled within
that), hold at most MAX_BATCH iterations and MAX_SNAPSHOT_BYTES of snapshots.

Checking a snapshot costs more than a small model's call (SimpleNet: about 25 us of numpy
for a 5 us call), and a deterministic model writes the same bytes every call. So each
snapshot is first compared byte for byte with the last one the workload's check judged
(`same` in the records, one vectorised comparison per batch); an identical snapshot has,
by construction, the same check result. Every iteration is still compared; the full check
runs again on the first snapshot that differs in any byte, and whenever the host inputs
changed since the judged call (a coupling that writes into its inputs).
"""

from __future__ import annotations

import numpy as np

BATCH_SECONDS = 0.1
MAX_BATCH = 1000
MAX_SNAPSHOT_BYTES = 64 * 2**20


class BatchRunner:
    """`run(count)` -> (records, failure) for up to `count` iterations of a native host."""

    def __init__(self, native, host, outputs: dict, phase_names: tuple[str, ...],
                 before=lambda: None, inputs: dict | None = None) -> None:
        self.native, self.host, self.outputs = native, host, outputs
        self.inputs = inputs or {}
        self.before = before   # clears what a call before the batch left (the phase clock)
        self.phase_names = phase_names
        self.bytes = sum(a.nbytes for a in outputs.values())
        self.capacity = max(1, min(MAX_BATCH, MAX_SNAPSHOT_BYTES // max(self.bytes, 1)))
        self._nan = {n: np.full(a.shape, np.nan, dtype=a.dtype, order="F") for n, a in outputs.items()}
        self._snapshots = {n: np.empty((self.capacity, a.nbytes), dtype=np.uint8) for n, a in outputs.items()}
        self._slots = [native.OutputSlot(a.ctypes.data, self._nan[n].ctypes.data,
                                         self._snapshots[n].ctypes.data, a.nbytes)
                       for n, a in outputs.items()]
        self.per_call = None   # seconds, from the last batch
        self._judged = None    # (output rows, inputs) of the call whose check result is known
        self.judged_result = None

    def size(self, remaining: int) -> int:
        """How many calls the next batch makes: one until a call has been timed."""
        if self.per_call is None:
            return 1
        return max(1, min(remaining, self.capacity, int(BATCH_SECONDS / max(self.per_call, 1e-9))))

    def run(self, count: int):
        """Make up to `count` calls. Returns ([(seconds, phases, output_error, outputs, same)],
        failure): `same` says the outputs are byte-identical to those of the call `judge()`
        last recorded (so is their check); failure is None, or (message, seconds) of the call
        that raised and ended the batch."""
        self.before()
        rows, errors, failure, extras, failed_after = self.host.call_batch(count, BATCH_SECONDS, self._slots)
        same = self._same_as_judged(len(rows))
        records = []
        for i, (row, error, extra) in enumerate(zip(rows, errors, extras)):
            phases = dict(extra or {})   # what the host's own Python timed (a bridge module)
            for name, value in zip(self.phase_names, row[1:]):
                if value:
                    phases[name] = phases.get(name, 0.0) + value
            outputs = {n: self._snapshots[n][i].view(a.dtype).reshape(a.shape, order="F")
                       for n, a in self.outputs.items()}
            records.append((row[0], phases, error or None, outputs, bool(same[i])))
        if rows:
            self.per_call = sorted(r[0] for r in rows)[len(rows) // 2]
        return records, (failure, failed_after) if failure else None

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
