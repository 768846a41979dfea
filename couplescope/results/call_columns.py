"""A variant's calls in columns: what the results builder keeps and results.json lists.

The calls are kept as the worker sends them, in blocks of columns (an `iterations`
event's), never as an object per call: for a microsecond model the parent's work per
call is what the user waits for (docs/architecture.md, "What the harness costs"). A
block is a run of consecutive calls of one kind (and round, and rank) with the same
phases; a batch that goes on from the last block's last call joins it, so a run without
rounds has one block per kind. A block, as results.json holds it (schema 2):

    kind           warmup, timed or profiled
    first_index    the first call's index (1-based within its kind)
    round, rank    a run in rounds' timed calls; a multi-process variant's rank (else absent)
    ns             each call's time in whole nanoseconds
    phases_ns      phase -> each call's nanoseconds in it (null where a call had none)
    max_rel_error, passed, error
                   the check's result per call, or one value every call of the block shares
    loss           a training step's loss, per call (training only)

(couplescope.protocol.columns says why nanoseconds and why one shared value.) Consumers
that want a call at a time ask for `records()`, made when first asked and then only for
calls added since; schema 1's documents (a record per call) are read into blocks by
`CallColumns.of_document`, so old results load, plot and compare.
"""

from __future__ import annotations

import math

from couplescope.protocol import columns as cols

_SCALARS = ("kind", "first_index", "round", "rank")


class CallColumns:
    """Feed it `iterations` and `iteration` events (`add`); `blocks` are results.json's."""

    def __init__(self) -> None:
        self.blocks: list[dict] = []
        self.count = 0            # calls
        self.ranked = False       # a call carries a rank
        self.not_finite = False   # a check's error or a loss is NaN or infinite (a string in JSON)
        self.failed = 0           # calls whose check failed
        self._records: list[dict] = []
        self._recorded = (0, 0)   # (block, calls of it) already in _records
        self._cache: dict = {}

    # -- adding calls ------------------------------------------------------------------
    def add(self, ev, round_number: int | None = None) -> None:
        """An `iterations` or `iteration` event's calls (a timed call of a run in rounds
        tagged with its round), in whichever form the worker wrote them."""
        round_number = round_number if ev["kind"] == "timed" else None
        if ev["event"] == "iteration":
            phases = ev.get("phases") or {}
            self.append(ev["kind"], ev["index"], round_number, ev.get("rank"), cols.to_ns([ev["seconds"]]),
                        {n: cols.to_ns([v]) for n, v in phases.items()},
                        {k: ev[k] for k in cols.CHECKS}, [ev["loss"]] if "loss" in ev else None)
            return
        if "ns" in ev:
            ns, phases = ev["ns"], ev.get("phases_ns") or {}
        else:   # an older worker's seconds
            ns, phases = cols.to_ns(ev["seconds"]), {n: cols.to_ns(c) for n, c in ev["phases"].items()}
        self.append(ev["kind"], ev["first_index"], round_number, ev.get("rank"), ns, phases,
                    {k: ev[k] for k in cols.CHECKS}, ev.get("loss"))

    def append(self, kind: str, first: int, round_number, rank, ns: list, phases: dict, checks: dict,
               loss: list | None) -> None:
        """Consecutive calls: joined to the last block when they go on from it, else a block
        of their own. The columns given are copied, never kept (an event is shared)."""
        n = len(ns)
        if not n:
            return
        self._note(n, checks, loss, rank)
        last = self.blocks[-1] if self.blocks else None
        if (last is not None and last["kind"] == kind and last.get("round") == round_number
                and last.get("rank") == rank and last["first_index"] + len(last["ns"]) == first
                and list(last["phases_ns"]) == list(phases) and ("loss" in last) == (loss is not None)):
            had = len(last["ns"])
            last["ns"].extend(ns)
            for name, column in phases.items():
                last["phases_ns"][name].extend(column)
            for key, value in checks.items():
                old = last[key]
                if isinstance(old, list):
                    old.extend(cols.per_call(value, n))
                elif isinstance(value, list) or not cols.same_value(old, value):
                    last[key] = [old] * had + cols.per_call(value, n)
            if loss is not None:
                last["loss"].extend(loss)
        else:
            block = {"kind": kind, "first_index": first}
            if round_number is not None:
                block["round"] = round_number
            if rank is not None:
                block["rank"] = rank
            block.update(ns=list(ns), phases_ns={name: list(c) for name, c in phases.items()},
                         **{k: list(v) if isinstance(v, list) else v for k, v in checks.items()})
            if loss is not None:
                block["loss"] = list(loss)
            self.blocks.append(block)
        self.count += n

    def _note(self, n: int, checks: dict, loss, rank) -> None:
        passed, err = checks["passed"], checks["max_rel_error"]
        self.failed += (n - sum(map(bool, passed))) if isinstance(passed, list) else (0 if passed else n)
        self.ranked = self.ranked or rank is not None
        if not self.not_finite:
            self.not_finite = not _finite(err if isinstance(err, list) else [err]) or not _finite(loss or ())

    # -- reading them ------------------------------------------------------------------
    def of_kind(self, kind: str) -> list[dict]:
        return [b for b in self.blocks if b["kind"] == kind]

    def seconds(self, kind: str = "timed"):
        """Each call's seconds, of one kind, in the order they were made: an array of floats
        (the very `ns / 1e9` of protocol.columns), kept until a call is added."""
        return self._kept(("seconds", kind), lambda: _seconds([b["ns"] for b in self.of_kind(kind)]))

    def phase_seconds(self, kind: str = "timed") -> dict:
        """Phase -> an array of the seconds of the calls of one kind that had it (in the order
        the phases first appear)."""
        def make():
            out: dict[str, list] = {}
            for b in self.of_kind(kind):
                for name, column in b["phases_ns"].items():
                    out.setdefault(name, []).append(column if None not in column else [v for v in column if v is not None])
            return {name: _seconds(parts) for name, parts in out.items()}
        return self._kept(("phases", kind), make)

    def _kept(self, key, compute):
        cached = self._cache.get(key)
        if cached is None or cached[0] != self.count:
            cached = self._cache[key] = (self.count, compute())
        return cached[1]

    def last_call(self) -> dict | None:
        """The last call's kind, index and round (None before any)."""
        if not self.blocks:
            return None
        b = self.blocks[-1]
        return {"kind": b["kind"], "index": b["first_index"] + len(b["ns"]) - 1, "round": b.get("round")}

    def losses(self) -> list[tuple[str, float]]:
        """(kind, loss) of every training step, in order."""
        return [(b["kind"], loss) for b in self.blocks for loss in b.get("loss", ())]

    def records(self) -> list[dict]:
        """A dict per call, as schema 1 listed them (index, kind, seconds, phases,
        max_rel_error, passed, error, warmup, profiled, and round, rank, loss where they
        apply): made for the calls added since last asked, and kept."""
        position, done = self._recorded
        for b in self.blocks[position:]:
            self._records.extend(_block_records(b, done))
            done = 0
        if self.blocks:
            self._recorded = (len(self.blocks) - 1, len(self.blocks[-1]["ns"]))
        return self._records

    def document(self) -> list[dict]:
        """The blocks as results.json lists them: copies (more calls may join the last),
        a NaN or an infinity written as a string."""
        out = [{k: ({n: list(c) for n, c in v.items()} if k == "phases_ns" else list(v) if isinstance(v, list) else v)
                for k, v in b.items()} for b in self.blocks]
        if self.not_finite:
            from couplescope.protocol.events import json_clean

            out = json_clean(out)
        return out

    @classmethod
    def of_records(cls, records) -> "CallColumns":
        """Calls given a record each (schema 1's iterations, or records picked from `records()`)."""
        calls = cls()
        for it in records:
            calls.append(it["kind"], it["index"], it.get("round"), it.get("rank"), cols.to_ns([it["seconds"]]),
                         {n: cols.to_ns([v]) for n, v in (it.get("phases") or {}).items()},
                         {k: _number(it.get(k)) if k == "max_rel_error" else it.get(k) for k in cols.CHECKS},
                         [_number(it["loss"])] if "loss" in it else None)
        return calls

    @classmethod
    def of_document(cls, variant: dict) -> "CallColumns":
        """A saved variant's calls, from results.json's blocks (schema 2) or its records
        (schema 1)."""
        its = variant.get("iterations") or []
        if not its or "ns" not in its[0]:
            return cls.of_records(its)
        calls = cls()
        for b in its:
            calls.append(b["kind"], b["first_index"], b.get("round"), b.get("rank"), b["ns"], b.get("phases_ns") or {},
                         {k: _numbers(b[k]) if k == "max_rel_error" else b[k] for k in cols.CHECKS},
                         _numbers(b["loss"]) if "loss" in b else None)
        return calls


def _seconds(parts: list[list[int]]):
    import numpy as np

    if not parts:
        return np.zeros(0)
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]) / 1e9


def _block_records(b: dict, start: int = 0) -> list[dict]:
    """A block's calls from position `start` on, a record each."""
    n = len(b["ns"])
    kind, first = b["kind"], b["first_index"]
    tags = {k: b[k] for k in ("round", "rank") if k in b}
    seconds = cols.to_seconds(b["ns"][start:])
    phases = {name: cols.to_seconds(c[start:]) for name, c in b["phases_ns"].items()}
    checks = [cols.per_call(b[k], n)[start:] for k in cols.CHECKS]
    losses = b.get("loss")
    out = []
    for i in range(n - start):
        it = {"index": first + start + i, "kind": kind, "seconds": seconds[i],
              "phases": {name: c[i] for name, c in phases.items() if c[i] is not None},
              "max_rel_error": checks[0][i], "passed": checks[1][i], "error": checks[2][i],
              "warmup": kind == "warmup", "profiled": kind == "profiled", **tags}
        if losses is not None:
            it["loss"] = losses[start + i]
        out.append(it)
    return out


_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _number(value):
    """A value results.json wrote as a string because JSON has none ("nan", "inf") as the number."""
    return _SPECIAL.get(value, math.nan) if isinstance(value, str) else value


def _numbers(value):
    return [_number(v) for v in value] if isinstance(value, list) else _number(value)


def _finite(values) -> bool:
    try:
        return all(map(math.isfinite, values))
    except TypeError:   # not a number: written as it is, but not known to be finite
        return False
