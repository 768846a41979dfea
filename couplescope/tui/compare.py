"""The compare view: marked runs and their variants side by side.

The variants of all compared runs are replayed into one ResultsBuilder (named
"#run variant"), so median, IQR, ratio to the fastest and coupling overhead come from
ResultsBuilder.comparison() exactly as the headless table does; the distributions are
box plots of each variant's timed iterations.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot

from couplescope import stats
from couplescope.results import ResultsBuilder

from .watch import _unit


WHISKERS = (95, 75, 50, 25, 5)   # plotext's quintuple order: top whisker first


def combined(records) -> ResultsBuilder:
    builder = ResultsBuilder("compare")
    for record in records:
        for ev in record.builder_events():
            if ev.get("variant"):
                ev = {**ev, "variant": f"#{record.id} {ev['variant']}"}
            builder.on_event(ev)
    return builder


class CompareScreen(Screen):
    BINDINGS = [Binding("escape,c", "app.pop_screen", "back"),
                Binding("q", "app.quit", "quit")]

    def __init__(self, records) -> None:
        super().__init__()
        self.records = list(records)
        self.builder = combined(self.records)

    def compose(self) -> ComposeResult:
        runs = ", ".join(r.name for r in self.records)
        yield Static(f"[b]compare[/] {runs}  (overhead = call minus forward)", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield PlotextPlot(id="compare-plot")
        yield Footer()

    def on_mount(self) -> None:
        numbers = self.app.numbers
        table = self.query_one("#compare-table", DataTable)
        table.add_columns("variant", "median", "IQR", "vs fastest", "overhead", "n", "checks", "box")
        rows = self.builder.comparison()
        for i, r in enumerate(rows, 1):
            check = Text("PASSED", style="bold green") if r["passed"] else Text("FAILED", style="bold red")
            table.add_row(r["name"], numbers.seconds(r["median"]), numbers.seconds(r["iqr"]),
                          numbers.ratio(r["ratio"]), numbers.seconds(r["overhead"]), str(r["n"]), check, str(i))
        if not rows:
            table.add_row("no timed iterations in these runs yet", "", "", "", "", "", "", "")
        self.draw(rows)

    def draw(self, rows) -> None:
        plot = self.query_one("#compare-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        series = {r["name"]: [it["seconds"] for it in self.builder.variants[r["name"]].timed] for r in rows}
        if not series:
            plt.title("time distributions: nothing to compare yet")
            return
        unit, scale = _unit(min(stats.percentile(sorted(v), 50) for v in series.values()))
        labels = [str(i) for i in range(1, len(series) + 1)]
        # whiskers at the 5th and 95th percentiles: one 10x outlier would otherwise squash
        # every box into the bottom row
        if self.app.numbers.redact:
            data = [[3.0, 2.5, 2.0, 1.5, 1.0] for _ in series]
            plt.yticks([])
        else:
            data = []
            for values in series.values():
                ordered = sorted(values)
                data.append([stats.percentile(ordered, q) * scale for q in WHISKERS])
        plt.box(labels, data, quintuples=True)
        unit = "redacted" if self.app.numbers.redact else unit
        plt.title(f"timed iterations ({unit}) by box number: box 25-75%, whiskers 5-95%")
        plot.refresh()
