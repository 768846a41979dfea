"""The question `q` asks while a run is going: quitting ends the run.

A user who thought they were typing into a field pressed `q` and lost the run going; now
a second `q` (or `y`) is needed, and `escape` (or `n`) goes back to the run. `ctrl+c`
still quits at once, as it does in any terminal program.
"""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class QuitScreen(ModalScreen):
    """Asks before quitting ends the run going; dismissed with True to quit."""

    BINDINGS = [Binding("q,y", "answer(True)", "quit", priority=True,
                        tooltip="quit: the run going stops, and what it measured is lost."),
                Binding("escape,n", "answer(False)", "stay", priority=True, tooltip="go back to the run.")]

    def __init__(self, run_name: str) -> None:
        super().__init__()
        self.run_name = run_name

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box") as box:
            box.border_title = "quit?"
            yield Static(f"Run {escape(self.run_name)} is still going: quitting stops it, and what "
                         "it measured is lost (s stops it; then e exports what it measured).\n\n"
                         "[b]q[/] or [b]y[/] quits · [b]escape[/] or [b]n[/] goes back to the run")

    def action_answer(self, quit_: bool) -> None:
        self.dismiss(quit_)
