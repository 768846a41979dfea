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
from couplescope.frontends.tui.blanks import Blank, blank_for, value_words
from couplescope.frontends.tui.fields import BACKEND
from couplescope.protocol import options as declared
from couplescope.protocol.errors import UsageError

#: fields the Run line says in words of its own (the variants' names and number)
NAMED_APART = {BACKEND, "model", "name"}
#: fields the Run line says in words of its own (the task, the rounds, a reload), or that
#: change where things go, not what runs: named only over a preset's value
SAID_ELSEWHERE = {"task", "export", "save_model", "baseline", "telemetry_hz",
                  "memory_limit", "order_seed", "ftorch_dir", "forpy_source", "pytorch_fortran_dir", "fc",
                  "rounds", "reload_every_call"}
#: what the Run line counts (`300 timed steps + 10 warm-up`): named only over a preset's
COUNTED = {"warmup", "iterations", "profile_iterations"}


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


def filled_words(option, value, widget) -> str:
    """A field's value as the Run line names it: whole numbers grouped as everywhere else
    (`size 1 024`, `iterations 10 000`: the size field's blank says `1 024 (model's own)`),
    other values as typed, a flag `on`."""
    numbers = value if isinstance(value, list) else [value]
    if all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return ",".join(value_words(option, n) for n in numbers)
    return widget.value if isinstance(widget, (Input, Select)) else "on"


class PresetFields:
    """The preset's side of the form (see the module docstring)."""

    #: the options whose fields the form built (PickForm._fields)
    fields_built: frozenset[str] = frozenset()

    def offers(self, option) -> bool:
        """Whether the form has this option's field: decided once, when it was built."""
        return option.name in self.fields_built

    def _fill_backends(self) -> None:
        backends = (self.preset_values or {}).get(BACKEND, ())
        self.query_one("#backends", CheckList).fill(self.backend_status, backends)

    def show_preset(self, preset: str | None) -> None:
        """Every blank field says what it means with this preset (or without one): its
        value, marked `(preset)`, else the default; the lists stop offering what their
        blank already is; the backends the preset runs are marked."""
        self.preset_values = preset_values(preset)
        for option in declared.OPTIONS:
            if option.name == BACKEND or not self.offers(option):
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

    def given_on_the_command_line(self, option):
        """What the command line (the app's caller) gave `option`, as its field reads it
        (None: nothing)."""
        a = self.initial
        if option.scope == declared.RUN:
            return getattr(a, option.name, None)
        if option.sweep:
            return {"size": a.sizes, "host": a.hosts, BACKEND: a.backends}.get(option.name)
        return a.overrides.get(option.name)

    def holds_the_command_line_s(self, option, widget) -> bool:
        """Whether the field holds what the command line gave (`--iterations 100`)."""
        given = self.given_on_the_command_line(option)
        if given is None:
            return False
        if option.name == BACKEND:
            return sorted(widget.selected) == sorted(given)
        try:
            return fields.read(option, widget) == given
        except UsageError:
            return False

    def clear_what_the_preset_sets(self, values: dict) -> None:
        """A preset chosen in the form: the fields it sets show its values, not what was
        typed or ticked before it (iterations 200 and a ticked torchscript stayed, and
        read as the preset's). A field filled in afterwards overrides it, as an option does
        on the command line; the fields it does not set keep what they hold. What the
        command line gave stays, as `--preset P --iterations 100` would run any preset P
        (`--preset simplenet --iterations 100`, then simplenet-train picked: it ran 10 000
        steps, the eleventh walk); the Run line names it (`iterations 100 in place of
        10 000 (preset)`). Returns what it cleared, in words (`iterations 300`): said on
        the top line (gone without a word, the twelfth walk)."""
        cleared = []
        for option in declared.OPTIONS:
            if not values.get(option.name) or not self.offers(option):
                continue
            widget = self.query_one("#backends" if option.name == BACKEND else f"#{option.name}")
            if self.holds_the_command_line_s(option, widget):
                continue
            if option.name == BACKEND:
                if widget.selected:
                    cleared.append(f"{option.short_label} {', '.join(widget.selected)}")
                with self.prevent(SelectionList.SelectedChanged):
                    widget.deselect_all()
                continue
            cleared += self.held_words(option, widget)
            with self.prevent(Select.Changed, Input.Changed, Checkbox.Changed):
                if isinstance(widget, Select):
                    widget.clear()
                elif isinstance(widget, Checkbox):
                    widget.value = False
                else:
                    widget.value = ""
        return cleared

    def held_words(self, option, widget) -> list[str]:
        """What the field holds, in words (`iterations 300`, `model cgdrag`); [] blank."""
        try:
            value = fields.read(option, widget)
        except UsageError:   # half typed: said as it reads
            value = getattr(widget, "value", None) or None
            return [f"{option.short_label} {value}"] if isinstance(value, str) else []
        return [] if value in (None, False) else [f"{option.short_label} {filled_words(option, value, widget)}"]

    def overridden(self) -> list[str]:
        """The fields filled in that change what runs, in words for the Run line, a model
        picked over a preset's first (`model cgdrag in place of simplenet (preset)`: the run
        is the preset's, the line named no model, and ran cgdrag; the twelfth look), then the
        size: the preset's settings a field overrides (`iterations 50 in place of 10 000
        (preset)`: the field no longer shows the preset's value), and the settings no
        other words of the line say (`size 2`: typed, the line said the iterations alone,
        the tenth and eleventh walks)."""
        words = []
        for option in sorted(declared.OPTIONS, key=lambda o: (o.name != "model", o.name != "size")):
            by_the_preset = bool((self.preset_values or {}).get(option.name))
            if not self.offers(option) or (option.name in NAMED_APART
                                       and not (option.name == "model" and by_the_preset)):
                continue   # (a model picked over a preset's: the line names no model else)
            if option.name in SAID_ELSEWHERE | COUNTED and not by_the_preset:
                continue   # the line says them itself
            widget = self.query_one(f"#{option.name}")
            try:
                value = fields.read(option, widget)
            except UsageError:
                continue
            if value is None:
                continue
            shown = filled_words(option, value, widget)
            words.append(f"{option.short_label} {shown}"
                         + (f" in place of {self.blank(option).words}" if by_the_preset else ""))
        return words
