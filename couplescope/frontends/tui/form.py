"""The pick panel: what to run, as the same options the command line takes.

Every field is an optional override, exactly like a command-line option: blank means
"the default" (the model's own size and dtype, the preset's settings, RunSpec's
defaults). `options()` returns RunOptions, the same object the command line produces,
and `build()` turns them into a RunRequest through couplescope.core.request: the app
never has its own idea of what a run is.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.strip import Strip
from textual.widgets import Button, Input, Label, Select, SelectionList, Static
from textual.widgets.option_list import OptionDoesNotExist

from couplescope.core.request import RunOptions, split_list
from couplescope.frontends.tui.messages import CatalogueLoaded
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import BRIDGE_MODELS, DTYPE_CHOICES, GRAD_MODES, LAYOUTS

#: numeric fields: (id, label, placeholder)
NUMBERS = (("iterations", "iterations", "default 10"),
           ("warmup", "warm-up", "default 1"),
           ("threads", "threads", "torch's own"),
           ("profile_iterations", "profiled", "default 3, 0 = off"))
SELECTS = ("preset", "model", "host", "grad_mode", "device", "dtype", "layout", "bridge_model")
#: the host choices: one host, or both (a variant each)
HOST_CHOICES = ("native", "python", "native,python")
#: the longest "why not" shown beside a backend's name; the full reason goes under the list
SHORT_REASON = 32


def short_reason(reason: str) -> str:
    """The first clause of an unavailable reason ("mpi4py is not installed: pip ...")."""
    head = reason.split(":", 1)[0].strip()
    return head if len(head) <= SHORT_REASON else head[:SHORT_REASON - 1] + "…"


def model_prompt(preset: str | None) -> str:
    """What the model list says with no model picked: a preset's models run, or one must be picked."""
    return "(the preset's)" if preset else "(pick one)"


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
            from couplescope.core.catalogue_info import read_catalogue

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

        given = a.overrides
        sizes = ",".join(map(str, a.sizes or ()))
        device, dtype = given.get("device"), given.get("dtype")
        layout, bridge_model = given.get("layout"), given.get("bridge_model")
        host = ",".join(a.hosts) if a.hosts else None
        grad_mode = given.get("grad_mode")

        with Grid(id="pick-grid"):
            yield Label("preset")
            yield Select([(n, n) for n in preset_names], id="preset", prompt="(none)", compact=True,
                         value=a.preset or Select.NULL)
            yield Label("model")
            yield Select([(n, n) for n in model_names], id="model", prompt=model_prompt(a.preset), compact=True,
                         value=a.model or Select.NULL)
            yield Label("size", id="size-label")
            yield Input(sizes, id="size", placeholder="model's own", compact=True,
                        restrict=r"[0-9,]*")
            yield Label("host")
            yield Select([(v, v) for v in HOST_CHOICES], id="host", prompt="native (default)",
                         compact=True, value=host if host in HOST_CHOICES else Select.NULL)
            yield Label("grad mode")
            yield Select([(v, v) for v in GRAD_MODES], id="grad_mode", prompt="no_grad (default)",
                         compact=True, value=grad_mode if grad_mode in GRAD_MODES else Select.NULL)
            yield Label("device")
            yield Select([("cpu", "cpu")], id="device", prompt="cpu (default)", compact=True,
                         value=device if device == "cpu" else Select.NULL)
            yield Label("dtype")
            yield Select([(d, d) for d in DTYPE_CHOICES], id="dtype", prompt="model's own",
                         compact=True, value=dtype if dtype in DTYPE_CHOICES else Select.NULL)
            yield Label("layout")
            yield Select([(v, v) for v in LAYOUTS], id="layout", prompt="fortran (default)",
                         compact=True, value=layout if layout in LAYOUTS else Select.NULL)
            yield Label("bridge runs")
            yield Select([(v, v) for v in BRIDGE_MODELS], id="bridge_model", prompt="torchscript (default)",
                         compact=True, value=bridge_model if bridge_model in BRIDGE_MODELS else Select.NULL)
            for key, label, placeholder in NUMBERS:
                yield Label(label)
                value = given.get(key)
                yield Input("" if value is None else str(value), id=key, placeholder=placeholder,
                            type="integer", compact=True)
        yield Label(Text("backends ([x] runs; space toggles; none: torchscript or the preset's)"),
                    classes="section")
        yield CheckList(*[(n, n, n in chosen) for n in backends.names()], id="backends", compact=True)
        yield Static("", id="backend-notes")

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
        """The form as RunOptions: the command line's other options carried through, the
        form's fields replacing theirs (a blank field: the default)."""
        overrides = {k: v for k, v in self.initial.overrides.items()
                     if k not in SELECTS and k not in dict((n, 0) for n, _, _ in NUMBERS)}
        chosen = {}
        for key in SELECTS:
            value = self.query_one(f"#{key}", Select).value
            chosen[key] = value if isinstance(value, str) else None
        for key in ("device", "dtype", "layout", "bridge_model", "grad_mode"):
            if chosen[key] is not None:
                overrides[key] = chosen[key]
        for key, label, _ in NUMBERS:
            text = self.query_one(f"#{key}", Input).value.strip()
            if not text:
                continue
            try:
                value = int(text)
            except ValueError:
                raise UsageError(f"{label}: '{text}' is not a whole number") from None
            low = 1 if key in ("iterations", "threads") else 0
            if value < low:
                raise UsageError(f"{label} must be at least {low} (got {value})")
            overrides[key] = value
        size = self.query_one("#size", Input).value.strip().strip(",")
        backends = list(self.query_one("#backends", SelectionList).selected)
        hosts = split_list(chosen["host"]) if chosen["host"] else self.initial.hosts
        return RunOptions(preset=chosen["preset"], model=chosen["model"], backends=backends or None,
                          sizes=split_list(size or None, int), hosts=hosts, overrides=overrides,
                          export=self.initial.export, telemetry_hz=self.initial.telemetry_hz,
                          memory_limit=self.initial.memory_limit)

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

    def on_descendant_focus(self, event) -> None:
        # the backends list is the last field: show the reasons under it too (80x24)
        if getattr(event.widget, "id", None) == "backends":
            self.query_one("#pick-fields").scroll_end(animate=False)

    def on_selection_list_selected_changed(self, event) -> None:
        self.refresh_preview()
