"""The same calls made from different hosts, phase by phase: the replica beside the real library.

`couplescope --model simplenet --host native,ftorch` asks how far couplescope's replica of
FTorch (the native host) is from the user's own FTorch (the ftorch host). The variants
differ only in who makes the calls, and every host names its phases alike (marshal_in,
forward, marshal_out; a training step's zero_grad, forward, loss, backward, step), so
each phase can be set beside its twin. Each variant's phase median, and its ratio to the
baseline's from same-round pairs with the interval (results/paired.py: the same pairing
the whole call gets, the rounds either was disturbed in left out), per phase and for the
whole call.

Pure functions of the builder's variants (events in, numbers out); no torch.
"""

from __future__ import annotations

from couplescope.results import paired

#: spec fields that say who makes the calls (and where its library is): the rest must match
HOST_FIELDS = ("host", "name", "ftorch_dir", "fc", "forpy_source", "pytorch_fortran_dir")
WHOLE = "call"


def phase_by_round(steps: list[dict], phase: str | None) -> dict[int, list[float]]:
    """{round: [the phase's seconds (the whole call's for None)]} of timed iterations."""
    out: dict[int, list[float]] = {}
    for it in steps:
        if it.get("round") is None:
            continue
        value = it["seconds"] if phase is None else (it.get("phases") or {}).get(phase)
        if value is not None:
            out.setdefault(it["round"], []).append(value)
    return out


def makes(steps: list[dict], phase: str | None) -> bool:
    """Whether a variant's iterations have the phase at all (every one has the whole call):
    a host whose library makes a training step in one call (pytorch-fortran's train) has
    no zero_grad, forward, loss, backward or step, and the native host no train."""
    return phase is None or any(phase in (it.get("phases") or {}) for it in steps)


def _median(values: list[float]) -> float | None:
    return paired._median(values) if values else None


def same_calls_other_hosts(variants: list) -> bool:
    """Whether the variants (builder VariantResults) make the same calls from two or more hosts."""
    if len(variants) < 2:
        return False
    keys = {tuple(sorted((k, str(v)) for k, v in (x.spec or {}).items() if k not in HOST_FIELDS))
            for x in variants}
    return len(keys) == 1 and len({(x.spec or {}).get("host") for x in variants}) > 1


def host_comparison(rows: list[dict], variants: dict) -> dict | None:
    """{"base", "names", "phases": [{"phase", "cells": {name: {"median", "ratio", "low",
    "high", "cannot_rank"} or {"median": None, "absent": True} where the host has no such
    phase}}]} for a run whose variants make the same calls from different hosts; None
    otherwise. `rows`: the builder's comparison rows (their order and baseline). A pair is
    ranked from the rounds neither variant was disturbed in, as the comparison's rows are:
    with too few left, its ratio is None and `cannot_rank` says why."""
    chosen = [variants[r["name"]] for r in rows if r["name"] in variants]
    if not same_calls_other_hosts(chosen):
        return None
    base = next((r.get("baseline") for r in rows if r.get("baseline")), rows[0]["name"])
    names = [v.name for v in chosen]
    order: list[str] = []
    for v in chosen:
        for it in v.steps:
            for phase in it.get("phases") or {}:
                if phase not in order:
                    order.append(phase)
    # the rounds either of a pair was disturbed in: left out of every phase's pair, as
    # they are of the whole call's in the comparison (results/paired.py: one rule)
    disturbed = {name: paired.pair_disturbed(variants[base], variants[name]) for name in names}
    table = []
    for phase in [*order, None]:
        base_rounds = phase_by_round(variants[base].steps, phase)
        cells = {}
        base_makes = phase is None or makes(variants[base].steps, phase)
        for name in names:
            steps = variants[name].steps
            if not makes(steps, phase):
                cells[name] = {"median": None, "absent": True}
                continue
            values = [it["seconds"] if phase is None else (it.get("phases") or {}).get(phase, 0.0)
                      for it in steps]
            cell = {"median": _median(values)}
            if name != base and cell["median"] and base_makes:
                pair = paired.paired_ratio(base_rounds, phase_by_round(steps, phase),
                                           disturbed=disturbed[name])
                if pair is not None:   # (no ratio where too few undisturbed rounds are left)
                    cell.update(ratio=pair["ratio"], low=pair["low"], high=pair["high"],
                                cannot_rank=pair["cannot_rank"])
                else:
                    base_values = [it["seconds"] if phase is None else (it.get("phases") or {}).get(phase, 0.0)
                                   for it in variants[base].steps]
                    base_median = _median(base_values)
                    cell["ratio"] = cell["median"] / base_median if base_median else None
            cells[name] = cell
        table.append({"phase": WHOLE if phase is None else phase, "cells": cells})
    return {"base": base, "names": names, "phases": table}
