"""The pick panel: what to run, as the same options the command line takes.

Every field is an optional override, exactly like a command-line option: blank means
"the default" (the model's own size and dtype, the preset's settings, RunSpec's
defaults). The fields are the declared options (couplescope.protocol.options), one each,
made and read by couplescope.frontends.tui.fields, in the groups --help shows them in.
`options()` returns RunOptions, the same object the command line produces, and
`build()` turns them into a RunRequest through couplescope.core.request: the app never
has its own idea of what a run is.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.strip import Strip
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static
from textual.widgets.option_list import OptionDoesNotExist

from couplescope.core.request import RunOptions
from couplescope.frontends.tui import fields
from couplescope.frontends.tui.messages import CatalogueLoaded
from couplescope.protocol import options as declared
from couplescope.protocol.errors import UsageError

#: the option the backends list is (a list of boxes, not a field of the grid)
BACKEND = "backend"
#: where each group's grid goes: what to run first, then the backends list, then the rest
FIRST_GROUP = declared.GROUPS[0]
#: the longest "why not" shown beside a backend's name; the full reason goes under the list
SHORT_REASON = 32


def short_reason(reason: str) -> str:
    """The first clause of an unavailable reason ("mpi4py is not installed: pip ...")."""
    head = reason.split(":", 1)[0].strip()
    return head if len(head) <= SHORT_REASON else head[:SHORT_REASON - 1] + "…"


def model_prompt(preset: str | None) -> str:
    """What the model list says with no model picked: a preset's models run, or one must be picked."""
    return "(the preset's)" if preset else "(pick one)"


def offered(option) -> bool:
    """Whether the form shows this option's field: always, or only where what it needs is
    present (--nodes: a Slurm, srun on PATH). The command line takes it everywhere."""
    if option.offered == "slurm":
        from couplescope.backends.mpi import slurm

        return slurm.present()
    return True


class CheckList(SelectionList):
    """A SelectionList whose boxes read `[x]` / `[ ]` (`[-]` when unavailable).

    Textual's own toggle button is `▐X▌` drawn in two colours: in a 256-colour tmux or a
    plain capture a ticked box and an empty one look the same. Characters do not depend
    on the terminal's colours; the colour only adds to them.
    """

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


class PickForm(Vertical):
    """Model, backends, size, device, dtype, layout, warm-up, iterations, threads, profiling, preset.

    The fields scroll (an 80x24 terminal cannot show them all); the line saying what will
    run and the Run button stay under them, always visible.
    """

    def __init__(self, initial: RunOptions, load_catalogue: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.initial = initial
        self.models: dict = {}   # name -> {"size_name", "default_size", "dtype", "summary"}
        self.ready = False       # the catalogue worker has filled in sizes, backends, devices
        self._load_catalogue = load_catalogue

    def on_mount(self) -> None:
        if self._load_catalogue:
            self.load_catalogue()

    # -- the catalogue imports torch: read it off the UI thread, so the app appears at once
    @work(thread=True, exit_on_error=False, group="catalogue")
    def load_catalogue(self) -> None:
        models, backend_status, devs, error = {}, {}, ["cpu"], None
        try:
            from couplescope.core.availability import read_catalogue

            cat = read_catalogue()
            models, devs = cat.models, cat.devices
            backend_status = {name: reason for name, (_, reason) in cat.backends.items()}
            error = "; ".join(cat.errors) or None
            # what the first run would otherwise import while its worker is being measured
            import couplescope.core.pipeline  # noqa: F401
            import couplescope.core.telemetry.listener  # noqa: F401
            from couplescope.export import traces  # noqa: F401
            try:
                import tensorboard.summary.writer.event_file_writer  # noqa: F401  (trace scalars)
            except ImportError:
                pass
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        self.post_message(CatalogueLoaded(models, backend_status, devs, error))

    def on_catalogue_loaded(self, msg: CatalogueLoaded) -> None:
        self.set_catalogue(msg.models, msg.backends, msg.devices)
        self.ready = True   # the message goes on to the app, which logs msg.error

    def compose(self) -> ComposeResult:
        from couplescope.core import presets
        from couplescope.workloads import catalogue

        a = self.initial
        model_names = catalogue.model_names()
        if a.model and a.model not in model_names:
            model_names.append(a.model)   # a user file given on the command line
        preset_names = presets.preset_names()
        if a.preset and a.preset not in preset_names:
            preset_names.append(a.preset)
        chosen = set(a.backends or ())
        with VerticalScroll(id="pick-fields"):
            yield from self._fields(a, model_names, preset_names, chosen)
        with Horizontal(id="run-bar"):
            yield Button("Run (r)", id="run", variant="success", compact=True)
            yield Static("", id="preview")

    def _fields(self, a: RunOptions, model_names, preset_names, chosen) -> ComposeResult:
        from couplescope import backends
        from couplescope.backends import hosts

        runtime = {"models": model_names, "devices": ["cpu"], "backends": backends.names(),
                   "hosts": hosts.names()}
        for group in declared.GROUPS:
            members = [o for o in declared.OPTIONS if o.group == group and o.name != BACKEND
                       and offered(o)]
            if not members and group != FIRST_GROUP:
                continue
            if group != FIRST_GROUP:
                yield Label(Text(group), classes="section")
            with Grid(classes="pick-grid", id=f"grid-{declared.GROUPS.index(group)}"):
                if group == FIRST_GROUP:
                    yield Label("preset")
                    yield Select([(n, n) for n in preset_names], id="preset", prompt="(none)",
                                 compact=True, value=a.preset or Select.NULL)
                for option in members:
                    label_id = "size-label" if option.name == "size" else None
                    yield Label(option.short_label[:14], id=label_id)
                    yield self._widget(option, a, runtime)
            if group == FIRST_GROUP:
                yield Label(Text("backends ([x] runs; space toggles; none: torchscript or the "
                                 "preset's)"), classes="section")
                yield CheckList(*[(n, n, n in chosen) for n in backends.names()], id="backends",
                                compact=True)
                yield Static("", id="backend-notes")

    def _widget(self, option, a: RunOptions, runtime: dict):
        """The field of one option, holding what the command line (or the app's caller) gave."""
        if option.name == "model":
            value = a.model
            widget = fields.widget_for(option, value, runtime["models"])
            widget.prompt = model_prompt(a.preset)
            return widget
        if option.scope == declared.RUN:
            value = getattr(a, option.name)
        elif option.sweep:
            value = {"size": a.sizes, "host": a.hosts}.get(option.name)
        else:
            value = a.overrides.get(option.name)
        return fields.widget_for(option, value, runtime.get(option.source))

    # -- filled in from the catalogue worker ----------------------------------------------
    def set_catalogue(self, models: dict, backend_status: dict, devices: list[str]) -> None:
        self.models = models
        sel = self.query_one("#backends", SelectionList)
        chosen = set(sel.selected)
        sel.clear_options()
        notes = Text()
        for name, reason in backend_status.items():
            prompt = Text(name)
            if reason:   # Text, not markup: reasons hold brackets ('couplescope[mpi]')
                prompt.append(f"  unavailable: {short_reason(reason)}", style="dim")
                notes.append(f"{name}: ", style="bold")
                notes.append(f"{reason}\n")
            sel.add_option((prompt, name, name in chosen and not reason))
            if reason:
                sel.get_option_at_index(sel.option_count - 1).disabled = True
        notes.rstrip()
        if sel.has_focus and sel.highlighted is None:
            sel.action_first()
        self.query_one("#backend-notes", Static).update(notes)
        self.query_one("#backend-notes", Static).display = bool(notes)
        sel.tooltip = notes if notes else None
        device = self.query_one("#device", Select)
        current = device.value
        device.set_options([(d, d) for d in devices])
        wanted = self.initial.overrides.get("device")
        if wanted in devices:
            device.value = wanted
        elif current in devices:
            device.value = current
        self.update_size_hint()

    def update_size_hint(self) -> None:
        model = self.query_one("#model", Select).value
        info = self.models.get(model) if isinstance(model, str) else None
        size = self.query_one("#size", Input)
        label = self.query_one("#size-label", Label)
        if info:
            size.placeholder = f"{info['default_size']} (model's own)"
            label.update(f"size ({info['size_name']})"[:14])
        else:
            size.placeholder = "model's own"
            label.update("size")

    # -- reading the form --------------------------------------------------------------
    def options(self) -> RunOptions:
        """The form as RunOptions: every field through its option's parse (a blank field:
        the default), and what the command line gave that the form has no field for."""
        values, lists = {}, {}
        for option in declared.OPTIONS:
            if option.name == BACKEND or not offered(option):
                continue
            value = fields.read(option, self.query_one(f"#{option.name}"))
            if value is None:
                continue
            (lists if option.sweep else values)[option.name] = value
        preset = self.query_one("#preset", Select).value
        backends = list(self.query_one("#backends", SelectionList).selected)
        model = values.pop("model", None)
        run = {o.name: values.pop(o.name) for o in declared.RUN_OPTIONS if o.name in values}
        overrides = {k: v for k, v in self.initial.overrides.items()
                     if k not in declared.BY_NAME or not offered(declared.BY_NAME[k])}
        overrides.update(values)
        return RunOptions(preset=preset if isinstance(preset, str) else None, model=model,
                          backends=backends or None, sizes=lists.get("size"),
                          hosts=lists.get("host"), overrides=overrides, **run)

    def build(self):
        """The RunRequest of the form, exactly as the command line's; raises UsageError."""
        from couplescope.core import request

        options = self.options()
        if not options.preset and not options.model:
            raise UsageError("nothing to run: pick a model or a preset")
        return request.build(options)

    def refresh_preview(self) -> None:
        preview = self.query_one("#preview", Static)
        try:
            req = self.build()
        except UsageError as exc:
            preview.update(f"[b]will not run:[/] {exc}")
            return
        specs = req.specs
        labels = ", ".join(s.label for s in specs[:6]) + (" ..." if len(specs) > 6 else "")
        preview.update(f"[b]{len(specs)} variant(s):[/] {labels}")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "preset":
            model = self.query_one("#model", Select)
            preset = event.value if isinstance(event.value, str) else None
            model.prompt = model_prompt(preset)
            if preset:
                model.clear()   # the preset becomes the set of variants
        if event.select.id == "model":
            self.update_size_hint()
        self.refresh_preview()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.refresh_preview()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self.refresh_preview()

    def on_descendant_focus(self, event) -> None:
        # show the backends' reasons under their list too (80x24)
        if getattr(event.widget, "id", None) == "backends":
            notes = self.query_one("#backend-notes", Static)
            self.query_one("#pick-fields").scroll_to_widget(notes if notes.display else event.widget,
                                                            animate=False)

    def on_selection_list_selected_changed(self, event) -> None:
        self.refresh_preview()
