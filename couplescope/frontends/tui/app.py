"""The Textual app: pick, run, watch, compare, export.

A view over the engine's event stream; it measures nothing itself. A run is a
couplescope Session on a thread worker (the worker process does the measuring); the
session's AppListener posts messages, handled here on the UI thread, where they feed
the run's ResultsBuilder and the widgets. Widgets redraw on a 4 Hz tick, not per event.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, ProgressBar, Static, TabbedContent, TabPane

from couplescope.core.request import RunOptions
from couplescope.export.run_dir import DEFAULT_PARENT
from couplescope.frontends import format as fmt
from couplescope.frontends.tui import messages as m
from couplescope.frontends.tui.compare import CompareScreen
from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.help import HelpScreen
from couplescope.frontends.tui.history import RunsTable
from couplescope.frontends.tui.listener import AppListener
from couplescope.frontends.tui.runs import RunRecord, export_run
from couplescope.frontends.tui.telemetry_panel import DiagnosticsLog, TelemetryPanel
from couplescope.frontends.tui.watch import TABLE_HEADER, IterationsTable, PlotLegend, StatsPanel, TimePlot
from couplescope.protocol import scratch
from couplescope.protocol.errors import UsageError


def signal_name(signum) -> str:
    return signal.Signals(signum).name


def _while_shown(handler):
    """Skip a message that arrives after the app has taken its screens down (quitting)."""

    @functools.wraps(handler)
    def wrapper(self, *args):
        if not self.screen_stack:
            return None
        return handler(self, *args)
    return wrapper


#: how often the watch view redraws while a run goes: each redraw is CPU taken from the
#: cores the worker is being measured on (benchmarks/ui_perturbation.py)
TICK_SECONDS = 0.5

HISTORY_HINT = "space marks runs for c (compare); e exports the highlighted run"


def tensorboard_command(path: str) -> str:
    """The command that opens an exported run's traces, shell-quoted (a path may hold spaces)."""
    return f"couplescope --tensorboard {shlex.quote(path)}"

class CoupleScopeApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "couplescope"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]
    BINDINGS = [
        Binding("r", "run", "run", priority=True),
        Binding("s", "stop", "stop", priority=True),
        Binding("e", "export", "export", priority=True),
        Binding("c", "compare", "compare", priority=True),
        Binding("question_mark", "help", "help", priority=True),
        Binding("q", "quit", "quit", priority=True),
        # the tabs show these views' names; the keys are in the help screen, which keeps
        # the footer's essential keys visible in an 80-column terminal
        Binding("p", "show_tab('pick')", "pick", priority=True, show=False),
        Binding("w", "show_tab('watch')", "watch", priority=True, show=False),
        Binding("t", "show_tab('telemetry')", "telemetry", priority=True, show=False),
        Binding("h", "show_tab('history')", "history", priority=True, show=False),
    ]

    def __init__(self, options: RunOptions | None = None, load_catalogue: bool = True,
                 start_worker=None) -> None:
        super().__init__()
        #: the command line's options, filled into the form
        self.options = options or RunOptions()
        #: None: real workers; couplescope.core.replay.replayer(events): a recorded run
        self._start_worker = start_worker
        self.runs: dict[int, RunRecord] = {}
        self.active: RunRecord | None = None      # the run going now
        self.shown: RunRecord | None = None       # the run the Watch view shows
        self._staging_root = scratch.subfolder("tui-")   # runs until exported (removed at exit)
        self._load_catalogue = load_catalogue
        self._stats_dirty = False
        self._sample: dict | None = None
        self._progress = 0
        self.notes: list[str] = []                # what the log panel shows, as plain text
        self.exit_code = 0
        self.farewell: list[str] = []             # printed after the app has closed
        self._ending: int | None = None           # the signal ending the app

    # -- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("couplescope: pick a model or a preset, then press r", id="status")
        with TabbedContent(initial="pick", id="tabs"):
            with TabPane("Pick p", id="pick"):
                yield PickForm(self.options, load_catalogue=self._load_catalogue, id="form")
            with TabPane("Watch w", id="watch"):
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
            with TabPane("Telemetry t", id="telemetry"):
                yield TelemetryPanel(id="telemetry-panel", classes="telemetry")
                yield DiagnosticsLog(id="log", markup=True, wrap=True)
            with TabPane("History h", id="history"):
                with Vertical():
                    yield RunsTable(id="runs")
                    yield Static(HISTORY_HINT, id="export-note")
        yield Footer()

    @property
    def catalogue_ready(self) -> bool:
        """True once the catalogue worker has filled in sizes, backends and devices."""
        return self.main.query_one(PickForm).ready

    @property
    def main(self):
        """The main screen (queries must reach it while compare or help is on top)."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    def on_mount(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGTERM, self.end_on_signal, signal.SIGTERM)
            # not through the event loop: when the terminal hangs up, Textual's output thread
            # dies on the first failed write and the loop blocks for good on its next one
            signal.signal(signal.SIGHUP, self.hang_up)
        except (NotImplementedError, RuntimeError, ValueError):
            pass   # not the main thread (tests) or no such signal here
        self.main.query_one(StatsPanel).show(None, None)
        self.set_interval(TICK_SECONDS, self._tick)
        self.main.query_one("#model").focus()
        self.main.query_one(PickForm).refresh_preview()

    # -- actions ------------------------------------------------------------------------
    FOCUS_IN_TAB = {"pick": "#model", "watch": "#iteration-table", "telemetry": "#log", "history": "#runs"}

    def action_show_tab(self, tab: str) -> None:
        # focus moves with the tab: TabbedContent shows the pane of the focused widget
        self.main.query_one(self.FOCUS_IN_TAB[tab]).focus()
        self.main.query_one("#tabs", TabbedContent).active = tab

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.clear_notifications()   # a toast would sit over the help box
            self.push_screen(HelpScreen())

    def action_run(self) -> None:
        if self.active is not None:
            self.notify(f"run {self.active.name} is still going; press s to stop it first",
                        severity="warning")
            return
        form = self.main.query_one(PickForm)
        try:
            record = self._start(form.build())
        except UsageError as exc:
            self.notify(str(exc), title="cannot run", severity="error", timeout=8)
            self.note(f"cannot run: {exc}", "error")
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.action_show_tab("watch")
        self.set_status(f"running {record.name}: {len(record.specs)} variant(s); s stops, q quits")

    def _start(self, request) -> RunRecord:
        """Run `request` through the pipeline, staged in a temporary run directory (what
        --export writes, kept until the user exports it or quits)."""
        from dataclasses import replace

        from couplescope.core.pipeline import Pipeline

        record = RunRecord(len(self.runs) + 1, request.title, request.specs, request)
        record.listener = AppListener(self.post_message, record.id)
        record.pipeline = Pipeline(replace(request, export=self._staging_root), [record.listener],
                                   start_worker=self._start_worker, summary_plot=False)
        record.staging = record.pipeline.exporter
        record.session = record.pipeline.session
        self.runs[record.id] = record
        self.active = self.shown = record
        self.main.query_one(TimePlot).reset("")
        self.main.query_one(IterationsTable).clear_rows()
        # never indeterminate: that bar animates at 15 frames a second (CPU the worker needs)
        self.main.query_one(ProgressBar).update(total=1, progress=0)
        self.main.query_one(StatsPanel).show(None, None)
        self.add_history_row(record)
        self.note(f"run {record.name}: " + ", ".join(s.label for s in record.specs))
        for note in request.notes:   # a variant falling back to the python host
            self.note(note, "warning")
        self.run_session(record)
        return record

    @work(thread=True, exit_on_error=False, group="run")
    def run_session(self, record: RunRecord) -> None:
        error = None
        try:
            record.session.run()
        except BaseException as exc:  # noqa: BLE001 - shown in the app, never closes it
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        finally:
            record.done.set()
            self.post_message(m.RunEnded(record.id, error))

    def action_stop(self) -> None:
        if self.active is None:
            self.notify("no run is going", severity="information")
            return
        self.set_status(f"stopping {self.active.name} ...")
        self.stop_session(self.active)

    @work(thread=True, exit_on_error=False, group="stop")
    def stop_session(self, record: RunRecord) -> None:
        # stop() ends the worker's process group (and one that is still starting); it
        # blocks until the worker has gone, hence this thread
        record.session.stop()

    def action_export(self) -> None:
        record = self.selected_run()
        if record is None:
            self.notify("nothing to export yet: run something first (r)", severity="warning")
            return
        if record.status == "running":
            self.notify(f"{record.name} is still running; export it when it ends (or stop it: s)",
                        severity="warning")
            return
        parent = self.options.export or DEFAULT_PARENT
        try:
            path = export_run(record, parent)
        except (UsageError, OSError) as exc:
            self.notify(str(exc), title="export failed", severity="error", timeout=8)
            self.note(f"export failed: {exc}", "error")
            return
        command = tensorboard_command(path)
        if record.summary_error:
            self.note(record.summary_error, "warning")
        self.update_history_row(record)
        self.show_export_note(record)
        self.note(f"exported {record.name} to {path}; open its traces: {command}")
        # the toast, a third of the width, names the run directory only: a path wrapped mid-token
        self.notify(f"to {os.path.basename(path)}; the full path and the TensorBoard command are in "
                    "History", title=f"exported {record.name}", timeout=8)

    def show_export_note(self, record: RunRecord | None) -> None:
        """Under the History table: where the highlighted run was exported, the path and the
        command on lines of their own (inside a sentence a path was broken mid-token)."""
        if record is None or not record.export_path:
            text = HISTORY_HINT
        else:
            text = (f"{record.name} was exported to\n{record.export_path}\nopen its traces:\n"
                    f"{tensorboard_command(record.export_path)}")
        self.main.query_one("#export-note", Static).update(Text(text))

    def on_data_table_row_highlighted(self, event) -> None:
        if event.data_table.id == "runs":
            self.show_export_note(self.selected_run())

    def action_compare(self) -> None:
        records = [r for r in self.runs.values() if r.selected] or list(self.runs.values())
        if not records:
            self.notify("nothing to compare yet: run something first (r)", severity="warning")
            return
        if isinstance(self.screen, CompareScreen):
            self.pop_screen()
        self.push_screen(CompareScreen(records))

    def action_toggle_mark(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        record.selected = not record.selected
        self.update_history_row(record)

    def end_on_signal(self, signum: int) -> None:
        """SIGTERM (a batch time limit, kill) or SIGHUP (the terminal closed): stop the run
        going, export every run not yet exported (the run in progress included: nothing
        is lost), and exit 128 + signum. A second signal while this happens changes nothing."""
        if self._ending is not None:
            return
        self._ending = signum
        self.exit_code = 128 + int(signum)
        if self.active is not None:
            self.set_status(f"stopping {self.active.name} ({signal_name(signum)}) ...")
            self.stop_session(self.active)   # its RunEnded finishes the job
        else:
            self._save_and_exit()

    def hang_up(self, signum, frame) -> None:
        """SIGHUP: the terminal is gone, and with it any way to draw or to tear the app
        down (Textual would block writing to it). So, right here in the signal handler:
        stop the run going, wait for it to report, export every run not yet exported,
        remove the temporary folder and leave with 129, without Textual."""
        if self._ending is not None:
            return
        self._ending = signum
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            for record in self.runs.values():
                if record.session is not None and not record.done.is_set():
                    record.session.stop()
                    record.done.wait(timeout=15)
            self._export_unsaved()
        finally:
            scratch.remove()
            os._exit(128 + int(signum))

    def _export_unsaved(self) -> None:
        """Export every run not exported yet (into --export's directory, else
        ./couplescope-runs), noting where for the farewell lines."""
        parent = self.options.export or DEFAULT_PARENT
        for record in self.runs.values():
            if record.export_path or not record.done.is_set():
                continue
            try:
                path = export_run(record, parent)
                self.farewell.append(f"couplescope: run {record.name} saved to {path}")
            except (UsageError, OSError) as exc:
                self.farewell.append(f"couplescope: run {record.name} not saved: {exc}")

    def _save_and_exit(self) -> None:
        self.farewell.append(f"couplescope: {signal_name(self._ending)}: the app closed")
        self._export_unsaved()
        self.exit(return_code=self.exit_code)

    async def action_quit(self) -> None:
        self.stop_everything()
        self.exit()

    def stop_everything(self) -> None:
        """End any worker process (its whole group); used by q and on exit."""
        for record in self.runs.values():
            if record.session is not None and record.status == "running":
                record.session.stop()

    def on_unmount(self) -> None:
        self.stop_everything()
        shutil.rmtree(self._staging_root, ignore_errors=True)

    # -- messages from the run ------------------------------------------------------------
    def _record(self, msg) -> RunRecord | None:
        record = self.runs.get(msg.run_id)
        if record is not None and getattr(msg, "event", None) is not None:
            record.builder.on_event(msg.event)
        return record

    @_while_shown
    def on_variant_started(self, msg: m.VariantStarted) -> None:
        record = self._record(msg)
        name = msg.event["variant"]
        record.current = name
        if record is self.shown:
            self.main.query_one(TimePlot).reset(name)
            self.main.query_one(IterationsTable).add_variant(name)
            self._progress = 0
            self.main.query_one(ProgressBar).update(total=record.expected(name), progress=0)
            self._stats_dirty = True
        self.set_status(f"{record.name}: {name}: building and loading the model")

    @_while_shown
    def on_model_loaded(self, msg: m.ModelLoaded) -> None:
        record = self._record(msg)
        ev = msg.event
        self.note(f"{ev['variant']}: model loaded in {fmt.seconds(ev.get('seconds'))} "
                  f"(size {ev.get('size')}, {ev.get('dtype')})")
        self.set_status(f"{record.name}: {ev['variant']}: measuring")

    @_while_shown
    def on_iterations_measured(self, msg: m.IterationsMeasured) -> None:
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        for ev in msg.events:
            record.builder.on_event(ev)
        if record is self.shown:
            self.main.query_one(TimePlot).add(msg.events)
            self.main.query_one(IterationsTable).add_iterations(msg.events)
            self._progress += len(msg.events)   # drawn by the tick
            self._stats_dirty = True

    @_while_shown
    def on_variant_finished(self, msg: m.VariantFinished) -> None:
        self._record(msg)
        self._variant_ended(msg)

    @_while_shown
    def on_variant_failed(self, msg: m.VariantFailed) -> None:
        self._record(msg)
        ev = msg.event
        if ev.get("kind") == "interrupted":
            self.note(f"{ev['variant']}: stopped; what was measured is kept", "warning")
        else:
            self.note(f"{ev['variant']}: {ev.get('reason')}", "error")
            self.notify(f"{ev['variant']}: {ev.get('reason')}", title="variant failed",
                        severity="error", timeout=10)
        self._variant_ended(msg)

    def _variant_ended(self, msg) -> None:
        self._stats_dirty = True
        self._tick(force=True)

    @_while_shown
    def on_time_plot_legend_changed(self, msg: TimePlot.LegendChanged) -> None:
        self.main.query_one(PlotLegend).show(msg.items)

    @_while_shown
    def on_diagnostic_raised(self, msg: m.DiagnosticRaised) -> None:
        self._record(msg)
        self.note(f"warning: {msg.event.get('message')}", "warning")

    @_while_shown
    def on_telemetry_sampled(self, msg: m.TelemetrySampled) -> None:
        if self.runs.get(msg.run_id) is self.shown:
            self._sample = msg.event.get("sample") or {}   # drawn by the tick, not per sample

    @_while_shown
    def on_other_event_received(self, msg: m.OtherEventReceived) -> None:
        self._record(msg)
        ev = msg.event
        if ev["event"] == "log":
            self.note(f"{ev.get('variant')}: {ev.get('message')}")
        elif ev["event"] == "worker_output" and self._shows_output(msg.run_id, ev["variant"]):
            from rich.markup import escape

            lines = (ev.get("lines") or [])[-20:]
            more = f" (the last {len(lines)} of {ev['total']} lines)" if ev.get("total", 0) > len(lines) else ""
            self.note(f"{ev.get('variant')} printed{more}:\n" + "\n".join(escape(line) for line in lines))
        elif ev["event"] == "model_compiled":
            self.note(f"{ev.get('variant')}: {fmt.compiled_line(ev)}")
        elif ev["event"] == "trace_written":
            self.note(f"{ev.get('variant')}: trace written")

    def _shows_output(self, run_id: int, variant: str) -> bool:
        """A user module's print()s, or the output of a variant that did not finish."""
        record = self.runs.get(run_id)
        v = record.builder.variants.get(variant) if record else None
        return v is not None and fmt.shows_output(v.spec, v.status == "finished")

    @_while_shown
    def on_run_ended(self, msg: m.RunEnded) -> None:
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        record.finish(msg.error)
        if record is self.active:
            self.active = None
        self._tick(force=True)   # its last sample is drawn before the panels go idle
        for panel in self.main.query(TelemetryPanel):
            panel.idle(record.name)
        if msg.error:
            self.note(f"run {record.name} broke: {msg.error}", "error")
            self.notify(msg.error, title=f"run {record.name} broke", severity="error", timeout=10)
        self._stats_dirty = True
        self._tick(force=True)
        self.update_history_row(record)
        self.set_status(f"{record.name} {record.status}: e exports, c compares, r runs again, ? help")
        if self._ending is not None:
            self._save_and_exit()

    @_while_shown
    def on_worker_state_changed(self, event) -> None:
        worker = event.worker
        if worker.error is not None and worker.group in ("catalogue", "run", "stop"):
            self.note(f"{worker.group}: {worker.error}", "error")

    @_while_shown
    def on_catalogue_loaded(self, msg: m.CatalogueLoaded) -> None:
        if msg.error:
            self.note(f"catalogue: {msg.error}", "warning")

    # -- drawing ----------------------------------------------------------------------
    def _tick(self, force: bool = False) -> None:
        if not self.screen_stack or not self.main.query(TimePlot):
            return   # shutting down
        self.main.query_one(TimePlot).draw(force=force)
        self.main.query_one(IterationsTable).flush()
        if self._sample is not None:
            sample, self._sample = self._sample, None
            for panel in self.main.query(TelemetryPanel):
                panel.show(sample)
        record = self.shown
        if self._stats_dirty and record is not None and record.current:
            self._stats_dirty = False
            self.main.query_one(ProgressBar).update(progress=self._progress)
            variant = record.builder.variants.get(record.current)
            self.main.query_one(StatsPanel).show(variant, record.expected(record.current))
            self.update_history_row(record)

    def set_status(self, text: str) -> None:
        self.main.query_one("#status", Static).update(text)

    def note(self, text: str, level: str = "info") -> None:
        self.notes.append(text)
        self.main.query_one(DiagnosticsLog).note(text, level)

    def selected_run(self) -> RunRecord | None:
        run_id = self.main.query_one(RunsTable).highlighted_id()
        return self.runs.get(run_id) if run_id is not None else None

    def add_history_row(self, record: RunRecord) -> None:
        self.main.query_one(RunsTable).add_run(record)

    def update_history_row(self, record: RunRecord) -> None:
        self.main.query_one(RunsTable).update_run(record)
