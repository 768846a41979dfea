"""The Textual app: pick, run, watch, compare, export.

A view over the engine's event stream; it measures nothing itself. A run is a
couplescope Pipeline on a thread worker (the worker process does the measuring), staged
in a run directory in a temporary folder; the run's AppListener posts its events as
messages, handled here on the UI thread: each run's RunRecord takes them first (its
ResultsBuilder), the log gets its lines (notes.py), then every view that follows that
kind of event gets them. The views (views/, one module each, registered in
views/__init__.py) declare their key, title, the events they follow and their redraw
rate; this module holds only what is the app's: the run keys, the runs, the signals.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static, TabbedContent, Tabs

from couplescope.core.request import RunOptions
from couplescope.export.run_dir import DEFAULT_PARENT
from couplescope.frontends.tui import messages as m
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.footer import SteadyFooter
from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.help import HelpScreen
from couplescope.frontends.tui.listener import AppListener
from couplescope.frontends.tui.notes import build_text, ending_notes, notes_for
from couplescope.frontends.tui.runs import RunRecord
from couplescope.frontends.tui.views import view_classes
from couplescope.frontends.tui.views.base import AppView
from couplescope.frontends.tui.views.history import tensorboard_command
from couplescope.protocol import scratch
from couplescope.protocol.contract import exit_code
from couplescope.protocol.errors import UsageError

VIEWS = view_classes()

#: what the status line says when a variant reaches these events
STATUS = {"run_started": "building and loading the model", "model_loaded": "measuring"}


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


class CoupleScopeApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "couplescope"
    #: from this many columns the form's grids take two fields a row and the watch view
    #: shows its telemetry column. The widgets concerned get the class "-wide", not the
    #: screen (Textual's HORIZONTAL_BREAKPOINTS): a class on the screen restyles all of its
    #: ~260 widgets, about a tenth of what starting the app costs.
    WIDE = 150
    #: what the "-wide" class is set on
    WIDE_WIDGETS = ".pick-grid, #watch-telemetry"
    BINDINGS = [
        Binding("r", "run", "run", priority=True),
        Binding("s", "stop", "stop", priority=True),
        Binding("e", "export", "export", priority=True),
        Binding("c", "compare", "compare", priority=True),
        Binding("question_mark", "help", "help", priority=True),
        Binding("q", "quit", "quit", priority=True),
        # Ctrl-C quits as q does (a text field would otherwise take it for copy)
        Binding("ctrl+c", "quit", "quit", priority=True, show=False),
        Binding("escape", "leave_field", "leave the field", show=False),
        # the views' keys: their tabs name them, and the help screen; the footer keeps the
        # run keys visible in an 80-column terminal
        *[Binding(v.key, f"show_view('{v.tab_id()}')", v.title.lower(), priority=True, show=False)
          for v in VIEWS],
    ]

    def __init__(self, options: RunOptions | None = None, load_catalogue: bool = True,
                 recording=None) -> None:
        super().__init__()
        #: the command line's options, filled into the form
        self.options = options or RunOptions()
        #: read the catalogue (torch) in the background; tests of the form alone skip it
        self.load_catalogue = load_catalogue
        #: None: r runs the form's request on real workers; a couplescope.core.replay.Recording
        #: (--replay FILE): r plays the recorded run back, whatever the form says
        self.recording = recording
        self.runs: dict[int, RunRecord] = {}
        self._help: HelpScreen | None = None      # the help screen, made at the first `?`
        self.active: RunRecord | None = None      # the run going now
        self.shown: RunRecord | None = None       # the run the Watch view shows (the latest)
        self.picked_run: RunRecord | None = None  # History's highlighted run (what e exports)
        self._staging_root = scratch.subfolder("tui-")   # runs until exported (removed at exit)
        self.notes: list[str] = []                # what the log shows, as plain text
        self.exit_code = 0
        self.farewell: list[str] = []             # printed after the app has closed
        self._ending: int | None = None           # the signal ending the app
        self._followers: dict[str, list[AppView]] = {}
        self._views: list[AppView] = []           # made in compose

    # -- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("couplescope: pick a model or a preset, then press r", id="status")
        self._views = [view() for view in VIEWS]
        with TabbedContent(initial=VIEWS[0].tab_id(), id="tabs"):
            yield from self._views
        yield SteadyFooter()

    @property
    def main(self):
        """The main screen (queries must reach it while compare or help is on top)."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    @property
    def views(self) -> list[AppView]:
        """The views, in tab order: made once in compose (a query of the DOM for them took
        4 ms, and the app asks on every batch of events)."""
        return self._views

    @property
    def catalogue_ready(self) -> bool:
        """True once the catalogue worker has filled in sizes, backends and devices."""
        return self.main.query_one(PickForm).ready

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
        for view in self.views:
            for kind in view.follows:
                self._followers.setdefault(kind, []).append(view)
        self.action_show_view(VIEWS[0].tab_id())
        self.main.query_one(PickForm).refresh_preview()
        self._fit_width(self.size.width)   # a resize before the views were there set no class

    def on_resize(self, event) -> None:
        self._fit_width(event.size.width)

    def _fit_width(self, width: int) -> None:
        """Two fields a row and the telemetry column from WIDE columns on (a class already
        set, or already absent, restyles nothing)."""
        if self.screen_stack:
            for widget in self.main.query(self.WIDE_WIDGETS):
                widget.set_class(width >= self.WIDE, "-wide")

    # -- actions ------------------------------------------------------------------------
    def action_show_view(self, tab: str) -> None:
        while len(self.screen_stack) > 1:   # from compare or help: the view, not behind them
            self.pop_screen()
        view = self.main.query_one(f"#{tab}", AppView)
        # focus moves with the tab: TabbedContent shows the pane of the focused widget (a view
        # with nothing to focus takes it from the view left behind)
        if view.focus_on:
            view.query_one(view.focus_on).focus()
        else:
            self.set_focus(None)
        self.main.query_one("#tabs", TabbedContent).active = tab

    def action_leave_field(self) -> None:
        """escape, with nothing to close: the focus leaves the field for the tab bar, where
        the arrow keys switch views and tab goes back into the view."""
        self.main.query_one(Tabs).focus()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.clear_notifications()   # a toast would sit over the help box
            # made once and kept: laying out its markdown took a third of a second per `?`.
            # Installed, so that closing it keeps it (Textual removes a popped screen that
            # is not installed, and the next `?` built it again)
            if self._help is None:
                self._help = HelpScreen(VIEWS)
                self.install_screen(self._help, name="help")
            self.push_screen("help")

    def action_run(self) -> None:
        if self.active is not None:
            self.notify(f"run {self.active.name} is still going; press s to stop it first",
                        severity="warning")
            return
        try:
            record = self._start(self.recording.request() if self.recording
                                 else self.main.query_one(PickForm).build())
        except UsageError as exc:
            self.notify(str(exc), title="cannot run", severity="error", timeout=8)
            self.note(f"cannot run: {exc}", "error")
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.action_show_view("watch")
        self.set_status(f"running {record.name}: {len(record.specs)} variant(s); s stops, q quits")

    def _start(self, request) -> RunRecord:
        """Run `request` through the pipeline, staged in a temporary run directory (what
        --export writes, kept until the user exports it or quits)."""
        from dataclasses import replace

        from couplescope.core.pipeline import Pipeline

        record = RunRecord(len(self.runs) + 1, request.title, request.specs, request)
        record.listener = AppListener(self.post_message, record.id)
        record.pipeline = Pipeline(replace(request, export=self._staging_root), [record.listener],
                                   workers=self.recording.workers() if self.recording else None,
                                   summary_plot=False)
        record.session = record.pipeline.session
        self.runs[record.id] = record
        self.active = self.shown = self.picked_run = record   # History highlights it too
        for view in self.views:
            view.run_started(record)
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

    def picked(self) -> RunRecord | None:
        """The run `e` exports: History's highlighted one, else the latest."""
        if self.picked_run is not None and self.runs.get(self.picked_run.id) is self.picked_run:
            return self.picked_run
        return self.runs[max(self.runs)] if self.runs else None

    def action_export(self) -> None:
        record = self.picked()
        if record is None:
            self.notify("nothing to export yet: run something first (r)", severity="warning")
            return
        if record.status == "running":
            self.notify(f"{record.name} is still running; export it when it ends (or stop it: s)",
                        severity="warning")
            return
        try:
            path = record.export(self.options.export or DEFAULT_PARENT)
        except (UsageError, OSError) as exc:
            self.notify(str(exc), title="export failed", severity="error", timeout=8)
            self.note(f"export failed: {exc}", "error")
            return
        if record.summary_error:
            self.note(record.summary_error, "warning")
        if record.export_missing:   # a full disk: results.json was written, these were not
            self.note(f"export incomplete (no room): not written: {', '.join(record.export_missing)}", "error")
        self.note(f"exported {record.name} to {path}; open its traces: {tensorboard_command(path)}")
        # the status line, not a toast: a toast sat over the path under History for seconds
        self.set_status(f"{record.name} exported: {os.path.basename(path)} (path, command: h)")
        for view in self.views:
            view.run_changed(record)

    def action_compare(self) -> None:
        records = [r for r in self.runs.values() if r.selected] or list(self.runs.values())
        if not records:
            self.notify("nothing to compare yet: run something first (r)", severity="warning")
            return
        if isinstance(self.screen, CompareScreen):
            self.pop_screen()
        self.push_screen(CompareScreen(records))

    # -- endings ------------------------------------------------------------------------
    def end_on_signal(self, signum: int) -> None:
        """SIGTERM (a batch time limit, kill) or SIGHUP (the terminal closed): stop the run
        going, export every run not yet exported (the run in progress included: nothing
        is lost), and exit 128 + signum. A second signal while this happens changes nothing."""
        if self._ending is not None:
            return
        self._ending = signum
        self.exit_code = exit_code(signal=signum)
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
            # a run whose session has not reported by then is saved as it stands: no
            # terminal is left to say anything, and what was measured must not be lost
            self._export_unsaved(unfinished=True)
        finally:
            scratch.remove()
            os._exit(exit_code(signal=signum))

    def _export_unsaved(self, unfinished: bool = False) -> None:
        """Export every run not exported yet (into --export's directory, else
        ./couplescope-runs), noting where for the farewell lines. `unfinished` (a hang-up):
        a run whose session has not finished too, and a run that fails to export does not
        keep the others from it."""
        parent = self.options.export or DEFAULT_PARENT
        for record in self.runs.values():
            if record.export_path or not (record.done.is_set() or unfinished):
                continue
            try:
                path = record.export(parent)
                self.farewell.append(f"couplescope: run {record.name} saved to {path}"
                                     + (f" (no room for {', '.join(record.export_missing)})"
                                        if record.export_missing else ""))
            except (UsageError, OSError) as exc:
                self.farewell.append(f"couplescope: run {record.name} not saved: {exc}")
            except Exception as exc:   # noqa: BLE001 - only on a hang-up: nobody to show it to
                if not unfinished:
                    raise
                self.farewell.append(f"couplescope: run {record.name} not saved: {type(exc).__name__}: {exc}")

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
    @_while_shown
    def on_events_arrived(self, msg: m.EventsArrived) -> None:
        """The record first (every view reads its builder), the log, the status line, then
        the views that follow this kind of event."""
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        record.add(msg.events)
        if msg.kind != "iteration":   # a batch of iterations has nothing to say in words
            for ev in msg.events:
                for text, level in notes_for(record, ev):
                    self.note(text, level)
                if ev["event"] == "variant_failed" and ev.get("kind") != "interrupted":
                    self.notify(f"{ev['variant']}: {ev.get('reason')}", title="variant failed",
                                severity="error", timeout=10)
                if ev["event"] in STATUS:
                    self.set_status(f"{record.name}: {ev['variant']}: {STATUS[ev['event']]}")
                elif ev["event"] == "host_build" and ev.get("status") != "cached":
                    self.set_status(f"{ev['variant']}: {build_text(ev)}")   # progress while it builds
                elif ev["event"] == "round_started":
                    self.set_status(f"{record.name}: round {ev['round']}/{ev['rounds']}: {ev['variant']}")
        for view in self._followers.get(msg.kind, ()):
            view.follow(record, msg.events)

    @_while_shown
    def on_run_ended(self, msg: m.RunEnded) -> None:
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        record.finish(msg.error)
        if record is self.active:
            self.active = None
        for view in self.views:
            view.run_ended(record)
        for text, level in ending_notes(record):
            self.note(text, level)
        if msg.error:
            self.note(f"run {record.name} broke: {msg.error}", "error")
            self.notify(msg.error, title=f"run {record.name} broke", severity="error", timeout=10)
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
    def redraw_views(self, force: bool = True) -> None:
        """Every view draws what it has now (tests and snapshots; views redraw on their own
        timers otherwise)."""
        for view in self.views:
            view.redraw(force=force)

    def set_status(self, text: str) -> None:
        self.main.query_one("#status", Static).update(text)

    def note(self, text: str, level: str = "info") -> None:
        """A line for the user: kept in `notes`, shown by the views that show notes (the log)."""
        self.notes.append(text)
        for view in self.views:
            view.noted(text, level)
