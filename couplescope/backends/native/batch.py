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
"""

from __future__ import annotations

import numpy as np

BATCH_SECONDS = 0.1
MAX_BATCH = 1000
MAX_SNAPSHOT_BYTES = 64 * 2**20


class BatchRunner:
    """`run(count)` -> (records, failure) for up to `count` iterations of a native host."""

    def __init__(self, native, host, outputs: dict, phase_names: tuple[str, ...],
                 before=lambda: None) -> None:
        self.native, self.host, self.outputs = native, host, outputs
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

    def size(self, remaining: int) -> int:
        """How many calls the next batch makes: one until a call has been timed."""
        if self.per_call is None:
            return 1
        return max(1, min(remaining, self.capacity, int(BATCH_SECONDS / max(self.per_call, 1e-9))))

    def run(self, count: int):
        """Make up to `count` calls. Returns ([(seconds, phases, output_error, outputs)], failure):
        failure is None, or (message, seconds) of the call that raised and ended the batch."""
        self.before()
        rows, errors, failure, extras, failed_after = self.host.call_batch(count, BATCH_SECONDS, self._slots)
        records = []
        for i, (row, error, extra) in enumerate(zip(rows, errors, extras)):
            phases = dict(extra or {})   # what the host's own Python timed (a bridge module)
            for name, value in zip(self.phase_names, row[1:]):
                if value:
                    phases[name] = phases.get(name, 0.0) + value
            outputs = {n: self._snapshots[n][i].view(a.dtype).reshape(a.shape, order="F")
                       for n, a in self.outputs.items()}
            records.append((row[0], phases, error or None, outputs))
        if rows:
            self.per_call = sorted(r[0] for r in rows)[len(rows) // 2]
        return records, (failure, failed_after) if failure else None
