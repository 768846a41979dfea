"""results.json's iterations, made from the iteration events (the results builder's).

A record is what results.json lists per call: index, kind, seconds, phases, the check's
max_rel_error, passed and error, warmup and profiled, and where they apply the round (a
timed call of a run in rounds), the rank and a training step's loss, in that order.
"""

from __future__ import annotations

import math


def record(call, round_number: int | None = None) -> dict:
    """An iteration of results.json from one call's `iteration` event (a timed call of a run
    in rounds tagged with its round)."""
    it = {"index": call.index, "kind": call.kind, "seconds": call.seconds, "phases": call.phases,
          "max_rel_error": call.max_rel_error, "passed": call.passed, "error": call.error,
          "warmup": call.kind == "warmup", "profiled": call.kind == "profiled"}
    if round_number is not None and call.kind == "timed":
        it["round"] = round_number
    if "rank" in call:
        it["rank"] = call.rank
    if "loss" in call:   # a training step's
        it["loss"] = call["loss"]
    return it


def batch_records(ev, round_number: int | None = None) -> list[dict]:
    """The iterations of results.json from an `iterations` event's columns, as `record`
    makes them from its calls one by one (the same keys in the same order), without
    making the calls first: for a microsecond model the parent's work per call is what
    the user waits for (docs/architecture.md, "What the harness costs")."""
    kind, first = ev["kind"], ev["first_index"]
    warmup, profiled = kind == "warmup", kind == "profiled"
    names, columns = tuple(ev["phases"]), list(ev["phases"].values())
    if not names:
        phases = [{} for _ in ev["seconds"]]
    elif any(None in column for column in columns):   # a phase some calls did not have
        phases = [{n: v for n, v in zip(names, values) if v is not None} for values in zip(*columns)]
    else:
        phases = [dict(zip(names, values)) for values in zip(*columns)]
    records = [{"index": index, "kind": kind, "seconds": seconds, "phases": p, "max_rel_error": err,
                "passed": passed, "error": error, "warmup": warmup, "profiled": profiled}
               for index, seconds, p, err, passed, error in zip(
                   range(first, first + len(ev["seconds"])), ev["seconds"], phases, ev["max_rel_error"],
                   ev["passed"], ev["error"])]
    tagged = round_number is not None and kind == "timed"
    rank, losses = ev.get("rank"), ev.get("loss")
    if tagged or rank is not None or losses is not None:
        for i, it in enumerate(records):
            if tagged:
                it["round"] = round_number
            if rank is not None:
                it["rank"] = rank
            if losses is not None:
                it["loss"] = losses[i]
    return records


def finite(values) -> bool:
    """Every value a finite number (results.json writes the others as strings)."""
    try:
        return all(map(math.isfinite, values))
    except TypeError:   # not a number: written as it is, but not known to be finite
        return False
