"""The compare view's sweep plot: the medians of each variant one run measured at several
sizes against size (couplescope.results.sweeps groups them into series), a line per series with
its 25th and 75th percentiles as dots, the key under the plot. A part of CompareScreen
(it inherits SweepPlot), as the box plot is box_rows.py's.
"""

from __future__ import annotations

from couplescope.frontends.tui.compare_table import UNIT_WORDS
from couplescope.frontends.tui.row_ticks import RowTickedPlot
from rich.text import Text

from couplescope.frontends.tui.watch_widgets import PlotLegend, _unit, legend_lines, rich_color
from couplescope.results import labels, sweeps

SWEEP_COLORS = ("cyan", "magenta", "green", "yellow", "blue", "red")
#: the key's colour (rich's name) as plotext names it: plotext has no "yellow" (it drew the
#: fourth series bright red beside a yellow key); its "orange" is the terminal's yellow
PLOTEXT_COLORS = {"yellow": "orange"}


#: what follows a series' name in the key when another's line covers its own
UNDER = " (under "
#: how the key's note on the boxes with no line begins
NOT_DRAWN = "not drawn: "


def key_lines(items, width: int) -> list[list[tuple[str, str]]]:
    """The sweep key's lines at `width`: the entries packed, but a series another covers on a
    line of its own (the twelfth walk: `━ #3 bridge-torchscript ━ #3 bridge-python (under #5
    bridge-torchscript)` read as both #3 series under #5's line), and the `not drawn` note
    too (the fifteenth walk: `━ #6 myrun-bridge not drawn: 1, 2 (...)` read as that series
    not drawn, where boxes 1 and 2 were)."""
    lines: list[list[tuple[str, str]]] = []
    packed: list[tuple[str, str]] = []
    for item in items:
        if UNDER in item[0] or item[0].startswith(NOT_DRAWN):
            lines += legend_lines(packed, width) if packed else []
            lines.append([item])
            packed = []
        else:
            packed.append(item)
    return lines + (legend_lines(packed, width) if packed else [])


class SweepKey(PlotLegend):
    """The sweep plot's key (PlotLegend's, packed by key_lines)."""

    def _redraw(self) -> None:
        width = max(10, self.content_size.width or self.size.width)
        text = Text("\n").join(Text(" ").join(Text(entry, style=rich_color(color)) for entry, color in line)
                                for line in key_lines(self.items, width))
        self.update(text if self.items else "")


class SweepPlot:
    """Median vs size, drawn from the compare screen's builder (see the module docstring)."""

    def _sweep_groups(self, names: list[str]) -> list[list[str]]:
        """The names of `names` grouped into series of one variant at several sizes, each
        series one run's: separate runs at other sizes are not joined (the ninth walk: a
        run's size-1 point was joined to another's size-2 one where the sizes did not
        repeat, and not where they did; a training `direct` at sizes 1 and 2 in two runs
        was no sweep). Runs at other sizes are compared in the table, by size."""
        by_run: dict[str, list[str]] = {}
        for name in names:
            by_run.setdefault(name.split(" ", 1)[0], []).append(name)
        groups = []
        for mine in by_run.values():
            variants = [self.builder.variants[n] for n in mine]
            groups += [[mine[i] for i in group]
                       for group in sweeps.series([{"spec": v.spec, "model": v.model} for v in variants],
                                                  [v.environment for v in variants])]
        return groups

    def on_row_ticked_plot_rows_changed(self, event: RowTickedPlot.RowsChanged) -> None:
        """The sweep's plot laid out on other rows than it was drawn for (it is drawn
        before it is laid out): drawn again, so the key names the lines covered on them."""
        if self.plotted is not None:
            self.draw(self.builder.comparison())

    def draw_sweep(self, plt, groups: list[list[str]], series: dict) -> None:
        """Median vs size, one line per series, its 25th and 75th percentiles as dots at the
        sizes measured. The dots are drawn first and the lines over them: plotext draws
        in order, a cell taking the last mark, and the percentiles drawn as dotted lines
        after the medians hid them (at 80x24 a whole median line). The key is under the
        plot (#compare-legend), not over its lines."""
        variants = {n: self.builder.variants[n] for group in groups for n in group}
        unit, scale = _unit(max(sweeps.band(series[n])[1] for n in variants))   # the highest median's unit
        lines, legend, all_sizes, medians, highs = [], [], [], [], []
        for k, group in enumerate(groups):
            sizes = [labels.size_of({"spec": variants[n].spec, "model": variants[n].model}) for n in group]
            bands = [[value * scale for value in sweeps.band(series[n])] for n in group]
            color = SWEEP_COLORS[k % len(SWEEP_COLORS)]
            for q in (0, 2):
                plt.scatter(sizes, [b[q] for b in bands], color=PLOTEXT_COLORS.get(color, color), marker=".")
            lines.append((sizes, [b[1] for b in bands], PLOTEXT_COLORS.get(color, color)))
            run = group[0].split(" ", 1)[0]   # "#2"
            name = sweeps.series_name([{**variants[n].spec, "spec": variants[n].spec, "model": variants[n].model}
                                       for n in group])   # the names the table shows, less the size
            legend.append((f"━ {run} {name}" if len(self.records) > 1 else f"━ {name}", color))
            all_sizes += sizes
            medians += [b[1] for b in bands]
            highs += [b[2] for b in bands]
        # a variant at one size has no line: said, by its box number (a run of one size beside
        # another's sweep was left out without a word; its names took two of the plot's rows)
        box = self.box_numbers(series)
        alone = [str(box[n]) for n in series if n not in variants]
        for sizes, line, color in lines:
            plt.plot(sizes, line, color=color, marker="hd")
        if min(all_sizes) > 0 and max(all_sizes) / min(all_sizes) >= 10:
            plt.xscale("log")
        plt.xticks(sorted(set(all_sizes)))
        plt.xlabel("size")   # (the eighth walk: `1 … 2` under the axis, nothing said what they were)
        # one noisy 75th percentile must not squash every median line into the bottom rows;
        # the y labels on the rows they name (row_ticks.py)
        plot = self.query_one("#compare-plot", RowTickedPlot)
        top = min(max(highs), 2 * max(medians)) * 1.05
        plot.show_range([0, top])
        # a line that another covers in every cell is named under it (the eighth walk: two
        # series' medians a row apart drew one line, the key naming both)
        points = [dict(zip(sizes, line)) for sizes, line, _ in lines]
        for k, over in hidden_under(points, 0, top, plot.canvas_rows()).items():
            text, color = legend[k]
            legend[k] = (f"{text}{UNDER}{', '.join(legend[j][0].removeprefix('━ ') for j in over)})", color)
        if alone:
            legend.append((f"{NOT_DRAWN}{', '.join(alone)} (one size in its run; v draws every box)", "white"))
        word = UNIT_WORDS[self.compared_task]
        plt.title(f"median per {word} ({unit}) vs size; dots: 25th and 75th percentiles  (v: boxes)")
        self.query_one(PlotLegend).show(legend)


def canvas_row(value: float, low: float, high: float, rows: int) -> int:
    """The character row (0 the bottom) plotext draws `value` in, with its half-block
    marker ("hd": two dots a row) on `rows` rows from `low` to `high`."""
    return round((value - low) / (high - low) * (2 * rows - 1)) // 2 if high > low else 0


def hidden_under(points: list[dict], low: float, high: float, rows: int) -> dict[int, list[int]]:
    """The series (by index into `points`: each a size -> median) whose line another,
    drawn after it, covers in every cell: plotext gives a cell the last line drawn in it,
    so a series with its median in the row of a later one's at each of its sizes is not
    seen. Index -> the later series covering it."""
    hidden = {}
    for k, mine in enumerate(points):
        over = []
        for size, value in mine.items():
            row = canvas_row(value, low, high, rows)
            later = [j for j in range(k + 1, len(points))
                     if size in points[j] and canvas_row(points[j][size], low, high, rows) == row]
            if not later:
                break
            over += [j for j in later[:1] if j not in over]
        else:
            if over and rows > 0:
                hidden[k] = over
    return hidden
