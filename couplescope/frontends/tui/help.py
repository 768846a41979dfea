"""The help screen (`?`): the keys, then each view's own paragraph (views/). It owns the keys
while it shows: its footer lists its own, the app's close it and then act."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from couplescope.frontends.tui.footer import SteadyFooter

KEYS = """\
**Keys**

- `r` run what the Pick view describes (refused while a run goes)
- `s` stop the run: ends the worker process; what was measured stays
- `e` export the highlighted run in History (the latest by default), as `--export` does,
  into the Pick view's export folder (`./couplescope-runs` when blank); the top line says
  "exporting" at once, then where it went
- `c` compare the marked runs (all runs when none is marked), one task at a time
  (inference calls, or training steps: `tab` switches when the runs hold both); there
  `space` leaves a variant out or puts it back, `escape` goes back, `c` again draws what
  has arrived since (the highlight kept), `PgDn`, `PgUp`, `Home`, `End` scroll the box plot
  (the table's highlight keeps its box in view), `q` quits. Under the table, why a pair is not ranked (`cannot rank 1 vs 2: 4
  of 4 rounds disturbed by other processes`); one run in rounds: its ratios are from
  same-round pairs (the line under the table says to which box), not the medians' ratio;
  several runs are not paired by round, so their ratios are the medians', each to the fastest of
  its model and size (`alone`: none like it). Its box plot: a row per variant, numbered as the
  table's `box` column; `█` the middle half of the calls, `┃` the median, `├─┤` 5% to
  95%; `▸4.78 ms` a whisker cut at the plot's edge that really ends at 4.78 ms. Where
  the variants hold a sweep (a run's variant at two or more sizes), `v` switches the plot
  between median against size and the boxes
- `space` in History: mark or unmark a run for comparing
- {view_keys} views: {view_titles} (the focus goes back where it was in each)
- `?` this help (`escape`, `q` or `?` closes it; `r`, `s`, `e`, `c` and the view keys close it and act)
- `q` quit; while a run goes, or when runs are not exported, it asks first (quitting
  loses them): `q` again quits, `escape` goes back. `ctrl+c` quits at once as Ctrl-C ends
  a run on the command line: the run going stops, every run not exported is saved (the
  terminal says where), and the exit code is 130 when a run was going
- `escape` elsewhere: leave the field for the tab bar (arrows switch views)

The keys work wherever the focus is: number fields take digits only. A field that takes
words ({word_fields}) keeps letters, and an open list searches with them: `escape` first.
"""


def help_text(views) -> str:
    """The keys, then a paragraph per view (its own `help`), in tab order."""
    from couplescope.frontends.tui.fields import takes_words
    from couplescope.protocol.options import OPTIONS

    keys = KEYS.format(view_keys=" ".join(f"`{v.key}`" for v in views),
                       view_titles=", ".join(v.title for v in views),
                       word_fields=", ".join(o.short_label for o in OPTIONS if takes_words(o)))
    return "\n".join([keys, *(f"**{v.title}**: {v.help}\n" for v in views if v.help)])


#: the app's actions whose keys close the help and then act, as the views' keys did
ACT_AFTER = ("run", "stop", "why_not", "export", "compare", "show_view")
#: the app's actions that are off while the help shows: its own keys answer (its footer lists
#: them; `r` put its toast over the help text, and the footer offered the keys underneath)
OFF_IN_HELP = (*ACT_AFTER, "help", "quit", "leave_field")


class HelpBox(VerticalScroll):
    """The help text's box: its keys scroll it, and the footer says so (one entry for all)."""

    BINDINGS = [Binding("down", "scroll_down", "scroll", key_display="↑↓ PgUp PgDn",
                        tooltip="scroll the help text (up, down, PgUp, PgDn, Home, End).")]


class HelpScreen(ModalScreen):
    """The help text in a box that scrolls (an 80x24 terminal shows a third of it); the
    box's border says so, and it has the focus, so the arrow keys scroll it at once. It owns
    the keys while it shows (CoupleScopeApp.check_action: OFF_IN_HELP): escape, q and `?`
    close it; the app's other keys (r s e c, the views' letters) close it, then act."""

    BINDINGS = [Binding("escape", "app.pop_screen", "close", key_display="esc/q",
                        tooltip="close the help screen (q and ? too; the arrows, PgUp, PgDn, Home and End "
                                "scroll it; r, s, e, c and the views' keys close it, then act)."),
                Binding("q,question_mark", "app.pop_screen", show=False,
                        tooltip="close the help screen (q does not quit from here: escape, then q)."),]

    def __init__(self, views) -> None:
        super().__init__()
        self.views = views

    def compose(self) -> ComposeResult:
        box = HelpBox(id="help-box")
        box.border_title = "couplescope help"
        box.border_subtitle = "↑ ↓ PgUp PgDn scroll · esc closes"
        with box:
            yield Markdown(help_text(self.views))
        # its own keys, over the footer of the screen under it, whose keys it listed
        yield SteadyFooter(show_command_palette=False)

    def on_key(self, event: events.Key) -> None:
        """A key of the app's (ACT_AFTER): the help closes, then the key acts where it was
        pressed from (the app's own bindings are off while the help shows)."""
        bound = self.app._bindings.key_to_bindings.get(event.key, ())
        if any(b.action.split("(", 1)[0] in ACT_AFTER for b in bound):
            event.stop()
            event.prevent_default()
            self.app.pop_screen()
            self.app.simulate_key(event.key)

    def on_screen_resume(self) -> None:
        """Each time it is shown (the app keeps it): from the top, the box focused."""
        box = self.query_one("#help-box")
        box.scroll_home(animate=False)
        box.focus()
