"""The form's backends list: a box per backend, what cannot run here, what a preset runs.

A row reads `[x] bridge` (runs), `[ ] torchscript (preset)` (the preset runs it while no
box is ticked) or `[-] mpi  unavailable: mpi4py is not installed` (the first clause of
the reason; the whole reason is written under the list). Once a box is ticked no row is
marked `(preset)`: the ticked backends run every variant of the preset, in place of its
own (`[x] torchscript (preset)` read as if the preset had ticked it).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.containers import ScrollableContainer
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import SelectionList
from textual.widgets.option_list import OptionDoesNotExist

from couplescope.frontends.tui.fields import StopsAtEnds

#: the longest "why not" shown beside a backend's name; the full reason goes under the list
SHORT_REASON = 32


def short_reason(reason: str) -> str:
    """The first clause of an unavailable reason ("mpi4py is not installed: pip ...")."""
    head = reason.split(":", 1)[0].strip()
    return head if len(head) <= SHORT_REASON else head[:SHORT_REASON - 1] + "…"


def row_prompt(name: str, reason: str | None, in_preset: bool) -> Text:
    """A backend's row after its box. Text, not markup: reasons hold brackets
    ('couplescope[mpi]')."""
    prompt = Text(name)
    if reason:
        prompt.append(f"  unavailable: {short_reason(reason)}", style="dim")
    elif in_preset:
        prompt.append("  (preset)", style="dim")
    return prompt


def heading(preset: bool, ticked: bool = False) -> str:
    """The words over the list: what a tick does, and what runs while none is ticked, said
    only while none is (`none ticked: the preset's` over a ticked box read as contradicting
    it)."""
    if preset:
        return ("backends ([x] runs each of the preset's variants; space toggles)" if ticked else
                "backends (none ticked: the preset's; a tick runs its variants with it)")
    return "backends ([x] runs; space toggles" + (")" if ticked else "; none ticked: torchscript)")


class CheckList(StopsAtEnds, SelectionList):
    """A SelectionList whose boxes read `[x]` / `[ ]` (`[-]` when unavailable).

    Textual's own toggle button is `▐X▌` drawn in two colours: in a 256-colour tmux or a
    plain capture a ticked box and an empty one look the same. Characters do not depend
    on the terminal's colours; the colour only adds to them. Its highlighted row shows
    only while it has the focus (app.tcss): a row highlighted in a list the keys do not
    reach said that space would tick it. Up and down stop at its ends, as the open lists
    do (StopsAtEnds); space ticks the row it was typed on (on_option_list_option_selected).
    """

    def _on_option_list_option_selected(self, event) -> None:
        """Toggle the row the space (or click) selected. SelectionList toggles the row
        highlighted when this message is handled, after the keys typed with the space:
        `space down`, read at once from a terminal, ticked the row below (textual#6605's
        family: a bound key's effect lands after later keys)."""
        event.stop()
        event.prevent_default()   # (SelectionList's own handler would toggle the highlighted row too)
        self.toggle(event.option)

    def render_line(self, y: int) -> Strip:
        line = super(SelectionList, self).render_line(y)   # the prompt, as OptionList draws it
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return line
        base = next(iter(line)).style or self.rich_style
        index = Style(meta={"option": self.scroll_offset.y + y})
        if option.disabled:
            box, style = "[-]", base + Style(dim=True)
        elif option.value in self._selected:
            box, style = "[x]", base + Style(bold=True, color="green")
        else:
            box, style = "[ ]", base
        return Strip([Segment(box, style + index), Segment(" ", base), *line])

    def on_focus(self) -> None:
        """Highlight the first backend on focus: with no row highlighted, the first space
        did nothing."""
        if self.highlighted is None:
            self.action_first()
        self.show_highlighted()

    def on_option_list_option_highlighted(self, event) -> None:
        # only while the keys are here: filled again (a preset chosen) or highlighted on
        # mount, the list scrolled the page to its row, the preset's field off the top
        if self.has_focus:
            self.show_highlighted()

    def show_highlighted(self) -> None:
        """Scroll the page around the list (the form's fields) so that the highlighted row
        is on the screen: the list scrolls only its own rows, and a row moved to below the
        page's edge (the page scrolled with the wheel, the Run line grown under it) took
        the keys unseen."""
        page = next((a for a in self.ancestors if isinstance(a, ScrollableContainer)), None)
        if page is None or self.highlighted is None or not self.region.height:
            return
        row = self.virtual_region.y + self.highlighted - round(self.scroll_offset.y)
        page.scroll_to_region(Region(0, row, 1, 1), animate=False, immediate=True)

    _status: dict[str, str | None] = {}
    _preset_backends: tuple = ()

    def fill(self, status: dict[str, str | None], preset_backends=()) -> None:
        """Every backend's row (status: name -> why it cannot run here, or None), the
        ticks kept where the backend can run."""
        chosen = set(self.selected)
        highlighted = self.highlighted
        self._status, self._preset_backends = dict(status), tuple(preset_backends)
        self.clear_options()
        for name, reason in status.items():
            self.add_option((row_prompt(name, reason, False), name, name in chosen and not reason))
            if reason:
                self.get_option_at_index(self.option_count - 1).disabled = True
        self.mark_preset()
        if highlighted is not None and highlighted < self.option_count:
            self.highlighted = highlighted
        elif self.has_focus:
            self.action_first()

    def mark_preset(self) -> None:
        """`(preset)` beside the preset's backends while none is ticked (they run then);
        none once one is (the ticked ones run instead)."""
        marked = () if self.selected else self._preset_backends
        for index in range(self.option_count):
            name = self.get_option_at_index(index).value
            self.replace_option_prompt_at_index(index, row_prompt(name, self._status.get(name),
                                                                  name in marked))

    def on_selection_list_selected_changed(self, event) -> None:
        self.mark_preset()   # (the event goes on to the form, which redraws the Run line)
