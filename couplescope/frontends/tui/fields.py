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

from textual.content import Content
from textual.widgets import Checkbox, Input, Select

from couplescope.protocol.options import Option

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
    arguments) takes letters as text: escape leaves it."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        if character is None or not character.isprintable():
            return False
        if self.restrict:
            return re.fullmatch(self.restrict, character) is not None
        if self.type in _TYPED_CHARS:
            return re.fullmatch(_TYPED_CHARS[self.type], character) is not None
        return True


class Flag(Checkbox):
    """A Checkbox that reads `[x]` / `[ ]`, as the backends list does: Textual's own `▐X▌`
    differs only in colour, which a 256-colour tmux or a plain capture does not show."""

    @property
    def _button(self) -> Content:
        style = self.get_visual_style("toggle--button")
        return Content.assemble(("[x]" if self.value else "[ ]", style))


def sweep_choices(option: Option, choices=None) -> list[str]:
    """A sweep option's choices (its declared ones, or `choices` known at run time), and
    all of them at once (native,python: a variant each)."""
    choices = list(option.choices or () if choices is None else choices)
    if option.sweep and 1 < len(choices) <= 3:
        choices.append(",".join(choices))
    return choices


def takes_words(option: Option) -> bool:
    """Whether the option's field is free text, which keeps letters (escape leaves it)."""
    return (option.kind is not bool and option.choices is None and option.source is None
            and option.name not in RESTRICT and option.kind not in _TYPED)


def placeholder(option: Option) -> str:
    words = option.default_words()
    return words if option.default_text else f"default {words}"


def widget_for(option: Option, value=None, choices=None):
    """The field of one option, holding `value` (what the command line or preset gave);
    `choices` for an option whose choices are known at run time (its `source`)."""
    if option.kind is bool:
        return Flag("", bool(value), id=option.name, compact=True, tooltip=option.help)
    if option.choices is not None or choices is not None:
        choices = sweep_choices(option, choices)
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        return Select([(c, c) for c in choices], id=option.name, compact=True,
                      prompt=f"{option.default_words()} (default)" if not option.default_text
                      else option.default_text,
                      value=value if value in choices else Select.NULL, tooltip=option.help)
    text = "" if value is None else (",".join(map(str, value)) if isinstance(value, (list, tuple))
                                     and option.kind is not tuple else _text(option, value))
    kwargs = {}
    if option.name in RESTRICT:
        kwargs["restrict"] = RESTRICT[option.name]
    elif option.kind in _TYPED:
        kwargs["type"] = _TYPED[option.kind]
    return FieldInput(text, id=option.name, placeholder=placeholder(option), compact=True,
                      tooltip=option.help, **kwargs)


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
    text = widget.value.strip().strip(",")
    if not text:
        return None
    return option.parse_list(text) if option.sweep else option.parse(text)
