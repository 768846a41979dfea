"""The compare view's words and table: one task's columns, fitted to the screen, names cut.

A compared set holds the variants of one task at a time (an inference call and a training
step are different work: a ratio between them ranks nothing), so the columns are that
task's, and the title says which runs were left out and why (the other task's, and those
that made nothing). The
columns must fit the screen whole: a number cut at the screen's edge reads as another
number (`1.3158E` for 1.3158E-02). So they are fitted before the table is drawn: the
names give way first (the start they share left out, then each cut between its words,
never wrapped: name_cuts.py), then the longer labels take their short forms; only when even that leaves a
name too little room does the table run past the edge, and the title then says that it
scrolls sideways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text

from couplescope.frontends import formatting as fmt
from couplescope.protocol.step_words import NOT_JUDGED
from couplescope.results.paired import unpaired

#: what a task's variants make, in the title
TASK_WORDS = {"infer": "inference calls", "train": "training steps"}
#: one of what a task's variants make, in the plots' titles (training speaks of steps)
UNIT_WORDS = {"infer": "call", "train": "step"}
#: what the task's own columns hold, in the title
TASK_COLUMNS_WORDS = {"infer": "overhead = call minus forward",
                      "train": "backward: its median; loss: the last step's"}
#: the narrowest a name is cut to before the table runs past the screen's edge instead
NARROWEST_NAME = 12
#: a label's short form, used when the long one would leave the names too little room
SHORT_LABELS = {"vs fastest": "ratio"}


#: a verdict's colour, wherever the app writes it as a word (compare, History)
VERDICT_STYLE = {"PASSED": "bold green", "FAILED": "bold red", "ERROR": "bold red", "STOPPED": "bold yellow",
                 NOT_JUDGED: "bold yellow"}


def verdict_text(word: str) -> Text:
    """A verdict's word (ResultsBuilder's, as the headless table writes it) in its colour."""
    return Text(word, style=VERDICT_STYLE.get(word, ""))


def task_of(variant) -> str:
    """What a variant did: "infer" (calls) or "train" (steps), from its spec."""
    return (variant.spec or {}).get("task") or "infer"


def loss_cell(value) -> str:
    """A training step's last loss in the few columns the table has: four significant
    digits, trailing zeros kept (0.5418, 0.1060, 12.35), in E format only far from 1 (1.316E-09). The reference
    suite's 5.4182E-01 took four columns more, and the names paid for them: with the
    checks' `not judged`, `#1 direct-python…` became `#1 direct-py…` at 80 columns."""
    if value is None:
        return "n/a"
    v = float(value)
    if v == 0 or not math.isfinite(v):
        return fmt.sci(v) if not math.isfinite(v) else "0"
    # `#`: the trailing zeros of the four digits kept (`0.106` stood beside `0.1526`)
    near = f"{v:#.4g}".rstrip(".")
    return near if 1e-3 <= abs(v) < 1e4 and "e" not in near else f"{v:.3E}"


def task_columns(task: str) -> list[str]:
    """The columns of a task: an inference call's coupling overhead (call minus forward); a
    training step's backward and where its loss ended."""
    return ["backward", "loss"] if task == "train" else ["overhead"]


def runs_words(records, width: int) -> str:
    """The compared runs, as short as the width needs: "#1 simplenet, #2 simplenet", else
    "#1, #2 simplenet" (one title), else "runs #1, #2, #3"."""
    names = ", ".join(r.name for r in records)
    if len(names) <= width or len(records) == 1:
        return names
    ids = ", ".join(f"#{r.id}" for r in records)
    titles = {r.title for r in records}
    return f"{ids} {titles.pop()}" if len(titles) == 1 else f"runs {ids}"


def title_lines(records, task: str, others, width: int, scrolls: bool = False, empty=()) -> list[str]:
    """The title: what is compared and what its columns hold; the runs left out and why
    (`others`: the records of the other task's runs; `empty`: runs that made no call or
    step, whose rows say `no calls`: the fourteenth walk's compare of every run named a
    run stopped before its first call among those compared, and nothing said why it had
    no box); whether the table scrolls sideways."""
    shown = [r for r in records if r not in empty] or list(records)   # (none measured: all of them)
    empty = sorted((r for r in [*records, *others] if r in empty and r not in shown), key=lambda r: r.id)
    others = [r for r in others if r not in empty]
    head = f"compare {runs_words(shown, width // 2)}: {TASK_WORDS[task]}"
    lines = [head, f"({TASK_COLUMNS_WORDS[task]})"]
    if len(head) + 3 + len(lines[1]) <= width:
        lines = [f"{head}  {lines[1]}"]
    if others or empty:
        lines += left_out_lines(others, "infer" if task == "train" else "train", width, empty)
    if scrolls:
        lines.append("the table is wider than the screen: it scrolls sideways (the arrow keys)")
    return lines


def left_out_lines(others, other: str, width: int, empty=()) -> list[str]:
    """The runs left out, in one line of the longest form that fits `width` (the eleventh
    walk: `... other work; tab compares` / `those` took two rows at 80 columns): the runs
    that made nothing and why (nothing_words), then those of the other task, by their
    names, else their numbers; `other work` given up first. Where no form of both fits one
    line, a line each."""
    theirs = other_forms(others, other, width) if others else [""]
    forms = ["not compared: " + "; ".join(part for part in (nothing, form) if part)
             for nothing in nothing_words(empty)[:3] for form in theirs]
    fitting = next((form for form in forms if len(form) <= width), None)
    if fitting is not None or not (empty and others):
        return [fitting or forms[-1]]
    nothing = [f"not compared: {words}" for words in nothing_words(empty)]
    return [next((form for form in nothing if len(form) <= width), nothing[-1]),
            next((form for form in (f"not compared: {t}" for t in theirs) if len(form) <= width),
                 f"not compared: {theirs[-1]}")]


def other_forms(others, other: str, width: int) -> list[str]:
    """The other task's runs and what tab does, longest first."""
    numbers = ", ".join(f"#{r.id}" for r in others)
    return [f"{runs}'s {TASK_WORDS[other]}{tail}"
            for runs in (runs_words(others, width // 3), numbers)
            for tail in (", other work; tab compares those", "; tab compares those")]


def nothing_words(empty) -> list[str]:
    """The runs that made no call or step and why, longest first: `#2 simplenet stopped
    before its first call`, `#2 stopped before its first call`, `#2, #4 stopped: no call`,
    `2 runs made no call` (only where a line of their own is not wide enough for more)."""
    if not empty:
        return [""]

    def why(r, short: bool) -> str:
        unit = r.unit()
        if r.status == "running":
            return f"no {unit} yet"
        if r.status in ("stopped", "error"):
            how = "stopped" if r.status == "stopped" else "failed"
            return f"{how}: no {unit}" if short else f"{how} before {r.first_call()}"
        return f"made no {unit}"

    grouped: dict[str, list[str]] = {}
    for r in empty:
        grouped.setdefault(why(r, True), []).append(f"#{r.id}")
    return [", ".join(f"{r.name} {why(r, False)}" for r in empty),
            ", ".join(f"#{r.id} {why(r, False)}" for r in empty),
            ", ".join(f"{', '.join(ids)} {words}" for words, ids in grouped.items()),
            f"{len(empty)} runs made no {empty[0].unit()}" if len(empty) > 1 else f"#{empty[0].id} made no {empty[0].unit()}"]


def spaced(cell) -> Text:
    """A cell with the one space that separates it from the column before (the table's own
    padding is 0: its two spaces between columns cost 80 columns the last ones)."""
    return Text.assemble(" ", cell if isinstance(cell, Text) else Text(str(cell)))


def unranked_why(row: dict) -> str | None:
    """Why a pair of one run in rounds is not ranked, in the log's terms (results.noise says
    it at length): "4 of 4 rounds disturbed", "its 95% interval 0.95–1.08 holds 1" (of 5
    rounds, "by round 0.95–1.08 holds 1 (5 rounds)": their range, not 95%); None when
    its ratio ranks the two."""
    from couplescope.results import paired

    if row.get("cannot_rank"):
        return f"{row['cannot_rank']} by other processes"
    if row.get("ratio_low") is not None and not paired.resolves(row):
        span = f"{row['ratio_low']:.2f}–{row['ratio_high']:.2f}"
        if paired.range_only(row):   # too few rounds for a narrower interval: not called 95%
            return f"by round {span} holds 1 ({row.get('paired_rounds')} rounds)"
        return f"its 95% interval {span} holds 1"
    return None


def ranking_lines(rows: list[dict], box: dict, runs_alone: dict | None = None) -> list[str]:
    """Under the table: why a pair is not ranked, by box number (`cannot rank 1 vs 2: 4 of 4
    rounds disturbed by other processes`). Several runs (`runs_alone`: a run's name -> its own
    rows, named as in this table) are not paired by round, so their ratios are the medians'
    (like_ratios.like_lines says so): the lines say which pairs a run alone could not rank
    (the same pair read "cannot rank" compared alone and 4.67x beside another run)."""
    if runs_alone is None:
        return unranked_lines(rows, box, "cannot rank")
    paired = {r["name"] for r in rows if r.get("pairs")}   # its run's pairs in the table: said as such
    lines = unranked_lines([r for r in rows if r["name"] in paired], box, "cannot rank")
    for run, own in runs_alone.items():
        lines += unranked_lines([r for r in own if r["name"] in box and r["name"] not in paired], box,
                                f"{run} alone cannot rank")
    return lines


def slower_smaller(rows: list[dict], box: dict, width: int = 80) -> list[str]:
    """Why a slower median can have the smaller ratio: of two rows paired by round with one
    baseline, the first whose median is slower and ratio smaller (the walk's `435.0 µs
    3.18x` above `454.1 µs 2.94x`, nothing saying why). A same-round ratio is the median of
    each round's ratio, not the ratio of the medians."""
    paired = [r for r in rows if r.get("paired_rounds") and r.get("ratio") is not None and r["name"] in box]
    for slow in paired:
        for fast in paired:
            if (fast["baseline"] == slow["baseline"] and fast["median"] < slow["median"]
                    and round(fast["ratio"], 2) > round(slow["ratio"], 2)):   # as the table shows them
                return broken(f"box {box[slow['name']]} is slower than box {box[fast['name']]} but its ratio "
                              "smaller (a ratio is the median of its rounds' ratios, not the medians')", width)
    return []


def alone_at_size(rows: list[dict]) -> set[str]:
    """The rows of a run in rounds that are their own baseline with nothing paired to them:
    the only variant measured at their size (a sweep stopped before that size's others
    made a call). Their `1.00x` was a ratio to themselves, beside a line saying every
    ratio was to box 1."""
    bases = {r["baseline"] for r in rows if r.get("baseline") not in (None, r["name"])}
    return {r["name"] for r in rows if r.get("baseline") == r["name"] and r["name"] not in bases}


def paired_lines(rows: list[dict], box: dict, width: int = 80) -> list[str]:
    """Under the table of one run in rounds: what its ratios are. They are from same-round
    pairs, each to its baseline at its own size, not the ratio of the medians the table
    shows (`1.00x` on two rows of a sweep, `3.04x` beside medians 4.6x apart), and the
    several-run compare said what its ratios were while this one said nothing. A variant
    alone at its size has no ratio: a line names it. A line longer than `width` is broken
    before its parenthesis (it wrapped at a word the terminal chose)."""
    ranked = [r for r in rows if r.get("baseline") not in (None, r["name"]) and r.get("ratio") is not None
              and r["baseline"] in box]
    alone = sorted((box[n] for n in alone_at_size(rows) if n in box))
    lines = []
    if ranked:
        bases = sorted({box[r["baseline"]] for r in ranked})
        to = f"box {bases[0]}" if len(bases) == 1 else f"box {', '.join(map(str, bases))}, each at its size"
        if all(unpaired(r) for r in ranked):
            lines.append(f"ratios: of the medians, to {to} (fewer than two rounds in common)")
        else:
            lines.append(f"ratios: from same-round pairs, to {to}; intervals in the log (t)")
    if alone:
        which = f"box {alone[0]}" if len(alone) == 1 else f"boxes {', '.join(map(str, alone))}"
        lines.append(f"alone: {which}, the only variant measured at {'its size' if len(alone) == 1 else 'their sizes'}"
                     ", has no ratio")
    return [part for line in lines for part in broken(line, width)]


def broken(line: str, width: int) -> list[str]:
    """`line`, or where it is longer than `width` two lines, broken at the last "; " or
    " (" that leaves its first line within `width` (a line wrapped by the terminal broke
    at any word: `intervals in the` / `log` / `(t)`)."""
    if len(line) <= width:
        return [line]
    breaks = [at for at in range(len(line)) if line.startswith(("; ", " ("), at) and 0 < at <= width]
    if not breaks:
        return [line]
    at = breaks[-1]
    return [line[:at], line[at:].removeprefix(";").strip()]


def unranked_lines(rows: list[dict], box: dict, words: str) -> list[str]:
    """A line per baseline and reason, the pairs' boxes together and ascending (`cannot
    rank 2, 3, 4 vs 1: ...`): a line a pair filled the lines under the table, and the
    fourth was cut."""
    grouped: dict[tuple, list[str]] = {}
    for r in rows:
        why = unranked_why(r)
        if why and r.get("baseline") in box and r["name"] in box:
            grouped.setdefault((box[r["baseline"]], why), []).append(str(box[r["name"]]))
    return [f"{words} {', '.join(sorted(boxes, key=int))} vs {base}: {why}"
            for (base, why), boxes in sorted(grouped.items(), key=lambda item: item[0][0])]


@dataclass
class Fit:
    """How the table is drawn in its width: each column's label and width, the width a name
    is cut to (None: whole), and whether the table still runs past the screen's edge."""

    labels: list[str]
    widths: list[int]
    name_width: int | None
    scrolls: bool


def fit(labels: list[str], lines: list[list[Text]], width: int, name_at: int = 1) -> Fit:
    """The columns of `labels` (cells: `lines`, already spaced) in `width` columns: every
    column as wide as its label or its widest cell; when they do not all fit, the names are
    cut, the long labels take their short forms if the names need the room, and past
    NARROWEST_NAME the table scrolls."""

    def widths_for(shown: list[str]) -> list[int]:
        return [max([len(label) + 1, *(line[i].cell_len for line in lines)]) for i, label in enumerate(shown)]

    shown = list(labels)
    widths = widths_for(shown)
    if sum(widths) <= width:
        return Fit(shown, widths, None, False)
    room = width - (sum(widths) - widths[name_at])
    short = [SHORT_LABELS.get(label, label) for label in labels]
    short_widths = widths_for(short)
    short_room = width - (sum(short_widths) - short_widths[name_at])
    if short_room > room:
        shown, widths, room = short, short_widths, short_room
    if room >= widths[name_at]:
        return Fit(shown, widths, None, False)
    widths[name_at] = max(room, NARROWEST_NAME)
    return Fit(shown, widths, widths[name_at] - 1, room < NARROWEST_NAME)
