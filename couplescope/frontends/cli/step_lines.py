"""One check line per step, not per rank, for a job of many ranks (the headless output).

With two ranks the output shows each rank's check, as FTorch's MPI example does. With a
thousand, a line per rank and call is a million lines for a thousand steps: unreadable,
and the parent's biggest cost per call after parsing. Past PER_RANK_LINES ranks a step's
line waits until every rank has reported it and says how many passed, the slowest rank
and the largest error; a failed check still gets a line of its own, naming its rank.
"""

from __future__ import annotations

#: ranks up to which every rank's check is printed
PER_RANK_LINES = 8


class Step:
    __slots__ = ("count", "failed", "slowest", "slowest_rank", "max_error")

    def __init__(self) -> None:
        self.count = self.failed = 0
        self.slowest, self.slowest_rank, self.max_error = -1.0, None, 0.0


class StepLines:
    """Gathers one variant's rank-tagged calls into steps; `add` returns the steps complete."""

    def __init__(self, ranks: int) -> None:
        self.ranks = ranks
        self.pending: dict[tuple, Step] = {}

    def add(self, ev: dict) -> list[tuple[str, int, Step]]:
        key = (ev["kind"], ev["index"])
        step = self.pending.get(key)
        if step is None:
            step = self.pending[key] = Step()
        step.count += 1
        step.failed += not ev["passed"]
        if ev["seconds"] > step.slowest:
            step.slowest, step.slowest_rank = ev["seconds"], ev.get("rank")
        err = ev.get("max_rel_error")
        if isinstance(err, (int, float)) and not err <= step.max_error:   # NaN wins too
            step.max_error = err
        if step.count < self.ranks:
            return []
        del self.pending[key]
        return [(key[0], key[1], step)]

    def rest(self) -> list[tuple[str, int, Step]]:
        """Steps some ranks never reported (the job ended early), in order."""
        out = [(kind, index, step) for (kind, index), step in sorted(self.pending.items(), key=lambda kv: kv[0][1])]
        self.pending.clear()
        return out
