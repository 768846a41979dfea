"""The headless run's closing comparison table: each variant's median, IQR and ratio (to
the fastest, or in a run in rounds to its baseline from same-round pairs, with the
interval and the spread by round), its forward and overhead (or a training step's
forward, backward and last loss), its compile cost and verdict; a sweep grouped by size."""

from __future__ import annotations

from couplescope.frontends import formatting as fmt
from couplescope.frontends.cli.colors import GREEN, RED, YELLOW
from couplescope.frontends.cli.fit_table import fit
from couplescope.protocol.step_words import NOT_JUDGED
from couplescope.results import sweeps
from couplescope.results.builder import verdict_word
from couplescope.results.paired import half_width, range_only, unpaired


def comparison_table(rows: list[dict], paint=lambda t, c: t, sizes: dict | None = None,
                     not_judged: dict | None = None, width: int | None = None) -> str:
    """The closing table; a sweep (variants at more than one size) is grouped by size,
    each group ranked against its own fastest variant (couplescope.results.sweeps); a
    compile column when a variant compiled its model (aoti, the bridge's torch.compile):
    its one-off cost beside the per-call figures. `not_judged`: the training variants whose
    learning task was not judged (too few steps), by name, the worker's words: their
    checks say `not judged` where PASSED read as "it learned", and a line says why.
    `width`: a terminal's, which the table is made to fit (couplescope.frontends.cli.fit_table)."""
    not_judged = not_judged or {}
    compiled = any(r.get("compile_status") for r in rows)
    training = bool(rows) and all(r.get("task") == "train" for r in rows)
    middle = ["forward", "backward", "last loss"] if training else ["forward", "overhead"]
    rounds = any("baseline" in r for r in rows)   # a run in rounds: ratios from same-round pairs
    headers = ["variant", "median", "IQR", "vs base" if rounds else "vs fastest",
               *(["by round"] if rounds else []), *middle,
               *(["compile"] if compiled else []), "checks"]
    sizes = sizes or {}
    sweep = len({sizes.get(r["name"]) for r in rows} - {None}) > 1
    groups = sweeps.rows_by_size(rows, sizes) if sweep else [(None, rows)]
    body, headings = [], {}
    for size, group in groups:
        if sweep:
            headings[len(body)] = f"size {size}:" if size is not None else "size unknown:"
        body += [[r["name"], fmt.seconds(r["median"]), fmt.seconds(r["iqr"]),
                  paired_ratio_cell(r) if rounds else fmt.ratio(r["ratio"]),
                  *([spread_cell(r)] if rounds else []),
                  *([fmt.seconds(r["forward"]), fmt.seconds(r.get("backward")), fmt.sci(r.get("last_loss"))]
                    if training else [fmt.seconds(r["forward"]), fmt.seconds(r["overhead"])]),
                  *([fmt.compile_cell(r.get("compile_status"), r.get("compile_seconds"))] if compiled else []),
                  checks_cell(r, not_judged)] for r in group]
    headers, body, fitted = fit(headers, body, width)
    text = fmt.with_headings(fmt.table(headers, body, right=set(range(1, len(headers) - 1))), headings)
    if fitted:
        text += "\n" + fitted
    for word, color in (("PASSED", GREEN), ("FAILED", RED), ("ERROR", RED), ("STOPPED", YELLOW),
                        (NOT_JUDGED, YELLOW)):
        text = text.replace(word, paint(word, color))
    what = ("a training step's median, its forward and backward" if training
            else "overhead = call minus forward") + ("; vs fastest at the same size" if sweep and not rounds else "")
    if rounds:
        bases = list(dict.fromkeys(r["baseline"] for r in rows if "baseline" in r))
        to = bases[0] if len(bases) == 1 else "the variant marked base at the same size"
        text += (f"\nvs base: the ratio to {to} from same-round pairs, ± its 95% interval; "
                 "by round: the lowest and highest round's ratio")
        if any(range_only(r) for r in rows):   # (5 rounds: the interval is their range)
            text += ("; where ± spans the by-round range, the rounds are too few for a narrower "
                     "interval (5 or fewer): not 95%")
        if any(unpaired(r) for r in rows):
            text += ("; unpaired: fewer than two rounds in common with the base (a variant "
                     "stopped or broke), the ratio of the two medians, with no interval")
        if any(r.get("cannot_rank") for r in rows):
            text += ("; cannot rank: other processes loaded the machine in too many of the rounds "
                     "(the note below)")
    judged_words = [not_judged[r["name"]] for r in rows
                    if r["name"] in not_judged and checks_cell(r, not_judged) == NOT_JUDGED]
    if judged_words:
        why = judged_words[0].removeprefix("not judged: ")
        text += (f"\n{NOT_JUDGED}: every check passed, but too few steps to judge whether the model "
                 f"learned its task: {why}")
    return f"comparison ({what}):\n" + text




def checks_cell(row: dict, not_judged: dict) -> str:
    """The verdict's word; `not judged` for a passed training variant whose learning task
    was not judged (PASSED told a user asking "did it learn?" yes, after 300 of 10 000 steps)."""
    if row["verdict"] == "passed" and row["name"] in not_judged:
        return NOT_JUDGED
    return verdict_word(row["verdict"])


def paired_ratio_cell(row: dict) -> str:
    """"1.04x ±6%" (a ratio from same-round pairs with its interval), "base" for the baseline."""
    if row.get("baseline") == row["name"]:
        return "base"
    if row.get("cannot_rank"):
        return "cannot rank"
    if unpaired(row):
        return fmt.ratio(row["ratio"]) + " unpaired"
    width = half_width(row)
    return fmt.ratio(row["ratio"]) + (f" ±{width:.0%}" if width is not None else "")


def spread_cell(row: dict) -> str:
    spread = row.get("ratio_spread")
    return f"{spread[0]:.2f}–{spread[1]:.2f}" if spread else ""
