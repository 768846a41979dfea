"""The Watch view: the variant being measured, as it runs (widgets: tui/watch_widgets.py)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from couplescope.frontends.tui.telemetry_panel import WORDS, TelemetryPanel
from couplescope.frontends.tui.top_line import fitting
from couplescope.frontends.tui.views.base import AppView
from couplescope.frontends.tui.iterations_table import (TABLE_HEADER, IterationsTable, number_digits, table_header,
                                                        table_width)
from couplescope.frontends.tui.stats_panel import StatsPanel
from couplescope.frontends.tui.watch_widgets import PlotLegend, TimePlot, calls_done, progress_shown

#: the iterations table's box, as app.tcss makes it: wider only for rows that need more
TABLE_BOX_WIDTH = 44


class WatchView(AppView):
    """Statistics, progress, the time plot and the latest iterations of the shown run's
    current variant; the telemetry panel beside them on a wide terminal.

    One source for every figure: the run's record (its ResultsBuilder, and `current`, the
    variant the latest event was about). Each redraw draws all of them from it at once, so
    the status line's round, the statistics, the progress, the table and the plot always
    name the same variant and the same calls: the figures are redrawn together, at the
    plot's rate (the plot once redrew once a second and the rest twice, so a frame could
    show the statistics a second of calls ahead of the plot). A run in rounds switches variants several
    times a second (a round of a fast model takes milliseconds): the view follows the
    variant current at each redraw, never one per event (it drew each switch's empty plot
    at once, then waited a second to draw its calls, by when the next switch had emptied
    it again: the plot stayed empty until the last round).

    Redrawn once a second, the plot's rate (plotext costs tens of milliseconds a plot), and
    at once at an end or a stop, and when the variant shown makes its first calls (the count
    read `0/313 calls` till the next second): every redraw is CPU taken from the cores the
    worker is measured on (benchmarks/ui_perturbation.py). The figures come from the events
    the app has handled: a count behind the worker by more than a redraw is the app's loop
    behind on its events (on a loaded machine), which no redraw can show sooner."""

    key, title = "w", "Watch"
    focus_on = "#iteration-table"
    follows = frozenset({"run_started", "round_started", "iteration", "variant_finished", "variant_failed",
                         "telemetry"})
    redraw_seconds = 1.0
    help = """\
per-iteration time of the running variant with one line per phase (marshal in: the
simulation's arrays made into tensors; host to device; forward; device to host; marshal
out: the output written back), the latest iterations with PASSED/FAILED (the output
checked against a reference) and the maximum relative error, numbered as the plot's axis
counts calls (every kind in one sequence: `14 prof` is point 14), progress, and median, IQR
(the spread of the middle half), min and max of the timed iterations; `noisy`: the IQR is
over a tenth of the median. `204/204 calls = 200 timed + 1 warm-up + 3 profiled` counts
every call (all are checked); only the timed ones enter the statistics (`n=200 timed`).
In a narrow terminal the legend shortens the phases: `m_in` marshal in, `fwd` forward,
`m_out` marshal out. A call above the plot's scale (a slow warm-up) is marked on its top
edge, its time after an arrow in the legend: `x warm-up ↑114.3 ms`. A run in rounds (`--rounds`) measures each variant in turns: the
view follows the variant measuring now, with all its calls so far. A training run
(`--task train`) makes steps: zero_grad, forward, the loss, backward and the optimizer's
step are its phases (`zero`, `bwd` when short), the table shows each step's loss, and
the statistics the first and latest loss; when a variant ends, its `[training]` verdict
says whether the model learnt its task, with the learned output (SimpleNet: input 1..5
gives 5 1 2 3 4)."""

    def compose(self) -> ComposeResult:
        yield StatsPanel(id="stats")
        yield ProgressBar(id="progress", show_eta=False, total=1)
        with Horizontal(id="watch-body"):
            with Vertical(id="plot-box"):
                yield TimePlot(id="plot")
                yield PlotLegend(id="plot-legend")
            with Vertical(id="iterations-box"):
                yield Static(TABLE_HEADER, id="iterations-header")
                yield IterationsTable(id="iteration-table")
            yield TelemetryPanel(id="watch-telemetry", classes="telemetry")

    def on_mount(self) -> None:
        # (AppView.on_mount runs too: Textual calls every class's own on_mount, so calling
        # it here as well started a second redraw timer: every redraw twice)
        self._dirty = False         # statistics and progress to redraw
        self._drawn = 0             # the calls of the shown variant the last redraw drew
        self._samples: dict = {}    # the latest telemetry sample per node, not drawn yet
        self._shown: str | None = None   # the variant whose calls the plot and table hold
        self._round: str | None = None   # what the status line says of the rounds
        self.query_one(StatsPanel).show(None, None)

    def form_changed(self) -> None:
        """No run yet: the statistics say what r would do, as r would answer."""
        if self.app.shown is None:
            self.query_one(StatsPanel).waiting(self.app.no_run_words())

    def run_started(self, record) -> None:
        self._shown = self._round = None
        self._drawn = 0
        self.query_one(TimePlot).say(f"run #{record.id} starting")
        self.query_one(IterationsTable).clear_rows()
        self.query_one(StatsPanel).plan(record)   # its lines, from the run's widest words
        # never indeterminate: that bar animates at 15 frames a second (CPU the worker needs)
        self.query_one(ProgressBar).update(total=1, progress=0)
        training = all(spec.task == "train" for spec in record.specs)
        self._table_for(training, max(record.expected(spec.label) or 0 for spec in record.specs))
        variants = f"{len(record.specs)} variants" if len(record.specs) > 1 else record.specs[0].label
        self.query_one(StatsPanel).waiting(f"{record.name}: starting {variants} (worker, model); "
                                           "the line at the top says what it is doing")

    def follow(self, record, events: list[dict]) -> None:
        if record is not self.app.shown:
            return
        kind = events[0]["event"]
        if kind == "iteration":
            # the shown variant's calls are added as they come; another variant's are in the
            # record already, and the next redraw switches to it with all of them
            if events[-1].get("variant") == self._shown:
                self.query_one(TimePlot).add(events)
                self.query_one(IterationsTable).add_iterations(events)
            self._dirty = True
            if not self._drawn and events[-1].get("variant") == record.watched():
                # its first calls at once: `0/313 calls` stood beside a variant measuring
                # till the next redraw (two seconds on a loaded machine: the fourteenth
                # walk); once a variant, and a switch to another comes only with a redraw
                self.redraw(force=True)
        elif kind == "telemetry":
            for ev in events:   # a multi-node job's nodes each send their own
                self._samples[ev.get("node")] = (ev.get("sample") or {}, WORDS[record.unit(ev.get("variant"))])
        elif kind in ("run_started", "round_started"):   # a variant starts, or takes its turn
            self._dirty = True
        else:                         # a variant ended: its final state at once
            self._dirty = True
            self.redraw(force=True)

    def _switch(self, record, name: str) -> None:
        """Show `name`: its calls so far, from the record, in the plot and the table (a
        variant's first round has none yet: its worker is starting; the plot says so)."""
        variant = record.builder.variants.get(name)
        calls = variant.iterations if variant is not None else []
        # the request's spec: a variant's own comes with its run_started, after its first
        # round has begun (the header said "max rel err" over a training variant till then)
        training = any(spec.label == name and spec.task == "train" for spec in record.specs)
        self._table_for(training, record.expected(name))
        self._shown = name
        self.query_one(TimePlot).reset(name, calls, training)
        self.query_one(IterationsTable).add_variant(name)
        self.query_one(IterationsTable).add_iterations(calls)

    def _table_for(self, training: bool, calls: int | None) -> None:
        """The iterations table's header and number column for a variant of `calls` calls
        (its numbers count every call, as the plot does): wide enough for its largest."""
        digits = number_digits(calls)
        self.query_one("#iterations-header", Static).update(table_header(training, digits))
        self.query_one(IterationsTable).digits = digits
        self.query_one(IterationsTable).unit = "steps" if training else "calls"
        needed = table_width(digits)
        self.query_one("#iterations-box").styles.width = needed if needed > TABLE_BOX_WIDTH else None

    def run_ended(self, record) -> None:
        self._dirty = True
        self.redraw(force=True)       # its last sample is drawn before the panel goes idle
        if record is self.app.shown and not record.measured():
            if record.status == "stopped":
                # how it ended (it read "the log (t) says why", and the log gave no reason;
                # or, in rounds, the first variant's "STOPPED no checks yet"), in a line: it
                # said the top line's words again, wrapped at 80 columns; what r does next
                # is the top line's
                panel = self.query_one(StatsPanel)
                ended = f"{record.stopped_words()} before {record.first_call()}: nothing measured"
                panel.waiting(fitting(record.untitled(f"{record.name} {ended}"),
                                      panel.size.width or self.app.size.width - 2))
            elif record.current is None:   # failed before any variant reported: the log has it
                self.query_one(StatsPanel).waiting(
                    f"{record.name} failed before any variant reported: the log (t) says why")
            ended = {"error": "failed"}.get(record.status, record.status)
            self.query_one(TimePlot).say(f"run #{record.id} {ended}: nothing measured")
        self.query_one(TelemetryPanel).idle(record.name)

    def run_changed(self, record) -> None:
        """Its stop began (`s`): the variant shown says "stopping" at once; before any
        variant reported, the run is said to be stopping, as the top line says (it said
        `starting simplenet-torchscript-2 (worker, model)` beside `stopping #1 ...`, and a
        variant not started will not start: the fourteenth walk)."""
        if record is not self.app.shown:
            return
        self._dirty = True
        self.redraw(force=True)
        if record.stopping and record.watched() is None:
            panel = self.query_one(StatsPanel)
            variants = f"{len(record.specs)} variants" if len(record.specs) > 1 else record.specs[0].label
            before = f"stopping {record.name} before {record.first_call()}"
            panel.waiting(fitting(record.untitled(f"{before}: {variants} will not start", before),
                                  panel.size.width or self.app.size.width - 2))
            self.query_one(TimePlot).say(f"run #{record.id} stopping")

    def redraw(self, force: bool = False) -> None:
        record = self.app.shown
        name = record.watched() if record is not None else None
        switched = name is not None and name != self._shown
        if switched:
            self._switch(record, name)
        if self._samples:
            samples, self._samples = self._samples, {}
            for node, (sample, unit) in samples.items():
                self.query_one(TelemetryPanel).show(sample, node, unit)
        plot = self.query_one(TimePlot)
        plot.draw(force=True)   # the figures together, all from what the record holds now
        self.query_one(IterationsTable).flush()
        if (self._dirty or switched) and name:
            self._dirty = False
            variant = record.builder.variants.get(name)
            expected = record.expected(name)
            done = self._drawn = sum(calls_done(variant).values()) if variant is not None else 0
            self.query_one(ProgressBar).update(total=expected or 1, progress=progress_shown(done, expected or 1))
            self.query_one(StatsPanel).show(variant, expected, record.spec_of(name),
                                            stopping=record.stopping and record is self.app.active)
            if variant is not None and variant.verdict == "stopped" and not variant.calls.count:
                plot.say(f"{name} stopped: nothing measured")
            self._name_round(record, variant)

    def _name_round(self, record, variant) -> None:
        """A run in rounds: the status line names the round of the variant shown, when it
        changes (the app's status line, written here so that it names what the view shows):
        `round 2/5: <variant>`, then `rounds done: <variant>: finishing` (its profiled calls,
        its trace), then `rounds done: <variant>: finished` while the others finish."""
        rounds = record.builder.rounds
        if not rounds or variant is None or variant.round is None:
            return
        if variant.status != "running":
            where = f"rounds done: {variant.name}: {variant.status}"
        elif variant.round_finished == rounds["rounds"]:
            where = f"rounds done: {variant.name}: finishing"
        else:
            where = f"round {variant.round}/{rounds['rounds']}: {variant.name}"
        if record is not self.app.active or record.stopping or self._round == where:
            return
        self._round = where
        self.app.set_status(record.untitled(f"{record.name}: {where}"), progress=True)

    def on_time_plot_legend_changed(self, msg: TimePlot.LegendChanged) -> None:
        self.query_one(PlotLegend).show(msg.items)


VIEW = WatchView
