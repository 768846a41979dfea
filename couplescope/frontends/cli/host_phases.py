"""The replica beside the real library, phase by phase: the table a run with several hosts ends with.

When the variants make the same calls from different hosts (`--host native,ftorch`), the
closing comparison says how the whole calls compare; this table says where: each phase's
median per host, and each host's ratio to the baseline's with its 95% interval from
same-round pairs (couplescope.results.phase_pairs). Columns are named by host, since the
host is all that differs.
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt


def host_phase_table(comparison: dict, hosts: dict) -> str:
    """`comparison`: results.phase_pairs.host_comparison's; `hosts`: variant name -> host."""
    base, names = comparison["base"], comparison["names"]
    others = [n for n in names if n != base]
    headers = ["phase", hosts[base], *[h for n in others for h in (hosts[n], f"{hosts[n]} ÷ {hosts[base]}")]]
    body = []
    for row in comparison["phases"]:
        cells = row["cells"]
        line = [row["phase"], fmt.seconds(cells[base]["median"])]
        for n in others:
            cell = cells[n]
            ratio = cell.get("ratio")
            interval = (f" ({cell['low']:.2f}–{cell['high']:.2f})" if cell.get("low") is not None else "")
            line += [fmt.seconds(cell["median"]), (f"{ratio:.2f}x{interval}" if ratio else "n/a")]
        body.append(line)
    table = fmt.table(headers, body, right=set(range(1, len(headers))))
    paired = any(c.get("low") is not None for r in comparison["phases"] for c in r["cells"].values())
    how = ("ratio from same-round pairs, 95% interval" if paired
           else "ratio of the medians: one round, no interval")
    return f"per phase, by host (median; {how}):\n" + table
