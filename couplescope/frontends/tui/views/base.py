"""What an app view is: a tab that declares its key, its title, the events it follows and
its redraw rate; the app does the rest.

A view is a TabPane whose class attributes say what the app needs to know before it
exists: the app builds its tabs, its keys and the help screen's view paragraphs from
them, and hands each view only the event kinds it asked for. Each view owns its redraw
rate, as nvitop's panels own their refresh intervals: a plot that costs tens of
milliseconds redraws once a second, a table twice, a view that only shows what is done
never (it draws as events come). Every hook runs on the UI thread, so a view keeps its
own state without locks.

The run's state is the app's: `self.app.runs` (RunRecord by id: its ResultsBuilder and
events, fed before any view is called), `self.app.shown` (the run the Watch view shows,
the latest started) and `self.app.active` (the run going, or None).
"""

from __future__ import annotations

from typing import ClassVar

from textual.widgets import TabPane


class AppView(TabPane):
    """One tab of the app. Subclasses set the class attributes and override the hooks
    they need; docs/architecture.md ("Adding an app view") walks through one."""

    #: the key that shows this view; its tab's label names it
    key: ClassVar[str]
    #: the tab's title (its lower-case form is the tab's id)
    title: ClassVar[str]
    #: a selector inside the view: the widget that takes the focus when the view is shown
    focus_on: ClassVar[str | None] = None
    #: event kinds (protocol/events.py) handed to `follow` as they arrive
    follows: ClassVar[frozenset[str]] = frozenset()
    #: seconds between calls of `redraw` (None: never on a timer)
    redraw_seconds: ClassVar[float | None] = None
    #: the help screen's paragraph about this view (markdown, without the title)
    help: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__(f"{self.title} {self.key}", id=self.tab_id())

    @classmethod
    def tab_id(cls) -> str:
        return cls.title.lower()

    _redraw_timer = None

    def on_mount(self) -> None:
        """The redraw timer, once. Textual calls the on_mount of every class in the MRO that
        defines one, so a subclass's `super().on_mount()` ran this twice: two timers, every
        redraw done twice (a subclass's own on_mount needs no super() call)."""
        if self.redraw_seconds and self._redraw_timer is None:
            self._redraw_timer = self.set_interval(self.redraw_seconds, self._timed_redraw)

    def _timed_redraw(self) -> None:
        """The timer's redraw, skipped while the app takes the view down: Textual removes a
        view's widgets before the view, whose timer may fire between (quitting during a run:
        `No nodes match 'TimePlot' on WatchView`, seen once under load)."""
        if not self.taken_down:
            self.redraw()

    @property
    def taken_down(self) -> bool:
        """Whether the app is taking the view down: its widgets may be gone already, so
        neither the timer's redraw nor the events the app hands on (follow: quitting during
        a run, `No nodes match 'TimePlot' on WatchView` from Watch.follow, under load) may
        look for them. Textual says so only in the private `_pruning`, which it sets on
        every node it is about to remove."""
        return bool(getattr(self, "_pruning", False))

    # -- hooks the app calls (UI thread) ------------------------------------------------
    def follow(self, record, events: list[dict]) -> None:
        """Events of one kind this view follows, in the order the worker wrote them (a
        batch of iterations, or a single other event); record.builder has them already."""

    def redraw(self, force: bool = False) -> None:
        """Draw what changed since the last redraw (force: now, whatever the rate)."""

    def run_started(self, record) -> None:
        """A run has started (it is app.active and app.shown)."""

    def run_ended(self, record) -> None:
        """A run has ended: finished, stopped or broken (record.status says which)."""

    def run_changed(self, record) -> None:
        """Something about a run the events do not say changed: marked, exported."""

    def form_changed(self) -> None:
        """Before the first run, the form changed what r would do (app.no_run_words())."""

    def noted(self, text: str, level: str) -> None:
        """A line for the user (app.note): info, warning or error."""
