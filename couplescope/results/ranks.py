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
  per node            with the ranks' placements (rank_info): each node's ranks, CPUs and
                      step time (its slowest rank per iteration), and in how many steps
                      the slowest rank of all was one of its ranks
"""

from __future__ import annotations

from couplescope.results import stats


def placement(rank_info: dict) -> dict:
    """Where one rank runs, from its rank_info event (sent as the ranks start, so a run
    interrupted before its end still knows each rank's host, cores and threads)."""
    return {k: v for k, v in rank_info.items() if k not in ("event", "t", "variant")}


def placements(by_rank: dict[int, dict]) -> list[dict]:
    return [by_rank[r] for r in sorted(by_rank)]


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


def summary(iterations: list[dict], placements: list[dict] | None = None) -> dict:
    """results.json's per-rank object (under the mpi backend's name): per rank, per
    iteration and aggregate figures over the timed iterations of a ranked variant; per node
    too when the placements are known."""
    timed = [it for it in iterations if it["kind"] == "timed"]
    # every record is looked at a fixed number of times, whatever the number of ranks: a
    # filter per rank made 1024 ranks x 1000 steps a billion comparisons
    by_rank: dict = {}
    failed: dict = {}
    for it in iterations:
        r = it.get("rank")
        if r is None:
            continue
        failed[r] = failed.get(r, 0) + (not it["passed"])
        if it["kind"] == "timed":
            by_rank.setdefault(r, []).append(it)
    ranks = sorted(failed)
    steps = per_iteration(timed)
    slowest: dict = {}
    for row in steps:
        slowest[row["slowest_rank"]] = slowest.get(row["slowest_rank"], 0) + 1
    per_rank = {}
    for r in ranks:
        mine = by_rank.get(r, [])
        s = stats.summarize([it["seconds"] for it in mine])
        per_rank[str(r)] = {
            **{k: s[k] for k in ("n", "min", "median", "mean", "max", "stddev", "iqr")},
            "phases": stats.phase_summaries(mine),
            "slowest_in": slowest.get(r, 0),
            "checks_passed": failed[r] == 0,
            "failed_checks": failed[r],
        }
    imbalance = stats.summarize([row["imbalance"] for row in steps])
    phase_spread = {}
    for phase in _phase_names([{"phases": row["phases"]} for row in steps]):
        spreads = [row["phases"][phase] for row in steps if phase in row["phases"]]
        phase_spread[phase] = {
            "median_spread": stats.summarize([p["spread"] for p in spreads])["median"],
            "median_imbalance": stats.summarize([p["imbalance"] for p in spreads])["median"]}
    step = stats.summarize([row["step_seconds"] for row in steps])
    nodes = per_node(timed, steps, placements or [])
    return {"ranks": len(ranks), **({"nodes": nodes} if nodes else {}),
            "per_rank": per_rank, "per_iteration": steps,
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


def node_of(placement: dict) -> str:
    """A rank's node: Slurm's node name when the rank reported one, else its host."""
    return placement.get("node") or placement.get("host") or "?"


def nodes_in_order(placements: list[dict]) -> dict[str, list[dict]]:
    """Placements grouped by node, nodes in the order of their lowest rank."""
    groups: dict[str, list[dict]] = {}
    for p in sorted(placements, key=lambda p: p.get("rank", 0)):
        groups.setdefault(node_of(p), []).append(p)
    return groups


def per_node(timed: list[dict], steps: list[dict], placements: list[dict]) -> dict:
    """node -> its ranks, host, CPUs, its step time (per iteration the slowest of its ranks)
    and in how many steps the slowest rank of all was on it. {} without placements."""
    if not placements:
        return {}
    where = {p.get("rank"): node_of(p) for p in placements}
    # per node and step, the slowest of its ranks: one pass over the records
    slowest: dict = {}
    for it in timed:
        key = (where.get(it.get("rank")), it["index"])
        if it["seconds"] > slowest.get(key, -1.0):
            slowest[key] = it["seconds"]
    node_times: dict = {}
    for (node, _), seconds in slowest.items():
        node_times.setdefault(node, []).append(seconds)
    out = {}
    for node, group in nodes_in_order(placements).items():
        node_steps = node_times.get(node, [])
        s = stats.summarize(node_steps)
        out[node] = {"ranks": [p.get("rank") for p in group], "host": group[0].get("host"),
                     "cpus": group[0].get("node_cpus", group[0].get("host_cores")),
                     "step": {k: s[k] for k in ("n", "median", "mean", "max")},
                     "slowest_in": sum(1 for row in steps if where.get(row["slowest_rank"]) == node)}
    return out
