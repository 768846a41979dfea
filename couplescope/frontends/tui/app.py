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

import shutil
import signal

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import TabbedContent, Tabs

from couplescope.core.request import RunOptions
from couplescope.frontends.tui import messages as m
from couplescope.frontends.tui.compare_key import CompareKey
from couplescope.frontends.tui.endings import CLOSED_KEYS, SignalEndings
from couplescope.frontends.tui.escape_apart import read_escape_apart
from couplescope.frontends.tui.export_key import ExportKey
from couplescope.frontends.tui.footer import SteadyFooter
from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.help import OFF_IN_HELP, HelpScreen
from couplescope.frontends.tui.key_order import KeysInOrder
from couplescope.frontends.tui.listener import AppListener
from couplescope.frontends.tui.notes import build_words, ending_notes, notes_for
from couplescope.frontends.tui.quit_screen import QuitKey
from couplescope.frontends.tui.runs import RunRecord
from couplescope.frontends.tui.top_line import HINTS, WHY_NOT, StatusLine, TopLine, first_words  # noqa: F401 (HINTS: tests)
from couplescope.frontends.tui.views import view_classes
from couplescope.frontends.tui.views.base import AppView
from couplescope.protocol import scratch
from couplescope.protocol.errors import UsageError

#: what the status line says when a variant reaches these events
#: what a variant's events say it does, in their forms (the top line says the first that fits)
STATUS = {"run_started": ("building and loading the model", "loading its model"), "model_loaded": ("measuring",)}


class CoupleScopeApp(CompareKey, ExportKey, QuitKey, SignalEndings, TopLine, KeysInOrder, App):
    CSS_PATH = "app.tcss"
    TITLE = "couplescope"
    #: from this many columns the form's grids take two fields a row and the watch view
    #: shows its telemetry column. The widgets concerned get the class "-wide", not the
    #: screen (Textual's HORIZONTAL_BREAKPOINTS): a class on the screen restyles all of its
    #: ~260 widgets, about a tenth of what starting the app costs.
    WIDE = 150
    #: what the "-wide" class is set on
    WIDE_WIDGETS = ".pick-grid, #watch-telemetry"
    #: the run keys; a tooltip is what docs/tui.md's key table says the key does (generated:
    #: python -m couplescope.frontends.docs_tables)
    BINDINGS = [
        # the footer offers r while no run goes and s while one goes; the other key says why
        # it cannot act (why_not), offered nowhere: at 80 columns the compare screen's keys
        # (tab and v included) fit only so
        Binding("r", "run", "run", priority=True,
                tooltip="run what the Pick view describes (the footer offers it while no run goes)."),
        Binding("r", "why_not('run')", priority=True, show=False,
                tooltip="while a run goes: refused, with a message (the footer offers s then)."),
        Binding("s", "stop", "stop", priority=True,
                tooltip="stop the run: ends the worker's process group. What was measured stays (the "
                        "variant shows as stopped, its statistics cover the iterations that finished). "
                        "Offered once per run: not while the stop is under way."),
        Binding("s", "why_not('stop')", priority=True, show=False,
                tooltip="with no run going, or while one is being stopped: says so (still stopping, as r "
                        "does; kept on the top line as the stop goes on) (the footer offers r once no run goes)."),
        Binding("e", "export", "export", priority=True,
                tooltip="export the highlighted run of the History view (the latest run by default) to a "
                        "new run directory, exactly as --export writes it. The top line says exporting at "
                        "once (copying the traces and drawing summary.png take seconds, on a thread), "
                        "then where it went. A run already exported to that folder is not written "
                        "again: it says where it is."),
        Binding("e", "why_not('export')", priority=True, show=False,
                tooltip="while there is no ended run that measured something to export: says so (while "
                        "a run is being stopped: still stopping, as r and s say) (the footer offers e once there is)."),
        Binding("c", "compare", "compare", priority=True,
                tooltip="compare the runs marked in History (all runs when none is marked), one task at a "
                        "time; on the compare screen, draw it again with what has arrived since. From the "
                        "views the top line says comparing #1, #2 ... at once (building compare takes "
                        "seconds on a busy machine)."),
        Binding("c", "why_not('compare')", priority=True, show=False,
                tooltip="while the runs it would compare made no call or step: says so (the footer offers "
                        "c once one has)."),
        Binding("question_mark", "help", "help", priority=True,
                tooltip="the help screen: it scrolls (arrow keys, PgUp/PgDn, End; its border says so)."),
        # q asks first when quitting loses a run (QuitScreen); ctrl+c quits at once, from anywhere
        # (a text field would otherwise take it for copy)
        Binding("q", "quit", "quit", priority=True,
                tooltip="quit. While a run goes, or when runs that measured something are not "
                        "exported, it asks first, since quitting loses them (a second q quits)."),
        Binding("ctrl+c", "interrupt", "quit", priority=True, show=False,
                tooltip="quit at once, from anywhere (a field that takes words included), as Ctrl-C ends "
                        "a run on the command line: the run going is stopped, every run not exported is "
                        "saved (to the export field's folder, else ./couplescope-runs; the terminal says "
                        "where), and the exit code is 130 when a run was going, else 0."),
        Binding("escape", "leave_field", "leave the field", show=False,
                tooltip="the focus leaves the field it is in for the tab bar (where the arrow keys "
                        "switch views and tab goes back into the view, to its first field)."),
    ]

    def __init__(self, options: RunOptions | None = None, load_catalogue: bool = True,
                 recording=None) -> None:
        super().__init__()
        read_escape_apart()   # escape and a key read with it: two keys (escape_apart.py)
        #: the registered views' classes, in tab order (read when an app is made, so a test
        #: that pins the registry gets an app with those views only)
        self.view_types = view_classes()
        # the views' keys: their tabs name them, and the help screen; the footer keeps the
        # run keys visible in an 80-column terminal. Bound per app, as Textual binds its
        # command palette's key, since the views are the registry's when the app is made
        for view in self.view_types:
            self._bindings.bind(view.key, f"show_view('{view.tab_id()}')", view.title.lower(),
                                show=False, priority=True)
        #: the command line's options, filled into the form
        self.options = options or RunOptions()
        #: read the catalogue (torch) in the background; tests of the form alone skip it
        self.load_catalogue = load_catalogue
        #: None: r runs the form's request on real workers; a couplescope.core.replay.Recording
        #: (--replay FILE): r plays the recorded run back, whatever the form says
        self.recording = recording
        self.runs: dict[int, RunRecord] = {}
        #: the variants the compare screen leaves out ("#run variant"): kept when it is opened again
        self.left_out: set[str] = set()
        #: the compare plot chosen with `v` (median vs size, else boxes): kept as left_out is
        self.compare_by_size = True
        self._help: HelpScreen | None = None      # the help screen, made at the first `?`
        self.active: RunRecord | None = None      # the run going now
        self.shown: RunRecord | None = None       # the run the Watch view shows (the latest)
        self.picked_run: RunRecord | None = None  # History's highlighted run (what e exports)
        self.exporting: RunRecord | None = None   # the run being exported now (on a thread)
        self._staging_root = scratch.subfolder("tui-")   # runs until exported (removed at exit)
        self.notes: list[str] = []                # what the log shows, as plain text
        self.exit_code = 0
        self.farewell: list[str] = []             # printed after the app has closed
        self._ending: int | None = None           # the signal ending the app
        self._quitting = False                    # q said yes while a run went: its worker is being stopped
        self._followers: dict[str, list[AppView]] = {}
        self._views: list[AppView] = []           # made in compose
        self._focus_in: dict[str, object] = {}    # view id -> the widget focused when it was left
        self._status = first_words(self.options, recording)   # what the top line says (top_line.py)

    # -- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(self._status, id="status")
        self._views = [view() for view in self.view_types]
        with TabbedContent(initial=self.view_types[0].tab_id(), id="tabs"):
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
        self.action_show_view(self.view_types[0].tab_id())
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
        """Show a view, the focus where it was in it when it was left (the field typed in,
        the row chosen), else on its `focus_on`: `h` then `p` put it back on the form's
        first field, far from the one being filled in."""
        while len(self.screen_stack) > 1:   # from compare or help: the view, not behind them
            self.pop_screen()
        self.refusal_gone()   # a key acted: the refusal it followed is no news
        tabs = self.main.query_one("#tabs", TabbedContent)
        focused = self.main.focused
        if tabs.active and focused is not None:
            left = self.main.query_one(f"#{tabs.active}", AppView)
            if left in focused.ancestors:
                self._focus_in[tabs.active] = focused
        view = self.main.query_one(f"#{tab}", AppView)
        # focus moves with the tab: TabbedContent shows the pane of the focused widget (a view
        # with nothing to focus takes it from the view left behind)
        was = self._focus_in.get(tab)
        if was is not None and was.is_attached and was.focusable:
            was.focus()
        elif view.focus_on:
            view.query_one(view.focus_on).focus()
        else:
            self.set_focus(None)
        tabs.active = tab

    def action_leave_field(self) -> None:
        """escape, with nothing to close: the focus leaves the field for the tab bar, where
        the arrow keys switch views and tab goes back into the view."""
        self.main.query_one(Tabs).focus()

    def action_help(self) -> None:
        self.refusal_gone()
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.clear_notifications()   # a toast would sit over the help box
            # made once and kept: laying out its markdown took a third of a second per `?`.
            # Installed, so that closing it keeps it (Textual removes a popped screen that
            # is not installed, and the next `?` built it again)
            if self._help is None:
                self._help = HelpScreen(self.view_types)
                self.install_screen(self._help, name="help")
            self.push_screen("help")

    def check_action(self, action: str, parameters) -> bool | None:
        """r where it runs, s where it stops, c where it compares, e where it exports; the other one's why_not
        says why not. While the quit question is asked, its answers only, and ctrl+c
        (QuitKey.asking); while the help shows, its keys (help.py); while the app closes
        (ctrl+c, a signal, q's yes), none of r s e c ? q (endings.py: CLOSED_KEYS)."""
        if self.asking():
            return action in ("quit", "interrupt")
        if self.closing() and action in CLOSED_KEYS:
            return False
        if isinstance(self.screen, HelpScreen) and action in OFF_IN_HELP:
            return False   # the help's own keys answer (help.py: the app's close it, then act)
        going = self.active is not None
        if action == "stop" or action == "why_not" and parameters[0] == "stop":
            return (going and not self.active.stopping) == (action == "stop")   # (not again while stopping)
        if action == "run":
            return not going
        if action == "compare" or action == "why_not" and parameters[0] == "compare":
            return self.comparable() == (action == "compare")
        if action == "export" or action == "why_not" and parameters[0] == "export":
            return self.exportable() == (action == "export")
        if action == "why_not":
            return going
        return True

    def action_why_not(self, action: str) -> None:
        """r while a run goes, s while none does: the action itself says why it cannot act."""
        getattr(self, f"action_{action}")()

    def action_run(self) -> None:
        if self.active is not None:
            self.say_why_not(self.active.still_stopping("r runs once it has stopped") if self.active.stopping else
                             self.active.untitled(f"run {self.active.name} is still going; press s to stop it first"))
            return
        try:
            record = self._start(self.recording.request() if self.recording
                                 else self.main.query_one(PickForm).build())
        except UsageError as exc:
            # (too narrow for the reason: one row all the same, the Run line says it whole)
            self.say_why_not((f"cannot run: {exc}", f"cannot run: {WHY_NOT.removeprefix('r will not run: ')}"),
                             severity="error", timeout=8)
            self.note(f"cannot run: {exc}", "error")
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.action_show_view("watch")
        self.set_status(record.running_words())

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
        self.refresh_bindings()                               # s in the footer, not r
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
            self.say_why_not("no run is going: s stops a run while it goes")
            return
        if self.active.stopping:   # as r says it (its words went with the next worker's end: top_line.py)
            self.say_why_not(self.active.still_stopping())
            return
        self.begin_stop("s")
        self.stop_said_on_compare(self.active)

    def begin_stop(self, how: str, words: str | None = None) -> None:
        """Stop the run going (`how`: s, q, ctrl+c, a signal), the top line saying `words`
        till it is done and the variant shown saying "stopping": the one state for every
        way to stop (after ctrl+c and q's yes, the events its workers sent before they
        ended took the top line back to "building and loading the model"). Without `words`,
        the top line follows the stop as it goes (RunRecord.stopping_words)."""
        record = self.active
        record.stopping = record.stopping or how
        self.set_status(words or record.stopping_words())
        self.refresh_bindings()   # s no longer offered: it stops once
        for view in self.views:   # the variant shown says "stopping", not "running"
            view.run_changed(record)
        self.stop_session(record)

    @work(thread=True, exit_on_error=False, group="stop")
    def stop_session(self, record: RunRecord) -> None:
        # stop() ends the worker's process group (and one that is still starting); it
        # blocks until the worker has gone, hence this thread
        record.session.stop()

    def stop_everything(self) -> None:
        """End any worker process (its whole group); used by q and on exit."""
        for record in self.runs.values():
            if record.session is not None and record.status == "running":
                record.session.stop()

    def on_unmount(self) -> None:
        self.stop_everything()
        if self.exporting is not None:   # its copy reads the staging folder: let it finish
            self.exporting.export_done.wait(timeout=120)
        shutil.rmtree(self._staging_root, ignore_errors=True)

    # -- messages from the run ------------------------------------------------------------
    @m.while_shown
    def on_events_arrived(self, msg: m.EventsArrived) -> None:
        """The record first (every view reads its builder), the log, the status line, then
        the views that follow this kind of event."""
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        measured = bool(record.measured())
        record.add(msg.events)
        if not measured and record.measured():
            self.refresh_bindings()   # c in the footer once there is something to compare
        if msg.kind != "iteration":   # a batch of iterations has nothing to say in words
            for ev in msg.events:
                for text, level in notes_for(record, ev):
                    self.note(text, level)
                if ev["event"] == "variant_failed" and ev.get("kind") != "interrupted":
                    self.notify(f"{ev['variant']}: {ev.get('reason')}", title="variant failed",
                                severity="error", timeout=10)
                if ev["event"] in STATUS:
                    self.set_status(record.doing_words(ev["variant"], STATUS[ev["event"]]), progress=True)
                elif ev["event"] == "host_build" and ev.get("status") != "cached":   # while it builds
                    self.set_status(build_words(ev), progress=True)
                elif (ev["event"] in ("variant_finished", "variant_failed") and record.stopping
                      and record.stopping != "q" and record is self.active):
                    self.say_stop_progress(record.stopping_words())   # the stop as far as it has gone
                # a round's start is named by the Watch view when it shows that variant: rounds
                # of a fast model come several a second, faster than the view redraws
        for view in self._followers.get(msg.kind, ()):
            if not view.taken_down:   # (quitting: its widgets may be gone already)
                view.follow(record, msg.events)

    @m.while_shown
    def on_run_ended(self, msg: m.RunEnded) -> None:
        record = self.runs.get(msg.run_id)
        if record is None:
            return
        record.finish(msg.error)
        if record is self.active:
            self.active = None
            self.refresh_bindings()                           # r in the footer, not s
        for view in self.views:
            view.run_ended(record)
        for text, level in ending_notes(record):
            self.note(text, level)
        if msg.error:
            self.note(f"run {record.name} broke: {msg.error}", "error")
            self.notify(msg.error, title=f"run {record.name} broke", severity="error", timeout=10)
        if self._ending is not None:
            self.save_then_close()
        elif self._quitting and self.active is None:
            self.set_status("quitting ...")   # not words offering e and r, as it closes
            self.exit()
        else:
            self.set_status(record.ending_words())
            self.compare_follows_end(record)

    @m.while_shown
    def on_worker_state_changed(self, event) -> None:
        worker = event.worker
        if worker.error is not None and worker.group in ("catalogue", "run", "stop"):
            self.note(f"{worker.group}: {worker.error}", "error")

    @m.while_shown
    def on_catalogue_loaded(self, msg: m.CatalogueLoaded) -> None:
        if msg.error:
            self.note(f"catalogue: {msg.error}", "warning")

    # -- drawing ----------------------------------------------------------------------
    def redraw_views(self, force: bool = True) -> None:
        """Every view draws what it has now (tests and snapshots; views redraw on their own
        timers otherwise)."""
        for view in self.views:
            view.redraw(force=force)

    def note(self, text: str, level: str = "info") -> None:
        """A line for the user: kept in `notes`, shown by the views that show notes (the log)."""
        self.notes.append(text)
        for view in self.views:
            view.noted(text, level)
