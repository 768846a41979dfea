"""The compare view's box plot, drawn as text: a row per variant, time across the screen.

    timed calls (µs): █ 25-75% ┃ median, ├─┤ 5-95%; ▸N: cut here, ends at N
    1 │      ├──────██┃████──────────────────────────────────────▸464.0 µs
    2 │  ├────████┃██────────┤
      └──┬──────────┬──────────┬──────────┬──────────┬──────────┬──────
        120        140        160        180        200        220

plotext's vertical boxes had six or seven rows of height at 80x24 to share between every
box: a box shorter than a row vanished behind its median, one was drawn a row above its
own median, and the labels ran into each other. Across the screen a box has seventy
columns, and each variant a row of its own, labelled with the table's box number, so a
box is never missing and its median always lies inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.watch_widgets import _unit, rich_color
from couplescope.results import stats

WHISKERS = (95, 75, 50, 25, 5)   # each variant's quintuple: top whisker first
COLORS = ("cyan", "magenta", "green", "yellow", "blue", "red")
#: a box narrower than this many columns is drawn this wide, around its median (placed)
NARROWEST_BOX = 3


@dataclass
class BoxPlot:
    """The compare view's box plot, in one unit: each variant's whiskers and box (top
    whisker first), the axis's ends, and the top whiskers cut at the axis (box number ->
    where the whisker really ends)."""

    unit: str
    quintuples: list[list[float]]
    bottom: float
    top: float
    cut: dict[int, float]


def box_plot(series: list[list[float]]) -> BoxPlot:
    """Whiskers at the 5th and 95th percentiles, and the axis cut at the highest box's top
    plus half of what lies below it on the plot (from the lowest whisker; at least a tenth
    of that top), so the boxes and what lies between them get two thirds of the plot's
    width. Of 10 calls the 95th percentile lies past the 9th slowest, so one slow call
    took the axis to 56 µs over boxes of 5 to 14 µs, which came out flat. A whisker past
    the cut ends at the edge with its true end written after it. A log axis would keep the
    long whisker but still give half the plot to the empty stretch from 14 to 56 µs (a
    factor of 4 out of the 19 from 3 to 56 µs); the cut gives it to the boxes and still
    says where each whisker ends. The unit is the top's, so the axis reads 247.4 ms, not
    247448.7 µs."""
    quintuples = [[stats.percentile(sorted(values), q) for q in WHISKERS] for values in series]
    highest = max(q[1] for q in quintuples)
    bottom = min(q[-1] for q in quintuples)
    top = min(max(q[0] for q in quintuples), highest + max(0.5 * (highest - bottom), 0.1 * highest))
    unit, scale = _unit(top)
    cut = {i: q[0] * scale for i, q in enumerate(quintuples, 1) if q[0] > top}
    scaled = [[min(v, top) * scale for v in q] for q in quintuples]
    room = (top - bottom) * 0.06 or top * 0.05   # a little air at both ends
    return BoxPlot(unit, scaled, max(0.0, bottom - room) * scale, (top + room) * scale, cut)


def boxes(series: list[list[float]]) -> tuple[str, list[list[float]]]:
    """(unit, each variant's whiskers and box in that unit, top whisker first)."""
    plot = box_plot(series)
    return plot.unit, plot.quintuples


def nice_ticks(low: float, high: float, count: int) -> list[float]:
    """About `count` round values (steps of 1, 2 or 5 times a power of ten) in [low, high]."""
    span = high - low
    if span <= 0 or count < 1:
        return [low]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    digits = max(0, -math.floor(math.log10(step)))
    first = math.ceil(low / step) * step
    return [round(first + i * step, digits) for i in range(int((high - first) / step + 1e-9) + 1)]


#: a unit's seconds
UNIT_SECONDS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


def end_text(value: float, unit: str) -> str:
    """A cut whisker's true end (`value` in the plot's `unit`), written after the arrow in
    the unit the tables use: ▸4.78 ms (it read ▸4.78e+03, in µs)."""
    return "▸" + fmt.seconds(value * UNIT_SECONDS[unit])


def title(plot: BoxPlot, width: int, extra: str, what: str) -> str:
    """The key to the marks, in one line where the full words would wrap: at 80 columns a
    cut whisker's words and the sweep's `(v: vs size)` ran to a second line, "(v: vs" and
    "size)" apart."""
    key = f"timed {what} ({plot.unit}): █ 25-75% ┃ median, ├─┤ 5-95%"
    full = key + ("; ▸N: cut here, ends at N" if plot.cut else "") + extra
    if len(full) <= width:
        return full
    return key.replace("median,", "median") + (" ▸N ends at N" if plot.cut else "") + extra


def placed(low: int, box_low: int, median: int, box_high: int, high: int, columns: int) -> tuple[int, int, int, int]:
    """The columns a variant's row is drawn in: its whiskers' ends and its box, the box
    NARROWEST_BOX wide at least, centred on its median, and each whisker's end outside
    the box, a column beyond it where the box would cover it. A whisker's end in a box's
    column was lost: a box widened over it (`█┃█───┤`: where did it start?), or a box
    whose 5th, 25th percentile and median share a column at the axis's start drawn two
    cells wide without its `├` (`┃█┤`). The median is at least a column from the axis's
    start (draw() leaves two), so the `├` always has its column; the margin after the
    axis leaves the `┤` its own."""
    if box_high - box_low + 1 < NARROWEST_BOX:   # a narrow box: three wide around its median
        half = NARROWEST_BOX // 2
        box_low = min(max(0, median - half), columns - NARROWEST_BOX)
        box_high = box_low + NARROWEST_BOX - 1
    return min(low, box_low - 1), box_low, box_high, max(high, box_high + 1)


def room_before(plot: BoxPlot, columns: int, before: int = 2) -> float:
    """The axis's start: the plot's, or lower where the lowest whisker would lie within
    `before` columns of it (a box near zero time beside slower ones: the axis starts at
    zero), so that a narrow box there keeps its `├` left of it."""
    lowest = min(q[-1] for q in plot.quintuples)
    span = plot.top - plot.bottom
    if columns <= before + 1 or span <= 0 or (lowest - plot.bottom) / span * (columns - 1) >= before:
        return plot.bottom
    return lowest - before * (plot.top - lowest) / (columns - 1 - before)


def draw(plot: BoxPlot, labels: list[str], width: int, title_extra: str = "", what: str = "calls") -> Text:
    """The title, a row per variant (`labels`: the table's box numbers), the axis and its
    values, in `width` columns. `what` the variants timed: calls, or a training's steps."""
    label_width = max(len(label) for label in labels)
    margin = max([len(end_text(v, plot.unit)) for v in plot.cut.values()] or [1])
    columns = max(10, width - label_width - 2 - margin)
    bottom = room_before(plot, columns)
    span = (plot.top - bottom) or 1.0

    def col(value: float) -> int:
        return min(columns - 1, max(0, round((value - bottom) / span * (columns - 1))))

    out = Text(title(plot, width, title_extra, what), style="bold")
    for i, (label, q) in enumerate(zip(labels, plot.quintuples), 1):
        color = rich_color(COLORS[(i - 1) % len(COLORS)])
        high, box_high, median, box_low, low = (col(v) for v in q)
        low, box_low, box_high, high = placed(low, box_low, median, box_high, high, columns)
        cells = [(" ", "")] * (columns + margin)
        for c in range(low, high + 1):
            cells[c] = ("─", color)
        cells[low] = ("├", color)
        cells[high] = ("▸", "bold red") if i in plot.cut else ("┤", color)
        if i in plot.cut:   # where the whisker really ends, right after its arrow
            for k, char in enumerate(end_text(plot.cut[i], plot.unit)[1:], high + 1):
                cells[k] = (char, "red")
        for c in range(box_low, box_high + 1):
            cells[c] = ("┃", f"bold white on {color}") if c == median else ("█", color)
        row = Text(f"\n{label:>{label_width}} │")
        for char, style in cells:
            row.append(char, style=style)
        row.rstrip()
        out.append_text(row)
    # no time below zero is labelled (the axis may start a little below it: room_before)
    ticks = [(col(v), f"{v + 0.0:g}") for v in nice_ticks(bottom, plot.top, max(1, columns // 12)) if v >= 0]
    axis = ["─"] * columns
    values = [" "] * (columns + margin)
    free = 0   # the first column a value may be written from
    for c, text in ticks:
        axis[c] = "┬"
        start = max(0, c - len(text) // 2)
        if start >= free and start + len(text) <= len(values):
            values[start:start + len(text)] = text
            free = start + len(text) + 1
    pad = " " * (label_width + 1)
    out.append(f"\n{pad}└{''.join(axis)}\n{pad} {''.join(values).rstrip()}", style="dim")
    return out


def nothing_drawn(left_out: int, rows: int, unit: str) -> str:
    """What the plot says when it has no box: of `rows` variants, `left_out` left out."""
    if left_out and left_out == rows:
        return "time distributions: every variant left out; space puts one back"
    if left_out:
        return f"time distributions: {left_out} left out, the others made no {unit}s; space puts one back"
    return "time distributions: nothing to compare yet"


class BoxRows(Static):
    """The box plot widget: what `show` was given, drawn again at every width."""

    _shown: tuple | None = None

    def show(self, plot: BoxPlot, labels: list[str], title_extra: str = "", what: str = "calls") -> None:
        self._shown = (plot, labels, title_extra, what)
        self._draw()

    def say(self, words: str) -> None:
        """Words in place of the boxes, kept at every width: a plot shown before was drawn
        again at the next resize (the only variant left out kept its box)."""
        self._shown = None
        self.update(words)

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self._shown is not None:
            plot, labels, extra, what = self._shown
            # its own width once laid out; the screen's before (the first draw, on mount)
            self.update(draw(plot, labels, self.content_size.width or self.app.size.width - 2, extra, what))
