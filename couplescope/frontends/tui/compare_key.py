"""The compare key (`c`): the compare screen for the runs marked in History (all runs when
none is marked), offered in the footer only where it can act.

A part of the app (CoupleScopeApp inherits it), as export_key.py is: it reads the app's
runs and the variants the compare screen left out, kept between its openings.
"""

from __future__ import annotations

from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.runs import RunRecord


class CompareKey:
    """`c` and what it opens (see the module docstring)."""

    def compared_records(self) -> list[RunRecord]:
        """The runs `c` compares: those marked in History, else all."""
        return [r for r in self.runs.values() if r.selected] or list(self.runs.values())

    def action_compare(self) -> None:
        """The compare screen for the marked runs (all when none is marked); `c` on it
        draws it again with what has arrived since, the variants left out kept."""
        records = self.compared_records()
        if not records:
            self.say_why_not("nothing to compare yet: run something first (r)")
            return
        if not any(r.measured() for r in records):
            which = "the runs marked in History" if any(r.selected for r in self.runs.values()) else "the runs"
            made = "step" if all(r.unit() == "step" for r in records) else "call"
            self.say_why_not(f"nothing to compare yet: {which} made no {made} so far")
            return
        self.refusal_gone()
        if isinstance(self.screen, CompareScreen):
            self.draw_compare_again(records)
            return
        # said at once, built after the screen has shown it: building compare (every run's
        # variants replayed into one builder, the table, the plot) took seconds on a busy
        # machine, the top line unchanged, `c` looking dead (the fourteenth walk); the keys
        # read after `c` wait for compare (key_order.py), as they did when it came at once
        self.say_why_not(comparing_words(records), toast=False)
        self.show_later()
        self.call_after_refresh(self._open_compare, records)

    def draw_compare_again(self, records: list[RunRecord]) -> None:
        """The compare screen shown drawn again: its task and highlighted row kept."""
        task, highlighted = self.screen.compared_task, self.screen.highlighted_name()
        self.pop_screen()
        self.push_screen(CompareScreen(records, self.left_out, task, highlighted, drawn_again=True))

    def stop_said_on_compare(self, record: RunRecord) -> None:
        """`s` on compare: the top line is under compare's title (the fifteenth walk: s there
        stopped the run without a word, the table saying `running` till `c`), so a toast says
        it; the run's end draws compare again (compare_follows_end)."""
        if isinstance(self.screen, CompareScreen):
            self.notify(f"stopping run {record.name}: compare is drawn again once it has stopped")

    def compare_follows_end(self, record: RunRecord) -> None:
        """A run ended while compare is shown: a toast says so, and compare is drawn again
        with what the run measured when it compares that run (its rows said `running`)."""
        if not isinstance(self.screen, CompareScreen):
            return
        shown = record in self.screen.records
        ended = "broke" if record.status == "error" else record.status
        self.notify(f"run {record.name} {ended}" + (": compare drawn again" if shown else ""))
        if shown:
            self.draw_compare_again(self.screen.records)

    def _open_compare(self, records: list[RunRecord]) -> None:
        """The compare screen, built; the top line's `comparing ...` goes with it (escape
        back finds what it said before `c`)."""
        try:
            if self.screen is self.main and not self.closing():
                self.push_screen(CompareScreen(records, self.left_out))
            self.refusal_gone()
        finally:
            self.shown_later()

    def comparable(self) -> bool:
        """Whether `c` can act: a run it would compare made a call or step (the footer offered
        c after a run stopped before its first step, and c then refused)."""
        return any(r.measured() for r in self.compared_records())


def comparing_words(records: list[RunRecord]) -> tuple[str, ...]:
    """`comparing #1, #2 ...`, as compare's tab says it; `comparing 12 runs ...` where the
    runs' numbers would not fit a line."""
    return (f"comparing {', '.join(f'#{r.id}' for r in records)} ...", f"comparing {len(records)} runs ...")
