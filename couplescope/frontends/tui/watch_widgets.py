"""The watch view's time plot and its legend (the statistics: stats_panel.py; the
iterations table: iterations_table.py).

Each widget is fed batches of events by the app and redraws itself at most a few times
a second; none of them touches the engine. Numbers are written with
couplescope.frontends.formatting.
"""

from __future__ import annotations

import math
import time

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.row_ticks import RowTickedPlot
from couplescope.results import stats

KIND_SHORT = {"warmup": "warm", "timed": "timed", "profiled": "prof"}
KIND_LEGEND = {"warmup": "warm-up", "timed": "timed", "profiled": "profiled"}
#: a colour per phase (backends/clock.py's names), plotext's; "+" is the bright one. A
#: training step's phases are zero_grad, forward, loss, backward, allreduce (MPI) and step,
#: or one that cannot be split: replay (a CUDA Graph), train (pytorch-fortran's one call)
PHASE_COLORS = {"marshal_in": "cyan", "h2d": "magenta", "forward": "green", "d2h": "yellow",
                "marshal_out": "blue", "load": "red", "zero_grad": "cyan+", "loss": "red+",
                "backward": "orange", "allreduce": "yellow+", "step": "magenta+", "replay": "blue+",
                "train": "green+"}
MAX_TABLE_ROWS = 500
MAX_PLOT_POINTS = 600


def _unit(value: float) -> tuple[str, float]:
    if value >= 1.0:
        return "s", 1.0
    if value >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


def axis_unit(top: float) -> tuple[str, float]:
    """The unit of a time axis whose top is `top` seconds, as formatting.seconds writes
    that time (s from 1 s, ms from 1 ms, µs below): stride's axis read `7663.9┤` ms beside
    the table's `7.664 s`, a training plot `1013.2┤` µs (the ninth walk); every label below
    1 000 but in seconds."""
    return _unit(top)


def _thin(n: int, limit: int) -> range:
    """Indices of at most `limit` evenly spread points out of n (the last one always)."""
    step = max(1, -(-n // limit))
    return range((n - 1) % step, n, step)


def x_ticks(first: int, last: int, width: int) -> tuple[list[int], list[str]]:
    """Whole-number iteration ticks, few enough that every label (the last too) is drawn.

    plotext's own ticks are fractional (51.8) and it drops the last label when the
    plot is narrow; about one tick per 10 columns keeps them apart.
    """
    count = max(2, min(6, (width - 6) // 10))
    if last <= first:
        return [first], [fmt.thousands(first)]
    ticks = sorted({round(first + (last - first) * i / (count - 1)) for i in range(count)})
    return ticks, [fmt.thousands(t) for t in ticks]   # `100 004`, as the status line counts


class CallNumbers:
    """Each call of a variant numbered as the plot's x axis and the status line (`14/14
    calls`) count them: every call in the order it came, all kinds in one sequence (1 the
    warm-up, 2-11 timed, 12-14 profiled), where each kind's own index starts at 1 (the
    table numbered them so: `1 prof` could not be found on the plot's axis). Under MPI
    every rank reports each call: its ranks share one number."""

    def __init__(self) -> None:
        self.count = 0
        self._ranked: dict[tuple, int] = {}   # (kind, index) -> number, for MPI ranks

    def number(self, ev: dict) -> tuple[int, bool]:
        """(the call's number, whether it is a call not numbered before)."""
        key = (ev["kind"], ev.get("index")) if ev.get("rank") is not None else None
        if key in self._ranked:
            return self._ranked[key], False
        self.count += 1
        if key:
            self._ranked[key] = self.count
        return self.count, True


class TimePlot(RowTickedPlot):
    """Per-iteration time of the current variant; one line per phase, kinds told apart;
    its y labels on the rows they name (row_ticks.py)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[tuple[int, str, float, dict]] = []   # (number, kind, seconds, phases)
        self.variant = ""
        self._numbers = CallNumbers()   # the points' x: the call numbers the table shows
        self._dirty = False
        self._last_draw = 0.0
        self._drawn_empty = True   # the plot on screen has no calls
        self.training = False      # a training variant's: steps, not iterations
        self.empty = "no run yet"  # the title while there is nothing to draw (`say`)

    def reset(self, variant: str, calls=(), training: bool = False) -> None:
        """Hold `variant`'s calls (none yet, or its calls so far), drawn at the next draw."""
        self.points, self.variant, self._numbers, self.training = [], variant, CallNumbers(), training
        self.empty = "no steps yet" if training else "no calls yet"
        self.add(calls)
        self._dirty = True
        self.post_message(self.LegendChanged([]))   # not the previous variant's key under another's calls

    def say(self, title: str) -> None:
        """Nothing to draw, and why, drawn at once: `run #3 starting` (it read "no run yet"
        while a run started, over the last run's calls for up to a second)."""
        self.reset("")
        self.empty = title
        self.draw(force=True)

    def add(self, evs: list[dict]) -> None:
        """One point per call; under MPI every rank reports each call, and the point is the
        slowest rank's record (the step time, as in VariantResult.steps)."""
        for ev in evs:
            point = (ev["kind"], ev["seconds"], ev.get("phases") or {})
            number, new = self._numbers.number(ev)
            if new:
                self.points.append((number, *point))
            elif ev["seconds"] > self.points[number - 1][2]:
                self.points[number - 1] = (number, *point)
        self._dirty = True

    def draw(self, force: bool = False) -> None:
        """Rebuild the plot if there is new data, at most once a second unless forced (the
        Watch view redraws once a second and forces it: every figure of a redraw the same calls).

        plotext is pure Python and costs tens of milliseconds per build on a busy node, CPU
        the measured worker may need: so few builds, and at most two points per column.
        """
        now = time.monotonic()
        # the first calls after an empty plot are drawn at once: "no calls yet" beside a
        # table of them would contradict it for up to a second
        first = self._drawn_empty and bool(self.points)
        if not self._dirty or (not force and not first and now - self._last_draw < 1.0):
            return
        self._dirty, self._last_draw, self._drawn_empty = False, now, not self.points
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        limit = max(60, min(MAX_PLOT_POINTS, 2 * self.size.width))
        # thin the timed iterations only: the few warm-up and profiled ones always show
        timed_pts = [p for p in self.points if p[1] == "timed"]
        pts = sorted([p for p in self.points if p[1] != "timed"][:limit]
                     + [timed_pts[i] for i in _thin(len(timed_pts), limit)])
        timed = sorted(p[2] for p in self.points if p[1] == "timed") or sorted(p[2] for p in self.points)
        if not pts:   # short: plotext leaves out a title wider than the plot (36 columns at 80)
            plt.title(self.empty)
            self.no_range()
            self.refresh()
            return
        # a slow first (warm-up) call or a few spikes would flatten everything else: clip at
        # 1.5x the 95th percentile of the timed iterations (clipped points sit on the top edge,
        # a warm-up or profiled one marked there and its value in the legend: `x warm-up ↑114.3 ms`)
        top = stats.percentile(timed, 95) * 1.5
        names = []
        for p in pts:
            names += [k for k in p[3] if k not in names]
        phases = [(name, [p for p in pts if name in p[3]]) for name in names]
        highest = max([p[2] for p in pts] + [p[3][name] for name, sel in phases for p in sel])
        unit, scale = axis_unit(min(highest, top))

        def y(values):
            return [min(v, top) * scale for v in values]

        legend: list[tuple[str, str]] = []
        drawn: list[float] = []
        kinds = (("warmup", "x", "orange"), ("timed", "braille", "white"), ("profiled", "x", "red"))
        # the lines first, the warm-up and profiled marks last: a phase's line through the
        # warm-up's clipped point hid its mark on the top edge (the eighth walk)
        for kind, marker, color in kinds[1:2]:
            sel = [p for p in pts if p[1] == kind]
            if sel:
                drawn += y([p[2] for p in sel])
                plt.plot([p[0] for p in sel], drawn[-len(sel):], marker=marker, color=color)
        for name, sel in phases:
            drawn += y([p[3][name] for p in sel])
            plt.plot([p[0] for p in sel], drawn[-len(sel):], marker="braille", color=PHASE_COLORS.get(name, "gray"))
        for kind, marker, color in kinds:
            sel = [p for p in pts if p[1] == kind]
            if not sel:
                continue
            if marker == "x":
                drawn += y([p[2] for p in sel])
                plt.plot([p[0] for p in sel], drawn[-len(sel):], marker=marker, color=color)
            # the timed ones' highest of all, not of the thinned: a spike is what the stats'
            # max says (`max 3.85 ms` beside a scale topped at 49.6 µs and no mark: the
            # fifteenth walk); the line sits on the top edge there
            over = timed[-1] if kind == "timed" else max(p[2] for p in sel)
            beyond = f" ↑{fmt.seconds(over)}" if over > top else ""
            legend.append((f"{marker if marker == 'x' else '━'} {KIND_LEGEND[kind]}{beyond}", color))
        legend += [(f"━ {name}", PHASE_COLORS.get(name, "gray")) for name in names]
        word = "step" if self.training else "iteration"
        plt.title(f"time per {word} ({unit})")
        plt.xlabel(word)
        plt.xticks(*x_ticks(pts[0][0], pts[-1][0], self.size.width))
        self.show_range(drawn)
        self.refresh()
        self.post_message(self.LegendChanged(legend))

    class LegendChanged(Message):
        """The series drawn, as (text, plotext colour): shown under the plot, not over it."""

        def __init__(self, items) -> None:
            super().__init__()
            self.items = items


RICH_COLORS = {"orange": "dark_orange", "gray": "grey50"}
#: the legend's short phase names, used only when the full ones do not fit its lines
SHORT_PHASES = {"marshal_in": "m_in", "forward": "fwd", "marshal_out": "m_out", "zero_grad": "zero",
                "backward": "bwd"}


def rich_color(color: str) -> str:
    """A plotext colour as rich names it ("cyan+" is bright_cyan)."""
    if color.endswith("+"):
        return f"bright_{color[:-1]}"
    return RICH_COLORS.get(color, color)


def legend_lines(items, width: int, short: bool = False) -> list[list[tuple[str, str]]]:
    """Legend entries packed greedily into lines of `width` cells, one space apart."""
    lines: list[list[tuple[str, str]]] = [[]]
    used = 0
    for text, color in items:
        if short:
            marker, _, name = text.partition(" ")
            text = f"{marker} {SHORT_PHASES.get(name, name)}"
        need = len(text) + (1 if lines[-1] else 0)
        if lines[-1] and used + need > width:
            lines.append([])
            used, need = 0, len(text)
        lines[-1].append((text, color))
        used += need
    return lines


#: the legend's most lines (app.tcss: #plot-legend's max-height)
LEGEND_LINES = 3


def fitted_legend(items, width: int) -> list[list[tuple[str, str]]]:
    """The legend's lines at `width`, in one wording for the whole of a variant: the full
    phase names wherever they fit LEGEND_LINES lines beside every mark a variant may get
    (warm-up, timed, profiled: short_names), else the short ones throughout. A wording
    chosen on the entries of the moment changed within a run (`m_in`, `fwd` while it
    measured, `marshal_in`, `forward` once finished: the eleventh walk). Where the marks'
    values would need a line more, a mark above the scale keeps its arrow without its
    value (`x warm-up ↑`), not a line cut off (an MPI training variant's eight phases)."""
    short = short_names(items, width)
    lines = legend_lines(items, width, short=short)
    if len(lines) > LEGEND_LINES:
        lines = legend_lines(bare(items), width, short=short)
    return lines


def bare(items) -> list[tuple[str, str]]:
    """The legend's entries without the values of the marks above the scale (`x warm-up ↑`)."""
    return [(text.partition(" ↑")[0] + (" ↑" if " ↑" in text else ""), color) for text, color in items]


def short_names(items, width: int) -> bool:
    """Whether the phases take their short names at `width`: only where the full ones do not
    fit LEGEND_LINES lines beside every mark a variant may get, their values left out (so
    the wording is the same from a variant's first call to its last)."""
    marks = [f"x {KIND_LEGEND['warmup']} ↑", f"━ {KIND_LEGEND['timed']} ↑", f"x {KIND_LEGEND['profiled']} ↑"]
    phases = [(text, color) for text, color in items
              if text.partition(" ")[2].partition(" ↑")[0] not in KIND_LEGEND.values()]
    return len(legend_lines([(mark, "") for mark in marks] + phases, width)) > LEGEND_LINES


class PlotLegend(Static):
    """The time plot's key, one coloured entry per series, its lines broken between entries.

    Full phase names where they fit its lines, otherwise the short ones (m_in, fwd, m_out):
    one wording from a variant's first call to its last (fitted_legend).
    """

    def on_mount(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.update("")

    def show(self, items) -> None:
        self.items = list(items)
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        width = max(10, self.content_size.width or self.size.width)
        lines = fitted_legend(self.items, width)
        text = Text()
        for i, line in enumerate(lines):
            if i:
                text.append("\n")
            for j, (entry, color) in enumerate(line):
                text.append((" " if j else "") + entry, style=rich_color(color))
        self.update(text if self.items else "")

    def render(self):
        try:
            return super().render()
        except Exception as exc:  # plotext edge cases must never take the app down
            return Text(f"plot unavailable: {type(exc).__name__}: {exc}")



def progress_shown(done: int, total: int) -> float:
    """The progress to give the bar so that its percentage is rounded down: Textual's
    rounds it to the nearest, and `1 010/1 013 calls` read 100% while the variant still
    ran. At the end, the end."""
    if total <= 0 or done >= total:
        return done
    return math.floor(100 * done / total) * total / 100


def calls_done(variant) -> dict[str, int]:
    """The calls a variant made so far, by kind: counted per iteration, not per record
    (under MPI every rank reports each iteration). The statistics' counts and the progress
    bar both come from here, so they never disagree."""
    indices: dict[str, set] = {"timed": set(), "warmup": set(), "profiled": set()}
    for it in variant.iterations:
        indices.setdefault(it["kind"], set()).add(it["index"])
    return {kind: len(seen) for kind, seen in indices.items()}
