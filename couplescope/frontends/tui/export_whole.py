"""The line under Pick's export field with the whole folder, when the field cannot show it.

An Input longer than its field shows its end, the start cut with no mark (the fifteenth
walk: `ry-name-for-exports/...`, the `/tmp/walk15/a-very-long-directo` gone); Textual's
Input has no ellipsis. So, only then, the folder is written whole under the field, broken
after a `/` as History writes an exported path (views.history.path_pieces).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Input, Static

from couplescope.frontends.tui.views.history import path_pieces


class ExportWhole(Static):
    """Hidden while the export field shows its value whole; else `e writes to:` and the folder."""

    DEFAULT_CSS = """
    ExportWhole { height: auto; color: $text-muted; display: none; }
    """

    def on_mount(self) -> None:
        self.call_after_refresh(self.follow)

    def on_resize(self) -> None:   # the field narrower or wider with the terminal
        self.call_after_refresh(self.follow)

    def follow(self) -> None:
        """Shown, with the folder, where the field's value is wider than its field."""
        field = self.screen.query_one("#export", Input)
        value, room = field.value.strip(), field.content_size.width
        self.display = bool(room) and len(value) >= room
        if self.display:
            width = max(20, (self.content_size.width or self.app.size.width) - 1)
            self.update(Text("\n".join(path_pieces(f"e writes to: {value}", width))))
