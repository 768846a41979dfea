"""The form's fields, one per declared option (couplescope.protocol.options).

An option becomes a widget by its declaration: fixed choices a Select (a sweep option's
also offers all of them at once), a number an Input that takes digits, a flag a
Checkbox, anything else a text Input. The widget's id is the option's name, so the form
reads every field the same way back (`read`), and the value goes through the option's
own parse: the form checks nothing itself. Choices known only at run time (`source`:
models, devices, backends) are filled in by the form from the catalogue.
"""

from __future__ import annotations

import re

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.validation import ValidationResult, Validator
from textual.widgets import Checkbox, Input, Select
from textual.widgets._select import SelectOverlay   # (Select's open list: no public name)

from couplescope.frontends.tui.blanks import Blank, default_blank, offered as offered_choices
from couplescope.protocol.errors import UsageError
from couplescope.protocol.options import Option

#: the option the backends list is (a list of boxes, not a field of the grid)
BACKEND = "backend"
#: what a number field accepts as it is typed (the declaration checks the value)
_TYPED = {int: "integer", float: "number"}
#: the characters a text field of its own form takes: letters stay free for the app's keys
RESTRICT = {"size": r"[0-9,]*", "input_shape": r"[0-9,;x]*"}


#: the characters a typed number field takes, one at a time (Input's own `type` patterns
#: match whole values): no letters, so the app's keys pass (an exponent is not typeable)
_TYPED_CHARS = {"integer": r"[-+0-9]", "number": r"[-+0-9.]"}


class FieldInput(Input):
    """A text field that claims only the characters it accepts.

    Textual's Input claims every printable key while it has the focus
    (`check_consume_key`): the app's letter bindings (r, q, ?, w ...), even priority ones,
    are then skipped and the footer hides them. A field restricted to digits (a number, a
    size list, an input shape) claims only what its `restrict` or `type` lets in, so the
    letter keys work wherever the focus is (docs/tui.md). A free-text field (launcher
    arguments) takes letters as text: escape leaves it, and the footer says so (it showed
    only the palette's key there: the app's keys are letters the field takes)."""

    BINDINGS = [Binding("escape", "leave", "leave the field",
                        tooltip="the focus leaves the field for the tab bar, and the app's keys (r, q ...) "
                                "work again; the footer shows this key in such a field only.")]

    @property
    def takes_words(self) -> bool:
        """Whether it takes letters as text (the app's letter keys do not reach it)."""
        return not self.restrict and self.type not in _TYPED_CHARS

    def check_action(self, action: str, parameters) -> bool | None:
        """Its escape only where it takes words (elsewhere the app's, not in the footer:
        the app's keys are there)."""
        return self.takes_words if action == "leave" else super().check_action(action, parameters)

    def action_leave(self) -> None:
        self.app.action_leave_field()

    async def _on_key(self, event: events.Key) -> None:
        """Its own bound keys (backspace, delete, the arrows, home ...) act here, in the
        order typed. Textual's Input types a printable key where it gets it but runs a
        bound key's action only once the key has bubbled up to the app, so a key that
        arrives with it (a terminal sends backspace-then-7 as "\\x7f7", one read) was typed
        first: the backspace then took the 7 away, both keys lost (textual#6605; the
        same cure is proposed upstream, textual#6631). Priority bindings (the app's) were
        already checked before the key reached the field."""
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.node is not self or active.binding.priority or not active.enabled:
            return                                      # Input's own handling: typing
        event.stop()
        event.prevent_default()
        await self.app.run_action(active.binding.action, self)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        if character is None or not character.isprintable():
            return False
        if self.restrict:
            return re.fullmatch(self.restrict, character) is not None
        if self.type in _TYPED_CHARS:
            return re.fullmatch(_TYPED_CHARS[self.type], character) is not None
        return True


class Declared(Validator):
    """A field's value as its option's declaration judges it: only a value the run would
    refuse is invalid (and marked so); a blank field is the default, never invalid."""

    def __init__(self, option: Option) -> None:
        super().__init__()
        self.option = option

    def validate(self, value: str) -> ValidationResult:
        try:
            parse_text(self.option, value)
        except UsageError as exc:
            return self.failure(str(exc))
        return self.success()


class StopsAtEnds:
    """An OptionList (mixed in) whose up and down stop at its first and last enabled rows.
    Textual's OptionList wraps round: up on the first preset's row jumped to the last one
    (stride512), so a user reaching for the top picked a preset they never saw; the
    backends list went from mpi to torchscript."""

    def _move(self, direction: int) -> None:
        if self.highlighted is None:
            return super().action_cursor_down() if direction > 0 else super().action_cursor_up()
        index = self.highlighted + direction
        while 0 <= index < self.option_count and self.get_option_at_index(index).disabled:
            index += direction
        if 0 <= index < self.option_count:
            self.highlighted = index

    def action_cursor_up(self) -> None:
        self._move(-1)

    def action_cursor_down(self) -> None:
        self._move(1)


class EndingList(StopsAtEnds, SelectOverlay):
    """A Select's open list that stops at its first and last rows (StopsAtEnds); its escape
    in the footer's words, lower case as every other key's (Textual's `Dismiss menu`)."""

    BINDINGS = [Binding("escape", "dismiss", "close the list", tooltip="close the list, its value unchanged.")]


class Choice(Select):
    """The form's list field: a Select whose open list stops at its ends (EndingList)."""

    def compose(self):
        for widget in super().compose():
            yield (EndingList(type_to_search=self._type_to_search).data_bind(compact=Select.compact)
                   if isinstance(widget, SelectOverlay) else widget)


class Flag(Checkbox):
    """A Checkbox that reads `[x]` / `[ ]`, as the backends list does: Textual's own `▐X▌`
    differs only in colour, which a 256-colour tmux or a plain capture does not show."""

    @property
    def _button(self) -> Content:
        style = self.get_visual_style("toggle--button")
        return Content.assemble(("[x]" if self.value else "[ ]", style))


def offered(option) -> bool:
    """Whether the form shows this option's field: always, or only where what it needs is
    present (--nodes: a Slurm, srun on PATH). The command line takes it everywhere."""
    if option.offered == "slurm":
        from couplescope.backends.mpi import slurm

        return slurm.present()
    return True


def sweep_choices(option: Option, choices=None, given=None) -> list[str]:
    """A sweep option's choices (its declared ones, or `choices` known at run time), and
    all of them at once (native,python: a variant each); `given`, what the command line
    gave, is one of them too (`--host native,python` of five hosts was dropped, the field
    on its default and the Run line counting half the variants: the fifteenth walk)."""
    choices = list(option.choices or () if choices is None else choices)
    if option.sweep and 1 < len(choices) <= 3:
        choices.append(",".join(choices))
    if option.sweep and isinstance(given, (list, tuple)) and len(given) > 1:
        given = ",".join(map(str, given))
        if given not in choices:
            choices.append(given)
    return choices


def takes_words(option: Option) -> bool:
    """Whether the option's field is free text, which keeps letters (escape leaves it)."""
    return (option.kind is not bool and option.choices is None and option.source is None
            and option.name not in RESTRICT and option.kind not in _TYPED)


def flag_label(blank: Blank) -> str:
    """A flag's label: what its unticked box means when that is not plain off (a preset's on)."""
    return blank.words if blank.value is True else ""


def widget_for(option: Option, value=None, choices=None, blank: Blank | None = None):
    """The field of one option, holding `value` (what the command line gave); `choices` for
    an option whose choices are known at run time (its `source`); `blank`: what the field
    means left blank (blanks.py: the preset's value, else the default)."""
    blank = blank or default_blank(option)
    if option.kind is bool:
        return Flag(flag_label(blank), bool(value), id=option.name, compact=True, tooltip=option.help)
    if option.choices is not None or choices is not None:
        choices = offered_choices(sweep_choices(option, choices, value), blank)
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        return Choice([(c, c) for c in choices], id=option.name, compact=True, prompt=blank.words,
                      value=value if value in choices else Select.NULL, tooltip=option.help)
    text = "" if value is None else (",".join(map(str, value)) if isinstance(value, (list, tuple))
                                     and option.kind is not tuple else _text(option, value))
    kwargs = {}
    if option.name in RESTRICT:
        kwargs["restrict"] = RESTRICT[option.name]
    elif option.kind in _TYPED:
        kwargs["type"] = _TYPED[option.kind]
    return FieldInput(text, id=option.name, placeholder=blank.words, compact=True, tooltip=option.help,
                      validators=[Declared(option)], valid_empty=True, **kwargs)


def _text(option: Option, value) -> str:
    if option.kind is tuple:   # input shapes: ((8, 16), (8, 1)) -> "8,16;8,1"
        return ";".join(",".join(map(str, shape)) for shape in value)
    return str(value)


def read(option: Option, widget):
    """The field's value through the option's parse (a sweep option's: a list), or None
    when it is blank, unticked or on its default prompt. Raises UsageError."""
    if isinstance(widget, Checkbox):
        return True if widget.value else None
    if isinstance(widget, Select):
        value = widget.value
        if not isinstance(value, str):
            return None
        return option.parse_list(value) if option.sweep else option.parse(value)
    return parse_text(option, widget.value)


def parse_text(option: Option, text: str):
    """A text field's value through its option's parse; None when blank. Raises UsageError."""
    text = text.strip().strip(",")
    if not text:
        return None
    return option.parse_list(text) if option.sweep else option.parse(text)
