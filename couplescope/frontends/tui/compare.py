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

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot

from couplescope.frontends import format as fmt
from couplescope.results import labels, stats, sweeps
from couplescope.results.builder import ResultsBuilder, verdict_word

from .watch import _unit


WHISKERS = (95, 75, 50, 25, 5)   # plotext's quintuple order: top whisker first
SWEEP_COLORS = ("cyan", "magenta", "green", "yellow", "blue", "red")
VERDICT_STYLE = {"passed": "bold green", "failed": "bold red", "error": "bold red", "stopped": "bold yellow"}


def verdict_text(verdict: str) -> Text:
    """A variant's verdict (ResultsBuilder's, the headless table's word) in its colour."""
    return Text(verdict_word(verdict), style=VERDICT_STYLE.get(verdict, ""))


def combined(records, left_out=frozenset()) -> ResultsBuilder:
    """One builder holding every variant of `records` as "#run variant", minus `left_out`."""
    builder = ResultsBuilder("compare")
    for record in records:
        for ev in record.builder_events():
            if ev.get("variant"):
                name = f"#{record.id} {ev['variant']}"
                if name in left_out:
                    continue
                ev = {**ev, "variant": name}
            builder.on_event(ev)
    return builder


def boxes(series: list[list[float]]) -> tuple[str, list[list[float]]]:
    """(unit, each variant's whiskers and box in that unit, top whisker first).

    Whiskers at the 5th and 95th percentiles: one 10x outlier would otherwise squash every
    box into the bottom row. The unit is the highest whisker's, so the axis reads 247.4 ms
    rather than 247448.7 µs (the fastest variant's unit did that)."""
    quintuples = [[stats.percentile(sorted(values), q) for q in WHISKERS] for values in series]
    unit, scale = _unit(max(q[0] for q in quintuples))
    return unit, [[v * scale for v in q] for q in quintuples]


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
        self.by_size = True   # when the variants hold a sweep: median vs size, else boxes
        self.plotted: list[list[str]] | None = None   # the sweep's series drawn (None: boxes)

    def compose(self) -> ComposeResult:
        runs = ", ".join(r.name for r in self.records)
        yield Static(f"[b]compare[/] {runs}  (overhead = call minus forward)", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield PlotextPlot(id="compare-plot")
        # compact, without the palette's key: every key fits an 80-column footer
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        # checks beside the name, so 80 columns show them; compile only when a variant compiled
        self.compiled = any(r.get("compile_status") for r in self.builder.comparison())
        self.query_one("#compare-table", DataTable).add_columns(
            "variant", "checks", "median", "IQR", "vs fastest", "overhead",
            *(["compile"] if self.compiled else []), "n", "box")
        self.fill()

    def fill(self) -> None:
        """The table (every variant; left-out ones greyed) and the plot (the others)."""
        table = self.query_one("#compare-table", DataTable)
        cursor = table.cursor_row
        table.clear()
        rows = {r["name"]: r for r in self.builder.comparison()}
        box = {name: i for i, name in enumerate(rows, 1)}
        for name in self.all_names:
            r = rows.get(name)
            if r is None:
                why = "left out (space)" if name in self.left_out else "no timed iterations"
                table.add_row(Text(name, style="dim"), Text(why, style="dim"),
                              *[""] * (len(table.columns) - 2), key=name)
                continue
            compiled = [fmt.compile_cell(r.get("compile_status"), r.get("compile_seconds"))] if self.compiled else []
            table.add_row(name, verdict_text(r["verdict"]), fmt.seconds(r["median"]), fmt.seconds(r["iqr"]),
                          fmt.ratio(r["ratio"]), fmt.seconds(r["overhead"]), *compiled, str(r["n"]),
                          str(box[name]), key=name)
        if not self.all_names:
            table.add_row("no timed iterations in these runs yet", *[""] * (len(table.columns) - 1))
        table.move_cursor(row=min(cursor, max(table.row_count - 1, 0)))
        self.draw(list(rows.values()))

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
                               [v.environment for v in variants])
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
        unit, data = boxes(list(series.values()))
        plt.box(box_labels, data, quintuples=True)
        plt.title(f"timed iterations ({unit}) by box number: box 25-75%, whiskers 5-95%"
                  + ("  (v: median vs size)" if groups else ""))
        plot.refresh()

    def draw_sweep(self, plt, groups: list[list[str]], series: dict) -> None:
        """Median vs size, one line per series, its 25th and 75th percentiles dotted."""
        variants = {n: self.builder.variants[n] for group in groups for n in group}
        described = [labels.describe({"spec": variants[g[0]].spec, "model": variants[g[0]].model},
                                     variants[g[0]].environment) for g in groups]
        common, distinct = labels.split_common(described)
        unit, scale = _unit(max(sweeps.band(series[n])[1] for n in variants))   # the highest median's unit
        all_sizes, medians, highs = [], [], []
        for k, (group, own) in enumerate(zip(groups, distinct)):
            sizes = [labels.size_of({"spec": variants[n].spec, "model": variants[n].model}) for n in group]
            bands = [sweeps.band(series[n]) for n in group]
            color = SWEEP_COLORS[k % len(SWEEP_COLORS)]
            run = group[0].split(" ", 1)[0]   # "#2"
            name = labels.text(own, skip=("size",)) or labels.text(common, skip=("size",))
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
