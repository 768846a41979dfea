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

import os

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.box_rows import BoxRows, box_plot
from couplescope.frontends.tui.footer import SteadyFooter
from couplescope.frontends.tui.watch_widgets import _unit
from couplescope.results import labels, sweeps
from couplescope.results.builder import ResultsBuilder, verdict_word

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
    """One builder holding every variant of `records` as "#run variant", minus `left_out`.
    One run in rounds keeps its rounds, so its ratios are its same-round pairs, leaving
    out the disturbed rounds as the headless table does (couplescope.results.paired);
    several runs are not paired (round 2 of one run and round 2 of another ran at
    different times): their ratios are the medians' ratios to the fastest."""
    builder = ResultsBuilder("compare")
    several = len(records) > 1
    for record in records:
        for ev in record.events:
            if several and ev.get("event") == "rounds_planned":
                continue
            if ev.get("variant"):
                name = f"#{record.id} {ev['variant']}"
                if name in left_out:
                    continue
                ev = {**ev, "variant": name}
            builder.on_event(ev)
    return builder


def ratio_cell(row: dict) -> str:
    """The ratio, or "cannot rank" where a run in rounds had too few undisturbed rounds."""
    return "cannot rank" if row.get("cannot_rank") else fmt.ratio(row["ratio"])


def cut_name(name: str, width: int, head: int | None = None) -> str:
    """A name in `width` columns: whole, or `head` characters of its start and the rest of
    its end around an ellipsis (never wrapped mid-word)."""
    if len(name) <= width:
        return name
    if width < 2:
        return "…"[:width]
    head = (width - 1) // 2 if head is None else min(head, width - 1)
    tail = width - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


def common_prefix(names: list[str]) -> str:
    """The start every name shares, up to a separator ("simplenet-" of simplenet-aoti-2 and
    simplenet-torchscript-2), when at least two names are compared."""
    if len(names) < 2:
        return ""
    shared = os.path.commonprefix(names)
    return shared[:max(shared.rfind("-"), shared.rfind(" ")) + 1]


def cut_names(names: list[str], width: int) -> dict[str, str]:
    """Every name in `width` columns, told apart where cutting allows: the start all of them
    share goes first (an ellipsis stands for it: the title names the run and its model),
    then each is cut in its middle where that leaves the most of them distinct (the ends
    tell variants apart: -python-host, -12; the starts: bridge-, aoti-)."""
    if all(len(n) <= width for n in names):
        return {n: n for n in names}
    prefix = common_prefix(names)
    short = {n: ("…" + n[len(prefix):]) if prefix else n for n in names}
    balanced = (width - 1) // 2

    def cut(head: int) -> dict[str, str]:
        return {n: cut_name(s, width, head) for n, s in short.items()}

    best = max(range(width), key=lambda h: (len(set(cut(h).values())), -abs(h - balanced)))
    return cut(best)


def task_columns(rows) -> list[str]:
    """The columns that fit what the variants did: an inference call's coupling overhead
    (call minus forward); a training step's backward and where its loss ended."""
    tasks = {r.get("task", "infer") for r in rows} or {"infer"}
    return [*(["overhead"] if "infer" in tasks else []), *(["backward", "loss"] if "train" in tasks else [])]


def task_note(columns: list[str]) -> str:
    """What the title says of those columns."""
    notes = [*(["overhead = call minus forward"] if "overhead" in columns else []),
             *(["training steps: backward's median, the last loss"] if "loss" in columns else [])]
    return f"  ({'; '.join(notes)})" if notes else ""


class CompareScreen(Screen):
    BINDINGS = [Binding("escape,c", "app.pop_screen", "back", tooltip="back to the views."),
                Binding("space", "toggle_variant", "leave out/in",
                        tooltip="leave the highlighted variant out of the ratios and the plot, or put it back."),
                Binding("v", "toggle_plot", "median vs size / boxes", show=False,
                        tooltip="the plot: median against size (a sweep's variants) or each variant's box."),
                Binding("q", "app.quit", "quit", tooltip="quit, as in the views.")]

    def __init__(self, records) -> None:
        super().__init__()
        self.records = list(records)
        self.left_out: set[str] = set()
        self.all_names = list(combined(self.records).variants)
        self.builder = combined(self.records)
        rows = self.builder.comparison()
        # compile only when a variant compiled; the task's columns for every variant compared
        self.compiled = any(r.get("compile_status") for r in rows)
        self.task_columns = task_columns(rows)
        self.by_size = True   # when the variants hold a sweep: median vs size, else boxes
        self.plotted: list[list[str]] | None = None   # the sweep's series drawn (None: boxes)

    def compose(self) -> ComposeResult:
        runs = ", ".join(r.name for r in self.records)
        yield Static(f"[b]compare[/] {escape(runs)}{task_note(self.task_columns)}", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
        # the boxes scroll when there are more variants than rows; never focused (the table is)
        with VerticalScroll(id="compare-boxes", can_focus=False):
            yield BoxRows(id="box-rows")
        yield PlotextPlot(id="compare-plot")
        # compact, without the palette's key: every key fits an 80-column footer
        yield SteadyFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.fill()

    def on_resize(self) -> None:
        self.fill()

    def columns(self) -> list[str]:
        """box first: the plot is labelled by it, and it must never be cut off; checks beside
        the name; the task's own columns; n last."""
        return ["box", "variant", "checks", "median", "IQR", "vs fastest", *self.task_columns,
                *(["compile"] if self.compiled else []), "n"]

    def task_cells(self, r: dict) -> list[str]:
        cells = {"overhead": fmt.seconds(r["overhead"]) if r.get("task") != "train" else "-",
                 "backward": fmt.seconds(r.get("backward")) if r.get("task") == "train" else "-",
                 "loss": fmt.sci(r.get("last_loss")) if r.get("task") == "train" else "-"}
        return [cells[c] for c in self.task_columns]

    def fill(self) -> None:
        """The table (every variant; left-out ones greyed) and the plot (the others).

        Every column fits the screen: one space between columns (DataTable's padding is two),
        a variant's name without the run's `#1 ` when one run is compared (the title names
        it), and when the names would still push the last columns off the screen (80 columns,
        long names) the variant column takes what is left and a longer name is cut in its
        middle with an ellipsis (never wrapped: a name broken mid-word read as two)."""
        table = self.query_one("#compare-table", DataTable)
        cursor = table.cursor_row
        columns = self.columns()
        rows = {r["name"]: r for r in self.builder.comparison()}
        box = {name: i for i, name in enumerate(rows, 1)}
        shown = {name: self.display_name(name) for name in self.all_names}
        widths = self.column_widths(columns, [[spaced(cell) for cell in line]
                                              for line in self.lines(columns, rows, box, shown)])
        width = self.variant_width(columns, widths)
        if width:
            shown = dict(zip(shown, cut_names(list(shown.values()), width - 1).values()))
            widths[columns.index("variant")] = width
        lines = [[spaced(cell) for cell in line] for line in self.lines(columns, rows, box, shown)]
        table.clear(columns=True)
        # every width given: DataTable measures the others when it is next idle and does not
        # drop the lines it drew before that, so a table filled on mount showed its columns
        # as wide as their labels (names cut to "simplen") until something restyled it
        for label, natural in zip(columns, widths):
            table.add_column(spaced(label), key=label, width=natural)
        for key, line in zip([*self.all_names, None], lines):
            table.add_row(*line, key=key, height=1)
        table.move_cursor(row=min(cursor, max(table.row_count - 1, 0)))
        self.draw(list(rows.values()))

    def lines(self, columns, rows: dict, box: dict, shown: dict) -> list[tuple]:
        """The table's cells, a line per variant (or one saying there is nothing yet)."""
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
                          fmt.seconds(r["iqr"]), ratio_cell(r), *self.task_cells(r), *compiled,
                          str(r["n"])))
        if not self.all_names:
            lines.append(("", "no timed iterations in these runs yet", *[""] * (len(columns) - 2)))
        return lines

    def display_name(self, name: str) -> str:
        """"#1 simplenet-torchscript" as the table shows it: without "#1 " when one run is
        compared (the names results.json and the headless table use)."""
        return name.split(" ", 1)[1] if len(self.records) == 1 and " " in name else name

    @staticmethod
    def column_widths(columns: list[str], lines) -> list[int]:
        """Each column as wide as its label (with its space) or its widest cell."""
        return [max([len(label) + 1, *(line[i].cell_len for line in lines)]) for i, label in enumerate(columns)]

    def variant_width(self, columns: list[str], widths: list[int]) -> int | None:
        """The variant column's width when the names must be cut for every column to fit
        the screen, else None (as wide as the longest name)."""
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
        """The boxes (a row each, box_rows.py), or a sweep's medians against size (plotext)."""
        plot = self.query_one("#compare-plot", PlotextPlot)
        boxes = self.query_one("#compare-boxes")
        series = {r["name"]: [it["seconds"] for it in self.builder.variants[r["name"]].steps] for r in rows}
        groups = self._sweep_groups(list(series)) if series else []
        self.plotted = groups if groups and self.by_size else None
        plot.display = self.plotted is not None
        boxes.display = self.plotted is None
        if self.plotted:
            plt = plot.plt
            plt.clear_data()
            plt.clear_figure()
            self.draw_sweep(plt, groups, series)
            plot.refresh()
            return
        if not series:
            self.query_one(BoxRows).update("time distributions: nothing to compare yet")
            return
        self.query_one(BoxRows).show(box_plot(list(series.values())), [str(i) for i in range(1, len(series) + 1)],
                                     " (v: vs size)" if groups else "")

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
