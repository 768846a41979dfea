"""The per-rank table and the cross-rank figures of a ranked variant, for the terminal.

Ranks are grouped by node (Slurm's node name, else the host name), nodes in the order
of their lowest rank; with more than one node a line per node follows the table.
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt
from couplescope.results.ranks import node_of, summary


def report_lines(iterations: list[dict], ranks_info: list[dict] | None = None, doc: dict | None = None) -> list[str]:
    """The headless output: a per-rank table, then the aggregates in plain words.
    `ranks_info` is where each rank runs (VariantResult.ranks: from the ranks' rank_info
    events as they start, so an interrupted run has it too); "?" only where a rank never
    said. `doc`: results/ranks.py's summary of these iterations, when it is at hand."""
    doc = doc if doc is not None else summary(iterations, ranks_info)
    if not doc["per_rank"]:
        return []
    info = {str(i["rank"]): i for i in ranks_info or []}
    headers = ["rank", "node", "local", "cores", "threads", "device", "median", "mean", "max",
               "forward", "slowest in", "checks"]
    order = {node: n for n, node in enumerate(doc.get("nodes", {}))}
    ranks = sorted(doc["per_rank"], key=lambda r: (order.get(node_of(info.get(r, {})), len(order)), int(r)))
    rows = []
    for r in ranks:
        d, i = doc["per_rank"][r], info.get(r, {})
        forward = d["phases"].get("forward", {}).get("median")
        rows.append([r, node_of(i) if i else "?", str(i.get("local_rank", "?")), i.get("cores_text", "?"),
                     str(i.get("threads", "?")), _device(i), fmt.seconds(d["median"]), fmt.seconds(d["mean"]),
                     fmt.seconds(d["max"]), fmt.seconds(forward), f"{d['slowest_in']}/{d['n']}",
                     "PASSED" if d["checks_passed"] else f"FAILED {d['failed_checks']}"])
    agg = doc["aggregate"]
    lines = ["per rank (timed iterations):",
             fmt.table(headers, rows, right={6, 7, 8, 9, 10})]
    if len(doc.get("nodes", {})) > 1:
        lines.append("per node: " + "; ".join(_node_text(name, n, agg["step"]["n"])
                                              for name, n in doc["nodes"].items()))
    if agg["step"]["n"]:
        lines.append(f"step time (slowest rank per iteration): median {fmt.seconds(agg['step']['median'])}, "
                     f"max {fmt.seconds(agg['step']['max'])} over {agg['step']['n']} iterations")
        lines.append(f"load imbalance (max/mean across ranks): median {agg['imbalance']['median']:.2f}x, "
                     f"worst {agg['imbalance']['max']:.2f}x")
        spread = ", ".join(f"{p} {fmt.seconds(s['median_spread'])} ({s['median_imbalance']:.2f}x)"
                           for p, s in agg["phase_spread"].items())
        if spread:
            lines.append(f"phase spread across ranks (median max-min, max/mean): {spread}")
    return lines


def _device(info: dict) -> str:
    """The rank's device; on CPU, where the rank sees GPUs, also the one its node-local rank
    maps to ("cpu (gpu 1)"). With none in sight (visible_devices 0) there is no GPU to
    name: the worker's gpu_slot is then only the rank it would take with one per rank."""
    device = info.get("device", "?")
    slot = info.get("gpu_slot")
    if device == "cpu" and slot is not None and (info.get("visible_devices") or 0) > 0:
        return f"{device} (gpu {slot})"
    return device


def _node_text(name: str, node: dict, steps: int) -> str:
    ranks = node["ranks"]
    which = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {_span(ranks)}"
    cpus = f", {node['cpus']} CPU{'s' if node['cpus'] != 1 else ''}" if node.get("cpus") else ""
    step = node["step"]
    median = f", step median {fmt.seconds(step['median'])}" if step["n"] else ""
    return f"{name} ({which}{cpus}){median}, slowest in {node['slowest_in']}/{steps}"


def _span(ranks: list[int]) -> str:
    return f"{ranks[0]}-{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1)) else \
        ",".join(map(str, ranks))
