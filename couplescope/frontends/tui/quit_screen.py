"""`q`, and the question it asks when quitting loses something: a run going, or runs not
exported.

A user who thought they were typing into a field pressed `q` and lost the run going; one
who had not exported lost every run of the session without a word (the app's runs live in
a temporary folder until `e` copies them out). Now a second `q` (or `y`) is needed, and
`escape` (or `n`) goes back. `ctrl+c` still quits at once, as it does in any terminal
program.
"""

from __future__ import annotations

from rich.markup import escape
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from couplescope.frontends.tui.footer import SteadyFooter


class QuitKey:
    """`q` and what answers it: a part of the app (CoupleScopeApp inherits it), as
    export_key.py is; it reads the app's runs and stops the run going."""

    async def action_quit(self) -> None:
        """q: quits at once with nothing to lose; with a run going, or runs that measured
        something not exported, asks first (QuitScreen: a second q quits), since quitting
        ends the run, and the runs not exported live in a temporary folder."""
        unsaved = [r.name for r in self.runs.values()
                   if r is not self.active and not r.export_path and r.measured()]
        if isinstance(self.screen, QuitScreen):
            self.screen.dismiss(True)
        elif self.active is not None:
            self.push_screen(QuitScreen(going(self.active.name, unsaved)), self._quit_if)
        elif unsaved:
            self.push_screen(QuitScreen(not_exported(unsaved)), self._quit_if)
        else:
            await self.action_quit_now()

    async def _quit_if(self, answer: bool | None) -> None:
        if answer:
            await self.action_quit_now()

    async def action_quit_now(self) -> None:
        """Quit, losing what q asked about. A run going is stopped first, on a thread, the top
        line saying so (the screen froze, then went blank, while its worker was ended), and
        its end closes the app (on_run_ended)."""
        if self.active is not None and not self.active.done.is_set():
            self._quitting = True
            self.begin_stop("q", f"quitting: stopping the worker of {self.active.name} ...")
            return
        self.exit()

    def asking(self) -> bool:
        """Whether the quit question is on the screen: then only its answers (and ctrl+c)
        act, so its footer lists them only (`c` opened compare over it, a view key closed
        it unanswered, and the footer offered r, e and c)."""
        return isinstance(self.screen, QuitScreen)


class QuitScreen(ModalScreen):
    """Asks before quitting ends the run going; dismissed with True to quit."""

    BINDINGS = [Binding("q,y", "answer(True)", "quit", priority=True,
                        tooltip="quit: the run going stops, and what the question names is lost."),
                Binding("escape,n", "answer(False)", "stay", priority=True, tooltip="go back to the app.")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question   # what quitting loses (markup): going(), not_exported()

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box") as box:
            box.border_title = "quit?"
            yield Static(f"{self.question}\n\n[b]q[/] or [b]y[/] quits · [b]escape[/] or [b]n[/] goes back")
        # its own keys (the app's are off while it asks: CoupleScopeApp.check_action), over
        # the views' footer, which offered r, e and c
        yield SteadyFooter(show_command_palette=False)

    def on_key(self, event: events.Key) -> None:
        """Another key: the question first (the app's keys are off while it asks)."""
        if event.is_printable:
            self.notify("the question first: q or y quits, escape or n goes back", severity="warning")

    def action_answer(self, quit_: bool) -> None:
        self.dismiss(quit_)


def going(run_name: str, unsaved: list[str] = ()) -> str:
    """What quitting loses while a run goes: that run, and the runs not exported (`unsaved`:
    the question named the run going only, and quitting lost the others too). Its way out
    starts with escape: only the answers act while it asks (it said "s stops it", and s was
    refused). Its last line: ctrl+c saves them and quits (KEEPS)."""
    text = (f"Run {escape(run_name)} is still going: quitting stops it, and what it measured "
            "is lost (escape, then s stops it and e exports what it measured).")
    if unsaved:
        return f"{text}\n{not_exported(unsaved, ' too', keeps='them all')}"
    return f"{text}\n{KEEPS.format('what it measured')}"


#: the quit question's last line: ctrl+c saves what q loses, and quits (endings.py), which
#: the question did not say (the eleventh walk: it said "quitting loses them", and ctrl+c
#: then saved five runs)
KEEPS = "[b]ctrl+c[/] saves {} and quits (the terminal then says where)"


def not_exported(names: list[str], too: str = "", keeps: str | None = None) -> str:
    """What quitting loses when runs that measured something were not exported, and that
    ctrl+c keeps them (`keeps`: the words for what it saves)."""
    runs = ", ".join(escape(n) for n in names)
    one = len(names) == 1
    said = (f"{'Run' if one else 'Runs'} {runs} {'is' if one else 'are'} not exported: quitting "
            f"loses {'it' if one else 'them'}{too} (e exports the run highlighted in History, h).")
    return f"{said}\n{KEEPS.format(keeps or ('it' if one else 'them'))}"
