"""The replica beside the real library, phase by phase: the table a run with several hosts ends with.

When the variants make the same calls from different hosts (`--host native,ftorch`), the
closing comparison says how the whole calls compare; this table says where: each phase's
median per host, and each host's ratio to the baseline's with its 95% interval from
same-round pairs (couplescope.results.phase_pairs), or "cannot rank" where other
processes disturbed too many of the rounds (the comparison's rule). Columns are named by
host, since the host is all that differs.
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt

#: a cell of a phase the host does not make (pytorch-fortran's train is one call: no
#: zero_grad, forward, loss, backward or step of its own; the native host has no train)
ABSENT = "—"


def host_phase_table(comparison: dict, hosts: dict) -> str:
    """`comparison`: results.phase_pairs.host_comparison's; `hosts`: variant name -> host."""
    base, names = comparison["base"], comparison["names"]
    others = [n for n in names if n != base]
    headers = ["phase", hosts[base], *[h for n in others for h in (hosts[n], f"{hosts[n]} ÷ {hosts[base]}")]]
    body = []
    for row in comparison["phases"]:
        cells = row["cells"]
        line = [row["phase"], median_text(cells[base])]
        for n in others:
            cell = cells[n]
            ratio = cell.get("ratio")
            interval = (f" ({cell['low']:.2f}–{cell['high']:.2f})" if cell.get("low") is not None else "")
            unmade = cell.get("absent") or cells[base].get("absent")
            text = (ABSENT if unmade else "cannot rank" if cell.get("cannot_rank")
                    else f"{ratio:.2f}x{interval}" if ratio else "n/a")
            line += [median_text(cell), text]
        body.append(line)
    table = fmt.table(headers, body, right=set(range(1, len(headers))))
    every_cell = [c for r in comparison["phases"] for c in r["cells"].values()]
    paired = any(c.get("low") is not None or c.get("cannot_rank") for c in every_cell)
    how = ("ratio from same-round pairs, 95% interval" if paired
           else "ratio of the medians: one round, no interval")
    absent = any(c.get("absent") for c in every_cell)
    note = ""
    if any(c.get("low") is not None for c in every_cell):   # results.paired.RANGE_ROUNDS
        note += "\nof 5 rounds or fewer, the interval is their range: too few rounds for a narrower one"
    note += f"\n{ABSENT}: that host has no such phase" if absent else ""
    if any(c.get("cannot_rank") for c in every_cell):
        note += ("\ncannot rank: other processes loaded the machine in too many of the rounds "
                 "(the note below)")
    return f"per phase, by host (median; {how}):\n" + table + note


def median_text(cell: dict) -> str:
    return ABSENT if cell.get("absent") else fmt.seconds(cell["median"])
