"""The form's fields with a preset chosen: what each means blank (the preset's value),
what choosing a preset clears, and which of its settings a field overrides.

A part of the form (PickForm inherits it), as the app's export_key.py is of the app: it
reads the form's fields, its `preset_values` and its `blank()`.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Checkbox, Input, Label, Select, SelectionList

from couplescope.frontends.tui import fields
from couplescope.frontends.tui.backends_list import CheckList, heading
from couplescope.frontends.tui.blanks import Blank, blank_for
from couplescope.frontends.tui.fields import BACKEND, offered
from couplescope.protocol import options as declared
from couplescope.protocol.errors import UsageError


def model_blank(preset_values: dict | None) -> Blank:
    """What the model list says with no model picked: the preset's models run, or one must be picked."""
    if preset_values is None:
        return Blank("(pick one)")
    return blank_for(declared.get("model"), preset_values)


def name_blank(preset_values: dict | None) -> Blank:
    """The name field's blank: a preset of several variants keeps their names, and a name
    typed there is put before each (core.request.build), as the Run line then shows."""
    names = (preset_values or {}).get("name") or []
    if len(names) > 1:
        return Blank("the preset's; typed: NAME-<its name>")
    return blank_for(declared.get("name"), preset_values)


def preset_values(preset: str | None) -> dict | None:
    """What the preset sets, by option (core.presets.values_by_option); None without one,
    or for a preset file that cannot be read (the Run line says why)."""
    if not preset:
        return None
    from couplescope.core import presets

    try:
        return presets.values_by_option(preset)
    except UsageError:
        return {}


class PresetFields:
    """The preset's side of the form (see the module docstring)."""

    def _fill_backends(self) -> None:
        backends = (self.preset_values or {}).get(BACKEND, ())
        self.query_one("#backends", CheckList).fill(self.backend_status, backends)

    def show_preset(self, preset: str | None) -> None:
        """Every blank field says what it means with this preset (or without one): its
        value, marked `(preset)`, else the default; the lists stop offering what their
        blank already is; the backends the preset runs are marked."""
        self.preset_values = preset_values(preset)
        for option in declared.OPTIONS:
            if option.name == BACKEND or not offered(option):
                continue
            widget = self.query_one(f"#{option.name}")
            if isinstance(widget, Select):
                self._offer(option)
            elif isinstance(widget, fields.Flag):
                widget.label = fields.flag_label(self.blank(option))
            else:
                widget.placeholder = self.blank(option).words
        self._fill_backends()
        self.show_backends_heading()
        self.update_size_hint()

    def show_backends_heading(self) -> None:
        """The words over the backends list, true to its ticks (backends_list.heading)."""
        words = heading(self.preset_values is not None, bool(self.query_one("#backends", CheckList).selected))
        self.query_one("#backends-heading", Label).update(Text(words))

    def clear_what_the_preset_sets(self, values: dict) -> None:
        """A preset chosen in the form: the fields it sets show its values, not what was
        typed or ticked before it (iterations 200 and a ticked torchscript stayed, and
        read as the preset's). A field filled in afterwards overrides it, as an option does
        on the command line; the fields it does not set keep what they hold."""
        for option in declared.OPTIONS:
            if not values.get(option.name) or not offered(option):
                continue
            if option.name == BACKEND:
                with self.prevent(SelectionList.SelectedChanged):
                    self.query_one("#backends", SelectionList).deselect_all()
                continue
            widget = self.query_one(f"#{option.name}")
            with self.prevent(Select.Changed, Input.Changed, Checkbox.Changed):
                if isinstance(widget, Select):
                    widget.clear()
                elif isinstance(widget, Checkbox):
                    widget.value = False
                else:
                    widget.value = ""

    def overridden(self) -> list[str]:
        """The preset's settings a field overrides, in words for the Run line: `iterations
        50 in place of 10 000 (preset)` (the field no longer shows the preset's value)."""
        if not self.preset_values:
            return []
        words = []
        for option in declared.OPTIONS:
            if (option.name in (BACKEND, "model", "name") or not self.preset_values.get(option.name)
                    or not offered(option)):
                continue
            widget = self.query_one(f"#{option.name}")
            try:
                value = fields.read(option, widget)
            except UsageError:
                continue
            if value is not None:
                shown = widget.value if isinstance(widget, (Input, Select)) else "on"
                words.append(f"{option.short_label} {shown} in place of {self.blank(option).words}")
        return words
