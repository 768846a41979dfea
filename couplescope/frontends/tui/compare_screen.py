"""The compare view: marked runs and their variants side by side.

The variants of all compared runs are replayed into one ResultsBuilder (named
"#run variant"), so median, IQR, ratio to the fastest and coupling overhead come from
ResultsBuilder.comparison() exactly as the headless table does; the distributions are
box plots of each variant's timed iterations. `space` leaves the highlighted variant out
of the ratios and the plot (or puts it back), so any subset can be compared. When the
variants hold a sweep (the same variant at several sizes, couplescope.results.sweeps),
the plot is median vs size with the 25th and 75th percentiles; `v` switches between
that and the boxes (the key is named in the plot's title, only when there is a sweep).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.footer import SteadyFooter
from couplescope.results import labels, stats, sweeps
from couplescope.results.builder import ResultsBuilder, verdict_word

from couplescope.frontends.tui.watch_widgets import _unit


WHISKERS = (95, 75, 50, 25, 5)   # plotext's quintuple order: top whisker first
SWEEP_COLORS = ("cyan", "magenta", "green", "yellow", "blue", "red")
VERDICT_STYLE = {"passed": "bold green", "failed": "bold red", "error": "bold red", "stopped": "bold yellow"}


def spaced(cell) -> Text:
    """A cell with the one space that separates it from the column before (the table's own
    padding is 0: its two spaces between columns cost 80 columns the last ones)."""
    return Text.assemble(" ", cell if isinstance(cell, Text) else Text(str(cell)))


def verdict_text(verdict: str) -> Text:
    """A variant's verdict (ResultsBuilder's, the headless table's word) in its colour."""
    return Text(verdict_word(verdict), style=VERDICT_STYLE.get(verdict, ""))


def combined(records, left_out=frozenset()) -> ResultsBuilder:
    """One builder holding every variant of `records` as "#run variant", minus `left_out`."""
    builder = ResultsBuilder("compare")
    for record in records:
        for ev in record.events:
            if ev.get("variant"):
                name = f"#{record.id} {ev['variant']}"
                if name in left_out:
                    continue
                ev = {**ev, "variant": name}
            builder.on_event(ev)
    return builder


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
    height. Of 10 calls the 95th percentile lies past the 9th slowest, so one slow call
    took the axis to 56 µs over boxes of 5 to 14 µs, which came out flat. A whisker past
    the cut ends at the top with its true end written over it. A log axis would keep the
    tall whisker but still give half the plot's rows to the empty stretch from 14 to
    56 µs (a factor of 4 out of the 19 from 3 to 56 µs); the cut gives them to the
    boxes and still says where each whisker ends. The unit is the top's, so the axis
    reads 247.4 ms, not 247448.7 µs."""
    quintuples = [[stats.percentile(sorted(values), q) for q in WHISKERS] for values in series]
    highest = max(q[1] for q in quintuples)
    bottom = min(q[-1] for q in quintuples)
    top = min(max(q[0] for q in quintuples), highest + max(0.5 * (highest - bottom), 0.1 * highest))
    unit, scale = _unit(top)
    cut = {i: q[0] * scale for i, q in enumerate(quintuples, 1) if q[0] > top}
    scaled = [[min(v, top) * scale for v in q] for q in quintuples]
    room = (top - bottom) * 0.06 or top * 0.05   # a row for the cut whiskers' ends
    return BoxPlot(unit, scaled, max(0.0, bottom - room) * scale, (top + room) * scale, cut)


def boxes(series: list[list[float]]) -> tuple[str, list[list[float]]]:
    """(unit, each variant's whiskers and box in that unit, top whisker first)."""
    plot = box_plot(series)
    return plot.unit, plot.quintuples


class CompareScreen(Screen):
    BINDINGS = [Binding("escape,c", "app.pop_screen", "back"),
                Binding("space", "toggle_variant", "leave out/in"),
                Binding("v", "toggle_plot", "median vs size / boxes", show=False),
                Binding("q", "app.quit", "quit")]

    def __init__(self, records) -> None:
        super().__init__()
        self.records = list(records)
        self.left_out: set[str] = set()
        self.all_names = list(combined(self.records).variants)
        self.builder = combined(self.records)
        # compile only when a variant compiled
        self.compiled = any(r.get("compile_status") for r in self.builder.comparison())
        self.by_size = True   # when the variants hold a sweep: median vs size, else boxes
        self.plotted: list[list[str]] | None = None   # the sweep's series drawn (None: boxes)

    def compose(self) -> ComposeResult:
        runs = ", ".join(r.name for r in self.records)
        yield Static(f"[b]compare[/] {runs}  (overhead = call minus forward)", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
        yield PlotextPlot(id="compare-plot")
        # compact, without the palette's key: every key fits an 80-column footer
        yield SteadyFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.fill()

    def on_resize(self) -> None:
        self.fill()

    def columns(self) -> list[str]:
        """box first: the plot is labelled by it, and it must never be cut off; checks beside
        the name; n last."""
        return ["box", "variant", "checks", "median", "IQR", "vs fastest", "overhead",
                *(["compile"] if self.compiled else []), "n"]

    def fill(self) -> None:
        """The table (every variant; left-out ones greyed) and the plot (the others).

        Every column fits the screen: one space between columns (DataTable's padding is two),
        a variant's name without the run's `#1 ` when one run is compared (the title names
        it), and when the names would still push the last columns off the screen (80 columns,
        long names) the variant column takes what is left and its names wrap."""
        table = self.query_one("#compare-table", DataTable)
        cursor = table.cursor_row
        columns = self.columns()
        rows = {r["name"]: r for r in self.builder.comparison()}
        box = {name: i for i, name in enumerate(rows, 1)}
        shown = {name: self.display_name(name) for name in self.all_names}
        lines = []
        for name in self.all_names:
            r = rows.get(name)
            if r is None:
                why = "left out (space)" if name in self.left_out else "no timed iterations"
                lines.append(("", Text(shown[name], style="dim"), Text(why, style="dim"),
                              *[""] * (len(columns) - 3)))
                continue
            compiled = [fmt.compile_cell(r.get("compile_status"), r.get("compile_seconds"))] if self.compiled else []
            lines.append((str(box[name]), shown[name], verdict_text(r["verdict"]), fmt.seconds(r["median"]),
                          fmt.seconds(r["iqr"]), fmt.ratio(r["ratio"]), fmt.seconds(r["overhead"]), *compiled,
                          str(r["n"])))
        if not self.all_names:
            lines.append(("", "no timed iterations in these runs yet", *[""] * (len(columns) - 2)))
        lines = [[spaced(cell) for cell in line] for line in lines]
        widths = self.column_widths(columns, lines)
        width = self.variant_width(columns, widths)
        table.clear(columns=True)
        # every width given: DataTable measures the others when it is next idle and does not
        # drop the lines it drew before that, so a table filled on mount showed its columns
        # as wide as their labels (names cut to "simplen") until something restyled it
        for label, natural in zip(columns, widths):
            table.add_column(spaced(label), key=label, width=width if label == "variant" and width else natural)
        for key, line in zip([*self.all_names, None], lines):
            table.add_row(*line, key=key, height=None if width else 1)
        table.move_cursor(row=min(cursor, max(table.row_count - 1, 0)))
        self.draw(list(rows.values()))

    def display_name(self, name: str) -> str:
        """"#1 simplenet-torchscript" as the table shows it: without "#1 " when one run is
        compared (the names results.json and the headless table use)."""
        return name.split(" ", 1)[1] if len(self.records) == 1 and " " in name else name

    @staticmethod
    def column_widths(columns: list[str], lines) -> list[int]:
        """Each column as wide as its label (with its space) or its widest cell."""
        return [max([len(label) + 1, *(line[i].cell_len for line in lines)]) for i, label in enumerate(columns)]

    def variant_width(self, columns: list[str], widths: list[int]) -> int | None:
        """The variant column's width when the names must wrap for every column to fit the
        screen, else None (as wide as the longest name)."""
        at = columns.index("variant")
        room = self.app.size.width - sum(w for i, w in enumerate(widths) if i != at) - 2   # scroll bar, margin
        return max(room, 12) if widths[at] > room else None

    def action_toggle_variant(self) -> None:
        """Leave the highlighted variant out of the ratios and the plot, or put it back."""
        table = self.query_one("#compare-table", DataTable)
        if not self.all_names or not table.row_count:
            return
        name = self.all_names[table.cursor_row]
        self.left_out ^= {name}
        self.builder = combined(self.records, frozenset(self.left_out))
        self.fill()

    def action_toggle_plot(self) -> None:
        if not self._sweep_groups(list(self.builder.variants)):
            self.notify("no sweep here: median vs size needs a variant at two or more sizes",
                        severity="warning")
            return
        self.by_size = not self.by_size
        self.draw(self.builder.comparison())

    def _sweep_groups(self, names: list[str]) -> list[list[str]]:
        """The names of `names` grouped into series of one variant at several sizes."""
        variants = [self.builder.variants[n] for n in names]
        groups = sweeps.series([{"spec": v.spec, "model": v.model} for v in variants],
                               [v.environment for v in variants], [n.split(" ", 1)[0] for n in names])
        return [[names[i] for i in group] for group in groups]

    def draw(self, rows) -> None:
        plot = self.query_one("#compare-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        series = {r["name"]: [it["seconds"] for it in self.builder.variants[r["name"]].steps] for r in rows}
        if not series:
            plt.title("time distributions: nothing to compare yet")
            return
        groups = self._sweep_groups(list(series))
        self.plotted = groups if groups and self.by_size else None
        if self.plotted:
            self.draw_sweep(plt, groups, series)
            plot.refresh()
            return
        box_labels = [str(i) for i in range(1, len(series) + 1)]
        drawn = box_plot(list(series.values()))
        plt.box(box_labels, drawn.quintuples, quintuples=True)
        plt.ylim(drawn.bottom, drawn.top)
        # the ends written when they fit over their boxes (the plot takes the screen's width
        # less its y axis; the screen's, as the plot is not laid out yet when first drawn)
        per_box = (self.app.size.width - 8) / len(series)
        ends = all(len(f"^{end:.3g}") < per_box for end in drawn.cut.values())
        for i, end in drawn.cut.items():
            plt.text(f"^{end:.3g}" if ends else "^", x=i, y=drawn.top, alignment="center", color="red")
        # short: plotext leaves out a title wider than the plot (76 characters fit at 80)
        plt.title(f"timed calls ({drawn.unit}): box 25-75%, whiskers 5-95%"
                  + (f"; ^ cut{', its end' if ends else ''}" if drawn.cut else "")
                  + (" (v: vs size)" if groups else ""))
        plot.refresh()

    def draw_sweep(self, plt, groups: list[list[str]], series: dict) -> None:
        """Median vs size, one line per series, its 25th and 75th percentiles dotted."""
        variants = {n: self.builder.variants[n] for group in groups for n in group}
        unit, scale = _unit(max(sweeps.band(series[n])[1] for n in variants))   # the highest median's unit
        all_sizes, medians, highs = [], [], []
        for k, group in enumerate(groups):
            sizes = [labels.size_of({"spec": variants[n].spec, "model": variants[n].model}) for n in group]
            bands = [sweeps.band(series[n]) for n in group]
            color = SWEEP_COLORS[k % len(SWEEP_COLORS)]
            run = group[0].split(" ", 1)[0]   # "#2"
            name = sweeps.series_name([{**variants[n].spec, "spec": variants[n].spec, "model": variants[n].model}
                                       for n in group])   # the names the table shows, less the size
            plt.plot(sizes, [b[1] * scale for b in bands], color=color, marker="hd",
                     label=f"{run} {name}" if len(self.records) > 1 else name)
            for q in (0, 2):
                plt.plot(sizes, [b[q] * scale for b in bands], color=color, marker=".")
            all_sizes += sizes
            medians += [b[1] * scale for b in bands]
            highs += [b[2] * scale for b in bands]
        if min(all_sizes) > 0 and max(all_sizes) / min(all_sizes) >= 10:
            plt.xscale("log")
        plt.xticks(sorted(set(all_sizes)))
        # one noisy 75th percentile must not squash every median line into the bottom rows
        plt.ylim(0, min(max(highs), 2 * max(medians)) * 1.05)
        plt.title(f"median per call ({unit}) vs size; dots: 25th and 75th percentiles  (v: boxes)")
