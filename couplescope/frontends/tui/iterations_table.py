"""The watch view's iterations table: the latest calls (or training steps), one fixed-width
row each, numbered as the time plot numbers its points (watch_widgets.CallNumbers)."""

from __future__ import annotations

import collections

from rich.text import Text
from textual.widgets import RichLog

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.watch_widgets import KIND_SHORT, MAX_TABLE_ROWS, CallNumbers

#: a row of the iterations table: the call's number (CallNumbers, grouped as every number
#: the app writes: `10 001`, where the status line read `10 010` beside `10001 timed`), its
#: kind, time, error (a training step's loss) and check. A space before the number, however
#: many digits it has: `│158348 timed` ran into the border. The time's 8 columns hold the
#: widest formatting.seconds writes (`12.30 ms`, `600.0 s`): the column they gave up lies
#: between the check and the scroll bar (table_width).
ROW_FORMAT = " {:>{digits}} {:<5} {:>8} {:>11} {}"
#: the number's columns, at least: `999 999` (the table is as wide as its box holds with these)
DIGITS = 7
MAX_ROWS_PER_DRAW = 200


def number_digits(calls: int | None) -> int:
    """The columns the number column needs for a variant of `calls` calls (None: unknown),
    its digits grouped."""
    return max(DIGITS, len(fmt.thousands(calls or 0)))


def table_header(training: bool = False, digits: int = DIGITS) -> str:
    """The header over the rows; over a training run's steps, the loss where a call has its
    check's error."""
    return ROW_FORMAT.format("#", "kind", "time", "loss" if training else "max rel err", "check", digits=digits)


def table_width(digits: int) -> int:
    """The columns a row takes (its check is PASSED or FAILED), a blank column after it and
    its scroll bar's (the bar against the check read `PASSED▂`: the eleventh walk)."""
    return len(ROW_FORMAT.format("", "", "", "", "PASSED", digits=digits)) + 2


TABLE_HEADER = table_header()
TRAINING_HEADER = table_header(training=True)


class IterationsTable(RichLog):
    """The latest iterations (up to MAX_TABLE_ROWS) with PASSED/FAILED and the maximum relative error.

    A log of fixed-width rows under a header line, not a DataTable: rows are rendered
    once, when written, and scrolling is cheap, where a DataTable re-renders every cell
    of its visible rows whenever one is added (measured: the largest CPU cost of the app
    while a run goes, CPU the worker's cores need). Rows are written on the app's tick,
    at most MAX_ROWS_PER_DRAW at a time: during a flood of fast iterations it shows the
    latest of them, while every iteration is in the statistics and the plot; a line where
    the rows left out would be says how many and which (a 204-call variant's table began
    at `5 timed`, and nothing said where 1 to 4 were).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=MAX_TABLE_ROWS, min_width=40, wrap=False, auto_scroll=True, **kwargs)
        self._pending: list = []   # (number, call) since the last tick
        self.unit = "calls"        # what a row is: "steps" for a training variant
        self.checks: collections.deque = collections.deque(maxlen=MAX_TABLE_ROWS)  # PASSED/FAILED shown
        self._numbers = CallNumbers()   # as the plot numbers its points
        self.digits = DIGITS            # the number column's (number_digits)

    def on_mount(self) -> None:
        self.anchor()   # its latest row in view when its height changes too (DiagnosticsLog)

    def add_variant(self, name: str) -> None:
        """A new variant starts: the table follows it, like the plot and the statistics."""
        self.clear_rows()

    def add_iterations(self, evs: list[dict]) -> None:
        self._pending.extend((self._numbers.number(ev)[0], ev) for ev in evs)   # every call counts

    def flush(self) -> None:
        """Write what arrived since the last tick, as one block."""
        if not self._pending:
            return
        text = Text()
        left_out, pending = self._pending[:-MAX_ROWS_PER_DRAW], self._pending[-MAX_ROWS_PER_DRAW:]
        if left_out:   # (MPI ranks share a number: a number written below is not left out)
            first, last = left_out[0][0], min(left_out[-1][0], pending[0][0] - 1)
            which = (f"{self.unit} {fmt.thousands(first)}–{fmt.thousands(last)}" if last > first
                     else f"{self.unit.removesuffix('s')} {fmt.thousands(first)}")
            if last >= first:   # `… calls 1–4 not listed`: narrower than the rows, never cut
                text.append(f" … {which} not listed", style="dim")
        for number, ev in pending:
            check = "PASSED" if ev["passed"] else "FAILED"
            self.checks.append(check)
            if len(text):
                text.append("\n")
            # a training step shows its loss where a call shows its check's error
            value = fmt.sci(ev["loss"]) if ev.get("loss") is not None else fmt.sci(ev["max_rel_error"])
            text.append(ROW_FORMAT.format(fmt.thousands(number), KIND_SHORT.get(ev["kind"], ev["kind"]),
                                          fmt.seconds(ev["seconds"]), value, "", digits=self.digits))
            text.append(check, style="bold green" if ev["passed"] else "bold red")
        self._pending.clear()
        self.write(text)

    def clear_rows(self) -> None:
        self.clear()
        self._pending.clear()
        self.checks.clear()
        self._numbers = CallNumbers()
