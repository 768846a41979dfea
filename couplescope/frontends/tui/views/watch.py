"""The Watch view: the variant being measured, as it runs (widgets: tui/watch_widgets.py)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from couplescope.frontends.tui.telemetry_panel import TelemetryPanel
from couplescope.frontends.tui.views.base import AppView
from couplescope.frontends.tui.watch_widgets import (TABLE_HEADER, TRAINING_HEADER, IterationsTable, PlotLegend,
                                             StatsPanel, TimePlot)


class WatchView(AppView):
    """Statistics, progress, the time plot and the latest iterations of the shown run's
    current variant; the telemetry panel beside them on a wide terminal.

    Redrawn twice a second (the plot at most once, TimePlot.draw): every redraw is CPU
    taken from the cores the worker is measured on (benchmarks/ui_perturbation.py)."""

    key, title = "w", "Watch"
    focus_on = "#iteration-table"
    follows = frozenset({"run_started", "round_started", "iteration", "variant_finished", "variant_failed",
                         "telemetry"})
    redraw_seconds = 0.5
    help = """\
per-iteration time of the running variant with one line per phase (marshal in,
host to device, forward, device to host, marshal out), the latest iterations with
PASSED/FAILED and the maximum relative error, progress, and median, IQR, min and max of
the timed iterations. `204/204 calls = 200 timed + 1 warm-up + 3 profiled` counts every
call (all are checked); only the timed ones enter the statistics (`n=200 timed`). In a
narrow terminal the legend shortens the phases: `m_in` marshal in, `fwd` forward,
`m_out` marshal out. A training run (`--task train`) makes steps: zero_grad, forward, the
loss, backward and the optimizer's step are its phases (`zero`, `bwd` when short), the
table shows each step's loss, and the statistics the first and latest loss; when a
variant ends, its `[training]` verdict says whether the model learnt its task, with the
learned output (SimpleNet: input 1..5 gives 5 1 2 3 4)."""

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
        super().on_mount()
        self._progress = 0          # calls of the current variant so far
        self._dirty = False         # statistics and progress to redraw
        self._samples: dict = {}    # the latest telemetry sample per node, not drawn yet
        self._following: str | None = None   # the variant whose calls the plot and table show
        self.query_one(StatsPanel).show(None, None)

    def run_started(self, record) -> None:
        self._following = None
        self.query_one(TimePlot).reset("")
        self.query_one(IterationsTable).clear_rows()
        # never indeterminate: that bar animates at 15 frames a second (CPU the worker needs)
        self.query_one(ProgressBar).update(total=1, progress=0)
        variants = f"{len(record.specs)} variants" if len(record.specs) > 1 else record.specs[0].label
        self.query_one(StatsPanel).waiting(f"{record.name}: starting {variants} (worker, model); "
                                           "the line at the top says what it is doing")

    def follow(self, record, events: list[dict]) -> None:
        if record is not self.app.shown:
            return
        kind = events[0]["event"]
        if kind == "iteration":
            name = events[-1].get("variant")
            if self._following is not None and name and name != self._following:
                # another variant's calls with no round_started before them (a run in
                # rounds' finish: each variant's profiled calls after the last round): the
                # view follows it, these calls drawn with its others, never under another name
                self._resume(record, name)
                return
            self.query_one(TimePlot).add(events)
            self.query_one(IterationsTable).add_iterations(events)
            self._progress += len(events)
            self._dirty = True
        elif kind == "telemetry":
            for ev in events:   # a multi-node job's nodes each send their own
                self._samples[ev.get("node")] = ev.get("sample") or {}
        elif kind == "run_started":   # a variant starts: everything follows it
            name = events[0]["variant"]
            training = (events[0].get("spec") or {}).get("task") == "train"   # steps show their loss
            self.query_one("#iterations-header", Static).update(TRAINING_HEADER if training else TABLE_HEADER)
            self._following = name
            self.query_one(TimePlot).reset(name)
            self.query_one(IterationsTable).add_variant(name)
            self._progress = 0
            self.query_one(ProgressBar).update(total=record.expected(name), progress=0)
            self._dirty = True
        elif kind == "round_started":   # a run in rounds: the next variant's turn
            self._resume(record, events[0]["variant"])
        else:                         # a variant ended: its final state at once
            self._dirty = True
            self.redraw(force=True)

    def _resume(self, record, name: str) -> None:
        """A variant measures its next round: the view follows it again, its calls so far
        drawn back in. Its first round has no calls yet (its worker is starting, which takes
        a second or two): the view is emptied under its name at once, not left showing the
        previous variant's calls under this one's name; run_started follows."""
        variant = record.builder.variants.get(name)
        calls = variant.iterations if variant is not None else []
        self._following = name
        self.query_one(TimePlot).reset(name)
        self.query_one(IterationsTable).add_variant(name)
        if calls:
            self.query_one(TimePlot).add(calls)
            self.query_one(IterationsTable).add_iterations(calls)
        self._progress = len(calls)
        self.query_one(ProgressBar).update(total=record.expected(name) or 1, progress=self._progress)
        self._dirty = True

    def run_ended(self, record) -> None:
        if record is self.app.shown and record.current is None:   # no variant ever reported
            self.query_one(StatsPanel).waiting(f"{record.name} {record.status} before any variant "
                                               "reported: the log (t) says why")
        self._dirty = True
        self.redraw(force=True)       # its last sample is drawn before the panel goes idle
        self.query_one(TelemetryPanel).idle(record.name)

    def redraw(self, force: bool = False) -> None:
        self.query_one(TimePlot).draw(force=force)
        self.query_one(IterationsTable).flush()
        if self._samples:
            samples, self._samples = self._samples, {}
            for node, sample in samples.items():
                self.query_one(TelemetryPanel).show(sample, node)
        record = self.app.shown
        if self._dirty and record is not None and record.current:
            self._dirty = False
            self.query_one(ProgressBar).update(progress=self._progress)
            variant = record.builder.variants.get(record.current)
            self.query_one(StatsPanel).show(variant, record.expected(record.current))

    def on_time_plot_legend_changed(self, msg: TimePlot.LegendChanged) -> None:
        self.query_one(PlotLegend).show(msg.items)


VIEW = WatchView
