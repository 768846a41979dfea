"""A plotext plot whose y labels each name the value of the row they sit on.

plotext spreads seven y ticks evenly over the axis's range and draws each on the row its
value falls in. With another number of rows than 7 (or 4, 13 ...) two ticks fall in one
row (the last drawn wins) and the labels name values up to a row away from their own: at
80x24 with a top line of two lines the time plot's six rows read 8169.9, 6811.0, 4093.1,
2734.2, 16.4 (steps of 1359 and 2718 between neighbouring rows). Here the range is fixed
by the drawing code (`show_range`), the rows are counted when the plot is built at its
size (a resize changes them), and a label is put on every `step`-th row from the bottom,
each the value plotext gives that row: fewer labels than rows when they do not all fit,
and the steps between them equal.
"""

from __future__ import annotations

import math

from textual.message import Message
from textual_plotext import PlotextPlot

#: at most this many y labels (plotext's own number)
MAX_LABELS = 7


def axis_range(values: list[float]) -> tuple[float, float]:
    """The y range plotext would take for `values` (its get_lim): their min and max, half
    and one and a half times a single value, -1..1 for none or zero."""
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    if low != high:
        return low, high
    return (0.5 * low, 1.5 * low) if low else (-1.0, 1.0)


def labelled_rows(rows: int) -> list[int]:
    """The rows (0 the bottom) that get a label: every `step`-th from the bottom, the step
    the smallest that leaves at most MAX_LABELS, one that reaches the top row when a step
    one longer would (rows - 1 divisible by it)."""
    if rows < 2:
        return []
    step = max(1, math.ceil((rows - 1) / (MAX_LABELS - 1)))
    if (rows - 1) % step and (rows - 1) % (step + 1) == 0 and (rows - 1) // (step + 1) >= 2:
        step += 1
    return list(range(0, rows, step))


def row_values(low: float, high: float, rows: int) -> list[float]:
    """The value of each labelled row, as plotext places values: row r of `rows` holds
    low + r (high - low) / (rows - 1) (plotext's get_matrix_data puts a value in the row
    whose centre is nearest)."""
    return [low + r * (high - low) / (rows - 1) for r in labelled_rows(rows)]


class RowTickedPlot(PlotextPlot):
    """A PlotextPlot whose y ticks are placed on rows (see the module docstring)."""

    #: (low, high) of the y axis the drawing code fixed; None: no axis drawn (plotext's own)
    _range: tuple[float, float] | None = None
    #: rows the plot takes besides its canvas: the two x axes, the x tick labels, the
    #: title and the x label when they are set (plotext's height_canvas)
    _frame_rows = 3
    #: the canvas rows the drawing code was last told (canvas_rows); None: it asked none
    _told_rows: int | None = None

    class RowsChanged(Message):
        """The plot is drawn on other rows than its drawing code was told (canvas_rows):
        what it worked out from them (which line covers which) must be worked out again.
        The ninth walk: told 10 rows before the plot was laid out, drawn on 11, a series
        said to be seen was covered, with nothing in the key."""

    def show_range(self, values: list[float], title: bool = True, xlabel: bool = True) -> None:
        """Fix the y axis to the range of the `values` drawn, and say which of a title and
        an x label the plot has (each takes a row from the canvas). Called after the plot
        was filled, before it is drawn."""
        self._range = axis_range(values)
        self._frame_rows = 3 + title + xlabel
        self.plt.ylim(*self._range)

    def canvas_rows(self) -> int:
        """The rows the lines are drawn on: the plot's height (its least, before it is laid
        out) less its frame (show_range's title and x label, the axes, the x ticks). Drawn
        on others, the plot posts RowsChanged."""
        height = self.size.height or (self.styles.min_height.value if self.styles.min_height else 0)
        self._told_rows = max(0, int(height) - self._frame_rows)
        return self._told_rows

    def no_range(self) -> None:
        """Nothing drawn on a y axis (a title alone)."""
        self._range = None

    def render(self):
        if self._range is not None:
            rows = self.size.height - self._frame_rows
            values = row_values(*self._range, rows) if rows >= 2 else []
            self.plt.yticks(values)
            if self._told_rows is not None and rows != self._told_rows:
                self._told_rows = None   # told once: the drawing code asks again
                self.post_message(self.RowsChanged())
        return super().render()
