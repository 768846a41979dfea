"""The app's top line: what is happening, or why a key did nothing.

One line, two when its words need them (a long run name, an export's directory): never
cut. Its second line takes the row of the tab bar's underline (the active tab's label
still stands out), not a row of the view under it: at 80x24 the Watch view's plot lost a
row whenever the top line wrapped.
"""

from __future__ import annotations

from textual.widgets import Static

#: the main screen's class while the top line takes two lines (app.tcss hides the underline)
TWO_LINES = "-status-two-lines"


class StatusLine(Static):
    """The top line; the screen it is on knows when it takes two lines (TWO_LINES)."""

    def on_resize(self) -> None:
        self.screen.set_class(self.size.height > 1, TWO_LINES)
