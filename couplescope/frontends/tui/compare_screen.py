"""The compare view: marked runs and their variants side by side, one task at a time.

The variants of all compared runs are replayed into one ResultsBuilder (named
"#run variant", compare_variants.py), so median, IQR, ratio to the fastest and coupling overhead come from
ResultsBuilder.comparison() exactly as the headless table does; the distributions are
box plots of each variant's timed iterations. An inference call and a training step are
different work: the view compares the variants of one task (the latest run's), says which
runs it left out and why, and `tab` compares the other task's instead. `space` leaves the
highlighted variant out of the ratios and the plot (or puts it back), so any subset can
be compared; what is left out is the app's, kept when the view is opened again (`c`).
When the variants hold a sweep (the same variant at several sizes,
couplescope.results.sweeps), the plot is median vs size with the 25th and 75th
percentiles; `v` switches between that and the boxes (the footer offers it, and the
plot's title names it, only when there is a sweep). The table's fitting and words: compare_table.py.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import DataTable, Static

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.box_rows import BoxRows, box_plot, nothing_drawn
from couplescope.frontends.tui.compare_table import (TASK_WORDS, UNIT_WORDS, alone_at_size, fit, loss_cell,
                                                      paired_lines, ranking_lines, slower_smaller, spaced, task_columns,
                                                      title_lines, verdict_text)
from couplescope.frontends.tui.compare_sweep import SweepKey, SweepPlot
from couplescope.frontends.tui.compare_variants import combined, latest_task, named, tasks
from couplescope.frontends.tui.footer import SteadyFooter
from couplescope.frontends.tui.like_ratios import (like_lines, like_ratios, own_pairs, ratio_cell, row_size,
                                                     size_cell, sizes_differ)
from couplescope.frontends.tui.name_cuts import cut_names
from couplescope.frontends.tui.row_ticks import RowTickedPlot
from couplescope.protocol.step_words import NOT_JUDGED
from couplescope.results.builder import verdict_word

TASKS = ("infer", "train")


class CompareScreen(SweepPlot, Screen):
    BINDINGS = [Binding("escape", "app.leave_compare", "back", tooltip="back to the views."),
                # the footer says what space does to the highlighted row (check_action)
                Binding("space", "leave_out", "leave out",
                        tooltip="leave the highlighted variant out of the ratios and the plot (kept when "
                                "compare is opened again)."),
                Binding("space", "put_back", "put back",
                        tooltip="on a variant left out: put it back in the ratios and the plot."),
                Binding("tab", "other_task", "task",
                        tooltip="when the compared runs hold inference and training variants: compare the "
                                "other task's (a call and a training step are different work, never "
                                "compared with each other)."),
                # the footer offers tab only where there is another task; pressed anyway, it says so
                Binding("tab", "one_task", show=False,
                        tooltip="when the compared runs hold one task only: says that there is no other "
                                "to compare (the footer does not offer tab then)."),
                Binding("v", "toggle_plot", "plot",
                        tooltip="when the variants hold a sweep (a run's variant at two or more sizes): the "
                                "plot, median against size or each variant's box."),
                Binding("v", "no_sweep", show=False,
                        tooltip="when they hold no sweep: says that there is only the box plot (the footer "
                                "does not offer v then)."),
                # in the footer as in the views (the eighth walk: q quit there, and no key said so)
                Binding("q", "app.quit", "quit", priority=True, tooltip="quit, as in the views."),
                # hides the app's c from the footer where every key would not fit (the app's acts)
                Binding("c", "compare_unshown", show=False, priority=True,
                        tooltip="draw compare again, as the views' c; left out of the footer when tab and "
                                "v are both offered in fewer than 90 columns (every key would not fit)."),
                # the plot under the table scrolls (at 80x24 a box or the axis was out of reach;
                # a sweep's plot had two rows);
                # priority: the table's own took these keys and moved nothing
                Binding("pagedown", "scroll_plot('page_down')", show=False, priority=True,
                        tooltip="scroll the plot under the table down a page, the boxes or a sweep's (the "
                                "table's highlighted row keeps its box in view, the last row the axis too)."),
                Binding("pageup", "scroll_plot('page_up')", show=False, priority=True,
                        tooltip="scroll the plot up a page."),
                Binding("end", "scroll_plot('end')", show=False, priority=True,
                        tooltip="the plot's end: its last boxes and the axis, or a sweep's axis and key."),
                Binding("home", "scroll_plot('home')", show=False, priority=True,
                        tooltip="the plot's top.")]

    def __init__(self, records, left_out: set[str] | None = None, task: str | None = None,
                 highlighted: str | None = None, drawn_again: bool = False) -> None:
        super().__init__()
        self.records = list(records)
        #: `c` on compare drew it again (opened, it says which variants start out left out)
        self.drawn_again = drawn_again
        self.filled = False   # till its first fill, on mount
        #: the variant to highlight when drawn ("#run variant": drawn again, it was the first row)
        self.highlighted = highlighted
        #: the variants left out ("#run variant"): the app's set, kept between compare screens
        self.left_out = left_out if left_out is not None else set()
        every = combined(self.records).variants
        self.tasks = tasks(self.records, named(self.records, every), every)
        present = [t for t in TASKS if t in self.tasks.values()]
        latest = latest_task(self.tasks, every)   # the latest run's that made something
        self.compared_task = task if task in present else latest
        self.plotted: list[list[str]] | None = None   # the sweep's series drawn (None: boxes)
        self.sweeps: list[list[str]] = []             # the plotted variants' sweeps (v: by size)
        self.measured = 0                             # the variants compared that made calls
        self.alone: set[str] = set()                  # those with nothing like them (no ratio)
        self.run_pairs = False                        # a run's same-round pairs among several runs
        self.sized = False                            # the variants' sizes differ: a size column
        self.boxed: list[str] = []                    # those variants, in the order of their boxes
        self._select_task()

    @property
    def by_size(self) -> bool:
        """When the variants hold a sweep: median vs size, else boxes. The app's, as the
        variants left out are: `c` drawing compare again, or opening it again, kept the
        variants left out but forgot the plot chosen with `v`."""
        return self.app.compare_by_size

    @by_size.setter
    def by_size(self, value: bool) -> None:
        self.app.compare_by_size = value

    def _select_task(self) -> None:
        """The variants of the task compared, their builder (less those left out), and the
        runs of the other task (the title names them)."""
        other = {n for n, t in self.tasks.items() if t != self.compared_task}
        self.all_names = [n for n, t in self.tasks.items() if t == self.compared_task]
        self.others = [r for r in self.records
                       if any(n.startswith(f"#{r.id} ") for n in other)
                       and not any(n.startswith(f"#{r.id} ") for n in self.all_names)]
        # the compared runs only: one run in rounds keeps its same-round pairs (combined),
        # as does one run whose variants are all that is measured once the others' are left
        # out (it kept the medians' ratios, not those `c` on it alone gives)
        compared, out = self.compared_runs(), frozenset(self.left_out | other)
        self.builder = combined(compared, out)
        measured = {r["name"].split(" ", 1)[0] for r in self.builder.comparison()}
        self.paired = len(compared) == 1 or len(measured) == 1
        if len(compared) > 1 and len(measured) == 1:
            self.builder = combined([r for r in compared if f"#{r.id}" in measured], out)
        # each run in rounds' own pairs, as `c` on it alone gives them (like_ratios)
        self.own = {} if self.paired else own_pairs(compared, out)
        #: the variants with a box to draw (made a call), left out or not: only they are numbered
        self.stepped = [n for n in self.all_names if n in {r["name"] for r in combined(compared, other).comparison()}]
        self.compiled = any(r.get("compile_status") for r in self.builder.comparison())

    def compared_runs(self) -> list:
        """The runs whose variants of the task are compared (the other task's left out)."""
        return [r for r in self.records if r not in self.others]

    def check_action(self, action: str, parameters) -> bool | None:
        """`tab` compares the other task where there is one, and says why not where not."""
        if action in ("other_task", "one_task"):
            return (len(set(self.tasks.values())) > 1) == (action == "other_task")
        if action in ("toggle_plot", "no_sweep"):
            return bool(self.sweeps) == (action == "toggle_plot")
        if action == "compare_unshown":
            return self.crowded()
        if action in ("leave_out", "put_back"):
            return (self.highlighted_name() in self.left_out) == (action == "put_back")
        return True

    def crowded(self) -> bool:
        """Whether the footer's keys would pass the screen's edge: tab and v both offered
        take 88 columns with q (the eighth walk: q quit here, and the footer did not say
        so); then the app's c, which draws compare again, is left out of it."""
        return len(set(self.tasks.values())) > 1 and bool(self.sweeps) and self.app.size.width < 90

    def action_compare_unshown(self) -> None:
        """c where the footer leaves it out (the app's priority c acts first: this is its
        stand-in, never reached while the app's is there)."""
        self.app.action_compare()

    def action_one_task(self) -> None:
        task = TASK_WORDS[self.compared_task]
        self.notify(f"tab compares the other task's variants: these runs hold {task} only", severity="warning")

    def compose(self) -> ComposeResult:
        yield Static("", id="compare-title")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True, cell_padding=0)
        yield Static("", id="compare-notes")   # why a pair is not ranked
        # the boxes scroll when there are more variants than rows; never focused (the table is)
        with VerticalScroll(id="compare-boxes", can_focus=False):
            yield BoxRows(id="box-rows")
        # the sweep's plot and its key under it (in it, it covered lines), scrolling as the
        # boxes do: at 80x24 it had what was left under ten rows of the table, two rows of
        # solid ▄ from edge to edge
        with VerticalScroll(id="compare-sweep", can_focus=False):
            yield RowTickedPlot(id="compare-plot")
            yield SweepKey(id="compare-legend")
        # compact, without the palette's key: every key fits an 80-column footer
        yield SteadyFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.fill()
        self.say_left_out_before()
        self.filled = True   # (app.screen is this screen from its push, before it is filled)

    def say_left_out_before(self) -> None:
        """Opened with variants left out (the app's set, kept from an earlier compare): a
        toast says which and why (the eighth walk: `#2 direct-torchscript  left out` in a
        compare of other runs, nothing saying why it started out so)."""
        out = [self.display_name(n) for n in self.all_names if n in self.left_out]
        if out and not self.drawn_again:
            them = "it" if len(out) == 1 else "them"
            self.notify(f"left out in an earlier compare: {', '.join(out)} (space on its row puts {them} back)",
                        timeout=8)

    def on_resize(self) -> None:
        self.fill()
        self.refresh_bindings()   # (crowded: the footer's c)

    def columns(self) -> list[str]:
        """box first: the plot is labelled by it, and it must never be cut off; checks beside
        the name; the ratio where there is something to compare with (a lone variant's
        1.00x took the room its name needed); the task's own columns; n last. A size column
        where the variants' sizes differ (the names need not say it)."""
        return ["box", "variant", *(["size"] if self.sized else []), "checks", "median", "IQR",
                *([self.ratio_label()] if self.ranks() else []), *task_columns(self.compared_task), *(["compile"] if self.compiled else []), "n"]

    def ratio_label(self) -> str:
        """`vs fastest` over the several runs' ratios of the medians (to the fastest of its
        model and size, like_ratios.py); `ratio` over one run's, which are to its baseline box from same-round pairs
        (the line under the table says to which): `vs fastest` stood over box 2's `1.00x`
        at 10.9 µs beside box 1's 6.6 µs, each the baseline at its size. `ratio` too where a
        run's pairs (`*`) stand among them."""
        return "ratio" if self.paired or self.run_pairs else "vs fastest"

    def ranks(self) -> bool:
        """Whether the table has two measured variants or more to compare (their ratio
        column): one measured beside others that made no call read `1.00x`, a ratio to
        itself."""
        return self.measured > 1

    def task_cells(self, r: dict) -> list[str]:
        if self.compared_task == "train":
            return [fmt.seconds(r.get("backward")), loss_cell(r.get("last_loss"))]
        return [fmt.seconds(r["overhead"])]

    def fill(self) -> None:
        """The title, the table (every variant of the task; left-out ones greyed) and the
        plot (the others). Every column fits the screen (compare_table.fit): one space
        between columns (DataTable's padding is two), a variant's name without the run's
        `#1 ` when one run is compared (the title names it), and the names cut when the
        columns would not fit otherwise."""
        table = self.query_one("#compare-table", DataTable)
        cursor = table.cursor_row
        rows = {r["name"]: r for r in self.builder.comparison()}
        self.measured = len(rows)
        # like with like: a run in rounds' same-round pairs, else the fastest of its model and size
        alike = like_ratios(list(rows.values()), self.builder.variants, self.own)
        self.run_pairs = any(r.get("pairs") for r in rows.values())   # (ratio_label)
        self.alone = (alone_at_size(list(rows.values())) if self.paired else set()) | alike
        self.sized = sizes_differ(self.all_names, self.builder.variants)
        self.boxed = list(rows)   # the variants with a box, in the plot's order
        columns = self.columns()
        box = self.box_numbers(rows)
        shown = [self.display_name(name) for name in self.all_names]
        width = self.table_width(table, len(shown) + 1)
        fitted = fit(columns, [[spaced(c) for c in line] for line in self.lines(columns, rows, box, shown)], width)
        compared = self.compared_runs()
        if fitted.name_width:   # a name's start its run's title says may go (the title line names it)
            one_run = not shown or not shown[0].startswith("#")
            shown = cut_names(shown, fitted.name_width,
                              {"" if one_run else f"#{r.id} ": r.title for r in compared})
        lines = [[spaced(cell) for cell in line] for line in self.lines(columns, rows, box, shown)]
        title = title_lines(compared, self.compared_task, self.others, self.app.size.width - 2, fitted.scrolls, [r for r in self.records if not r.measured()])
        self.query_one("#compare-title", Static).update(Text("\n".join(title)))
        notes = ranking_lines(list(rows.values()), box, None if self.paired else self.runs_alone())
        if self.ranks():
            notes = ((paired_lines(list(rows.values()), box, self.app.size.width - 2) if self.paired else [])
                     + like_lines([r for r in rows.values() if "baseline" not in r or r.get("pairs")], alike, box)
                     + slower_smaller(list(rows.values()), box, self.app.size.width - 2) + notes)
        self.query_one("#compare-notes", Static).update(Text("\n".join(notes)))
        self.query_one("#compare-notes", Static).display = bool(notes)
        table.clear(columns=True)
        # every width given: DataTable measures the others when it is next idle and does not
        # drop the lines it drew before that, so a table filled on mount showed its columns
        # as wide as their labels (names cut to "simplen") until something restyled it
        for key, label, natural in zip(columns, fitted.labels, fitted.widths):
            table.add_column(spaced(label), key=key, width=natural)
        for key, line in zip([*self.all_names, None], lines):
            table.add_row(*line, key=key, height=1)
        if self.highlighted in self.all_names:
            cursor = self.all_names.index(self.highlighted)
        self.highlighted = None
        table.move_cursor(row=min(cursor, max(table.row_count - 1, 0)))
        self.draw(list(rows.values()))

    def box_numbers(self, rows) -> dict[str, int]:
        """Each boxed variant's number: its place among the variants that made a call, kept
        while others are left out and put back (box 2 became 1 when row 1 was left out:
        `cannot rank 1 vs 2` named another pair). A row that made no call has no number and
        takes none (the eleventh walk: a stopped run's rows between read 4 then 9, and the
        plot's rows 4 and 9 stood together)."""
        return {name: self.stepped.index(name) + 1 for name in rows}

    def highlighted_name(self) -> str | None:
        """The variant the table highlights ("#run variant"), if any."""
        row = self.query_one("#compare-table", DataTable).cursor_row
        return self.all_names[row] if 0 <= row < len(self.all_names) else None

    @on(DataTable.RowHighlighted, "#compare-table")
    def keep_box_in_view(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted row's box on the screen (the plot scrolls under the table: at
        80x24 the eighth box and the axis were out of reach of every key); the first row's
        with the plot's key over it, the last one's with the axis under it."""
        rows = self.boxed
        name = self.all_names[event.cursor_row] if event.cursor_row < len(self.all_names) else None
        if name not in rows or self.plotted is not None:
            return
        line = rows.index(name) + 1                    # the plot's title is its line 0
        top = 0 if line == 1 else line
        bottom = line + (2 if line == len(rows) else 0)
        self.query_one("#compare-boxes").scroll_to_region(Region(0, top, 1, bottom - top + 1), animate=False,
                                                          immediate=True)

    def action_scroll_plot(self, how: str) -> None:
        """Scroll the plot shown: the boxes, or the sweep's."""
        shown = "#compare-sweep" if self.plotted is not None else "#compare-boxes"
        getattr(self.query_one(shown), f"scroll_{how}")(animate=False)

    def table_width(self, table: DataTable, lines: int) -> int:
        """The columns the table's cells have: the screen's, less its scroll bar when its
        `lines` (the header's included) are more than it shows. Two columns were kept back
        for a scroll bar that was not there: a table that fitted said it scrolled sideways
        and cut names that fitted."""
        shows = table.styles.max_height.resolve(self.app.size, self.app.size) if table.styles.max_height else lines
        # and a blank column before the bar (the twelfth walk: `1 000▄`, as Watch's table)
        return self.app.size.width - (table.styles.scrollbar_size_vertical + 1 if lines > shows else 0)

    def runs_alone(self) -> dict:
        """Each compared run in rounds: its own rows (its same-round pairs, as `c` on it
        alone compares them), by run ("#1")."""
        alone: dict[str, list[dict]] = {}
        for name, row in self.own.items():
            alone.setdefault(name.split(" ", 1)[0], []).append(row)
        return alone

    def checks_cell(self, name: str, row: dict) -> Text:
        """PASSED, or `not judged` where a training variant's learning task had too few
        steps, as History says (its compare rows said PASSED beside History's not judged)."""
        word = verdict_word(row["verdict"])
        variant = self.builder.variants.get(name)
        if word == "PASSED" and variant is not None and variant.learning_not_judged():
            return Text(NOT_JUDGED, style="bold yellow")
        return verdict_text(word)

    def lines(self, columns, rows: dict, box: dict, shown: list[str]) -> list[tuple]:
        """The table's cells, a line per variant (or one saying there is nothing yet)."""
        lines = []
        for name, display in zip(self.all_names, shown):
            r = rows.get(name)
            if r is None:
                why = "left out" if name in self.left_out else f"no {UNIT_WORDS[self.compared_task]}s"
                sized = [row_size(name, self.builder, self.records)] if self.sized else []
                lines.append(("", Text(display, style="dim"), *sized, Text(why, style="dim"),
                              *[""] * (len(columns) - 3 - len(sized))))
                continue
            compiled = [fmt.compile_cell(r.get("compile_status"), r.get("compile_seconds"))] if self.compiled else []
            lines.append((str(box[name]), display, *([size_cell(self.builder.variants[name])] if self.sized else []),
                          self.checks_cell(name, r), fmt.seconds(r["median"]),
                          fmt.seconds(r["iqr"]), *([ratio_cell(r, self.alone)] if self.ranks() else []),
                          *self.task_cells(r), *compiled,
                          fmt.thousands(r["n"])))
        if not self.all_names:
            lines.append(("", f"no timed {UNIT_WORDS[self.compared_task]}s in these runs yet",
                          *[""] * (len(columns) - 2)))
        return lines

    def display_name(self, name: str) -> str:
        """"#1 simplenet-torchscript" as the table shows it: without "#1 " when one run is
        compared (the names results.json and the headless table use)."""
        one_run = len({n.split(" ", 1)[0] for n in self.all_names}) == 1
        return name.split(" ", 1)[1] if one_run and " " in name else name

    def action_leave_out(self) -> None:
        """Leave the highlighted variant out of the ratios and the plot."""
        self._toggle_variant()

    action_put_back = action_leave_out   # the variant left out, put back

    def _toggle_variant(self) -> None:
        table = self.query_one("#compare-table", DataTable)
        if not self.all_names or not table.row_count:
            return
        name = self.all_names[table.cursor_row]
        self.left_out ^= {name}
        self._select_task()
        self.fill()
        self.refresh_bindings()   # the footer: put back on the row left out, leave out on one put back

    @on(DataTable.RowHighlighted, "#compare-table")
    def footer_follows_row(self) -> None:
        """space's word in the footer, for the row now highlighted (leave out, put back)."""
        self.refresh_bindings()

    def action_other_task(self) -> None:
        """Compare the other task's variants (the runs of the task not shown)."""
        tasks = [t for t in TASKS if t in self.tasks.values()]
        if len(tasks) < 2:
            return
        self.compared_task = tasks[(tasks.index(self.compared_task) + 1) % len(tasks)]
        # said at once, drawn after (the twelfth walk: 7 s on a busy machine, the key looking dead)
        runs = ", ".join(f"#{r.id}" for r in self.records)
        self.query_one("#compare-title", Static).update(f"comparing {runs}: {TASK_WORDS[self.compared_task]} ...")
        self.call_after_refresh(self._show_task)

    def _show_task(self) -> None:
        """The task chosen with tab, drawn: its variants, their table and plot."""
        self._select_task()
        self.query_one("#compare-table", DataTable).move_cursor(row=0)
        self.fill()
        self.refresh_bindings()

    def action_no_sweep(self) -> None:
        self.notify("no sweep here: median vs size needs a run with a variant at two or more sizes",
                    severity="warning")

    def action_toggle_plot(self) -> None:
        self.by_size = not self.by_size
        self.draw(self.builder.comparison())

    def draw(self, rows) -> None:
        """The boxes (a row each, box_rows.py), or a sweep's medians against size (plotext)."""
        plot = self.query_one("#compare-plot", RowTickedPlot)
        boxes = self.query_one("#compare-boxes")
        sweep = self.query_one("#compare-sweep")
        series = {r["name"]: [it["seconds"] for it in self.builder.variants[r["name"]].steps] for r in rows}
        groups = self._sweep_groups(list(series)) if series else []
        offered = bool(self.sweeps)
        self.sweeps = groups
        if bool(groups) != offered:
            self.refresh_bindings()          # v in the footer only where it acts
        self.plotted = groups if groups and self.by_size else None
        sweep.display = self.plotted is not None
        boxes.display = self.plotted is None
        if self.plotted:
            plt = plot.plt
            plt.clear_data()
            plt.clear_figure()
            self.draw_sweep(plt, groups, series)
            plot.refresh()
            return
        if not series:
            out = sum(n in self.left_out for n in self.all_names)
            self.query_one(BoxRows).say(nothing_drawn(out, len(self.all_names), UNIT_WORDS[self.compared_task]))
            return
        box = self.box_numbers(series)
        self.query_one(BoxRows).show(box_plot(list(series.values())), [str(box[n]) for n in series],
                                     " (v: vs size)" if groups else "", f"{UNIT_WORDS[self.compared_task]}s")
