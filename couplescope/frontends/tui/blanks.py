"""What a blank field of the form means, in the words the field shows.

A blank field is an option not given, as on the command line: the preset's value when a
preset sets it, else the declared default. The form shows which, in the field itself (an
Input's placeholder, a Select's prompt, a flag's label): `10 (default)`, `10 000 (preset)`,
`per variant: native, python (preset)`. A list of choices never offers the value its
blank already stands for (the task list read `infer (default)` and `infer`).
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.frontends import formatting as fmt
from couplescope.protocol.option import Option

#: the longest list of a preset's values a field shows; past it, "per variant (preset)"
LONGEST_VALUES = 36


@dataclass(frozen=True)
class Blank:
    """The words a blank field shows, and the one value it stands for (None: no single
    value, or none the field could offer: the model's own size, a value per variant)."""

    words: str
    value: object = None


def value_text(option: Option, value) -> str:
    """A value as the field would hold it: input shapes `8,16;8,1`, flags `on`."""
    if option.kind is bool:
        return "on" if value else "off"
    if option.kind is tuple and isinstance(value, (list, tuple)):
        shapes = value if value and isinstance(value[0], (list, tuple)) else (value,)
        return ";".join(",".join(map(str, shape)) for shape in shapes)
    return str(value)


def value_words(option: Option, value) -> str:
    """A value as words about the field say it (its blank, History's rows): a whole
    number's digits grouped as everywhere else (`10 000 (preset)`, `steps 10 000`); what
    the user types stays as typed (value_text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return fmt.thousands(value)
    return value_text(option, value)


def default_blank(option: Option) -> Blank:
    """The declared default: its own words (`the model's own`), or `VALUE (default)`."""
    if option.default_text:
        return Blank(option.default_text)
    number = isinstance(option.default, int) and not isinstance(option.default, bool)
    words = value_words(option, option.default) if number else option.default_words()
    return Blank(f"{words} (default)", option.default)


def blank_for(option: Option, preset_values: dict[str, list] | None) -> Blank:
    """What the field of `option` means when left blank, with the preset's values (core.
    presets.values_by_option; None: no preset). A sweep option's values are a list (each
    variant has one); another option's several values are per variant."""
    values = (preset_values or {}).get(option.name)
    if not values:
        return default_blank(option)
    shown = [value_words(option, v) for v in values]
    if len(values) == 1:
        return Blank(f"{shown[0]} (preset)", values[0])
    listed = ", ".join(shown)
    if len(listed) > LONGEST_VALUES:
        return Blank("per variant (preset)")
    return Blank(f"{listed} (preset)" if option.sweep else f"per variant: {listed} (preset)")


def offered(choices: list[str], blank: Blank) -> list[str]:
    """The choices a list offers besides its blank: not the one the blank stands for."""
    return [c for c in choices if blank.value is None or c != str(blank.value)]
