"""The compare view: marked runs and their variants side by side.

The variants of all compared runs are replayed into one ResultsBuilder (named
"#run variant"), so median, IQR, ratio to the fastest and coupling overhead come from
ResultsBuilder.comparison() exactly as the headless table does; the distributions are
box plots of each variant's timed iterations. `space` leaves the highlighted variant out
of the ratios and the plot (or puts it back), so any subset can be compared.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot

from couplescope.frontends import format as fmt
from couplescope.results import stats
from couplescope.results.builder import ResultsBuilder, verdict_word

from .watch import _unit


WHISKERS = (95, 75, 50, 25, 5)   # plotext's quintuple order: top whisker first
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


class CompareScreen(Screen):
    BINDINGS = [Binding("escape,c", "app.pop_screen", "back"),
                Binding("space", "toggle_variant", "leave out / put back"),
                Binding("q", "app.quit", "quit")]

    def __init__(self, records) -> None:
        super().__init__()
        self.records = list(records)
        self.left_out: set[str] = set()
        self.all_names = list(combined(self.records).variants)
        self.builder = combined(self.records)

    def compose(self) -> ComposeResult:
        runs = ", ".join(r.name for r in self.records)
        yield Static(f"[b]compare[/] {runs}  (overhead = call minus forward)", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield PlotextPlot(id="compare-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-table", DataTable).add_columns(
            "variant", "median", "IQR", "vs fastest", "overhead", "n", "checks", "box")
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
                table.add_row(Text(name, style="dim"), Text(why, style="dim"), "", "", "", "", "", "", key=name)
                continue
            check = verdict_text(r["verdict"])
            table.add_row(name, fmt.seconds(r["median"]), fmt.seconds(r["iqr"]),
                          fmt.ratio(r["ratio"]), fmt.seconds(r["overhead"]), str(r["n"]), check,
                          str(box[name]), key=name)
        if not self.all_names:
            table.add_row("no timed iterations in these runs yet", "", "", "", "", "", "", "")
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

    def draw(self, rows) -> None:
        plot = self.query_one("#compare-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        series = {r["name"]: [it["seconds"] for it in self.builder.variants[r["name"]].steps] for r in rows}
        if not series:
            plt.title("time distributions: nothing to compare yet")
            return
        unit, scale = _unit(min(stats.percentile(sorted(v), 50) for v in series.values()))
        labels = [str(i) for i in range(1, len(series) + 1)]
        # whiskers at the 5th and 95th percentiles: one 10x outlier would otherwise squash
        # every box into the bottom row
        data = []
        for values in series.values():
            ordered = sorted(values)
            data.append([stats.percentile(ordered, q) * scale for q in WHISKERS])
        plt.box(labels, data, quintuples=True)
        plt.title(f"timed iterations ({unit}) by box number: box 25-75%, whiskers 5-95%")
        plot.refresh()
