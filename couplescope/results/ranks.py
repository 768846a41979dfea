"""Statistics across ranks, from rank-tagged iteration records: pure, no I/O.

Keyed on the protocol's `rank` field, not on a backend's name: any variant whose
iterations carry ranks (the mpi backend's today) gets these figures.

A simulation's step ends when its slowest rank is done (the next halo exchange waits
for it), so the step time it sees is, per iteration, the maximum over ranks. That is
the headline a variant reports under MPI; the per-rank figures say where it comes from:
  slowest rank        which rank set the step time, per iteration
  load imbalance      max / mean of the ranks' times in one iteration (1.0 = balanced;
                      1.5 = the slowest rank took 50% longer than the average)
  phase spread        per phase, max - min across ranks in one iteration, and max/mean:
                      whether the imbalance is in forward (compute, binding, threads) or
                      in marshalling (memory, placement)
"""

from __future__ import annotations

from couplescope.results import stats


def ranked(iterations: list[dict]) -> bool:
    return any(it.get("rank") is not None for it in iterations)


def by_index(iterations: list[dict]) -> list[list[dict]]:
    """Group one kind's iteration records by index (one group per step), in step order."""
    groups: dict[int, list[dict]] = {}
    for it in iterations:
        groups.setdefault(it["index"], []).append(it)
    return [groups[i] for i in sorted(groups)]


def slowest_per_iteration(iterations: list[dict]) -> list[dict]:
    """Per step, the record of its slowest rank; unranked records pass through unchanged."""
    if not ranked(iterations):
        return list(iterations)
    return [max(group, key=lambda it: it["seconds"]) for group in by_index(iterations)]


def per_iteration(iterations: list[dict]) -> list[dict]:
    """For each step: slowest rank, step time, mean, load imbalance and phase spread."""
    rows = []
    for group in by_index(iterations):
        times = [it["seconds"] for it in group]
        slowest = max(group, key=lambda it: it["seconds"])
        mean = sum(times) / len(times)
        spread = {}
        for phase in _phase_names(group):
            values = [it["phases"][phase] for it in group if phase in it.get("phases", {})]
            pmean = sum(values) / len(values)
            spread[phase] = {"min": min(values), "max": max(values), "spread": max(values) - min(values),
                             "imbalance": max(values) / pmean if pmean > 0 else 1.0}
        rows.append({"index": group[0]["index"], "ranks": len(group), "slowest_rank": slowest.get("rank"),
                     "step_seconds": slowest["seconds"], "mean_seconds": mean, "min_seconds": min(times),
                     "imbalance": slowest["seconds"] / mean if mean > 0 else 1.0, "phases": spread})
    return rows


def summary(iterations: list[dict]) -> dict:
    """results.json's "mpi" object: per rank, per iteration and aggregate figures over
    the timed iterations of a ranked variant."""
    timed = [it for it in iterations if it["kind"] == "timed"]
    ranks = sorted({it["rank"] for it in iterations if it.get("rank") is not None})
    steps = per_iteration(timed)
    per_rank = {}
    for r in ranks:
        mine = [it for it in timed if it.get("rank") == r]
        s = stats.summarize([it["seconds"] for it in mine])
        per_rank[str(r)] = {
            **{k: s[k] for k in ("n", "min", "median", "mean", "max", "stddev", "iqr")},
            "phases": stats.phase_summaries(mine),
            "slowest_in": sum(1 for row in steps if row["slowest_rank"] == r),
            "checks_passed": all(it["passed"] for it in iterations if it.get("rank") == r),
            "failed_checks": sum(1 for it in iterations if it.get("rank") == r and not it["passed"]),
        }
    imbalance = stats.summarize([row["imbalance"] for row in steps])
    phase_spread = {}
    for phase in _phase_names([{"phases": row["phases"]} for row in steps]):
        spreads = [row["phases"][phase] for row in steps if phase in row["phases"]]
        phase_spread[phase] = {
            "median_spread": stats.summarize([p["spread"] for p in spreads])["median"],
            "median_imbalance": stats.summarize([p["imbalance"] for p in spreads])["median"]}
    step = stats.summarize([row["step_seconds"] for row in steps])
    return {"ranks": len(ranks), "per_rank": per_rank, "per_iteration": steps,
            "aggregate": {"step": {k: step[k] for k in ("n", "min", "median", "mean", "max", "iqr")},
                          "imbalance": {k: imbalance[k] for k in ("median", "mean", "max")},
                          "slowest_rank_counts": {r: d["slowest_in"] for r, d in per_rank.items()},
                          "phase_spread": phase_spread}}


def _phase_names(records: list[dict]) -> list[str]:
    names: list[str] = []
    for it in records:
        for k in it.get("phases", {}):
            if k not in names:
                names.append(k)
    return names
