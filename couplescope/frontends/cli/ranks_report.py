"""The per-rank table and the cross-rank figures of a ranked variant, for the terminal."""

from __future__ import annotations

from couplescope.frontends import format as fmt
from couplescope.results.ranks import summary


def report_lines(iterations: list[dict], ranks_info: list[dict] | None = None) -> list[str]:
    """The headless output: a per-rank table, then the aggregates in plain words."""
    doc = summary(iterations)
    if not doc["per_rank"]:
        return []
    info = {str(i["rank"]): i for i in ranks_info or []}
    headers = ["rank", "host", "cores", "threads", "device", "median", "mean", "max",
               "forward", "slowest in", "checks"]
    rows = []
    for r, d in doc["per_rank"].items():
        i = info.get(r, {})
        forward = d["phases"].get("forward", {}).get("median")
        rows.append([r, i.get("host", "?"), i.get("cores_text", "?"), str(i.get("threads", "?")),
                     i.get("device", "?"), fmt.seconds(d["median"]), fmt.seconds(d["mean"]),
                     fmt.seconds(d["max"]), fmt.seconds(forward), f"{d['slowest_in']}/{d['n']}",
                     "PASSED" if d["checks_passed"] else f"FAILED {d['failed_checks']}"])
    agg = doc["aggregate"]
    lines = ["per rank (timed iterations):",
             fmt.table(headers, rows, right={5, 6, 7, 8, 9})]
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
