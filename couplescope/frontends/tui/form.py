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

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static

from couplescope.core.request import RunOptions
from couplescope.frontends.tui import fields
from couplescope.frontends.tui.backends_list import CheckList, heading
from couplescope.frontends.tui.blanks import Blank, blank_for, offered as offered_choices, value_words
from couplescope.frontends.tui.fields import BACKEND, offered
from couplescope.frontends.tui.preset_fields import PresetFields, model_blank, name_blank, preset_values
from couplescope.frontends.tui.export_whole import ExportWhole
from couplescope.frontends.tui.run_line import run_line
from couplescope.frontends.tui.messages import CatalogueLoaded, FormChanged
from couplescope.protocol import options as declared
from couplescope.protocol.errors import UsageError

#: where each group's grid goes: what to run first, then the backends list, then the rest
FIRST_GROUP = declared.GROUPS[0]
#: options a training step does not read (its forward runs with gradients), and what their
#: field says then: "grad mode  no_grad (default)" meant nothing beside a training run
INFERENCE_ONLY = {"grad_mode": "training: forward with gradients"}
#: options that count or repeat calls, and their labels on a training form, where a call
#: is a step ("profiled calls" and "reload each call" beside a training run's steps)
STEP_LABELS = {"profile_iterations": "profiled steps", "reload_every_call": "reload each step"}
#: options whose blank's words count calls, said in steps on a training form
STEP_BLANKS = ("rounds",)
#: the narrowest labels' column: `size (layers)` and the like, known once the catalogue is read
NARROWEST_LABELS = 14


def label_width() -> int:
    """The labels' column: as wide as the longest label, so that none is cut ("profile
    max op"); the fields take the rest."""
    return max(NARROWEST_LABELS, *(len(o.short_label) for o in declared.OPTIONS if offered(o)))


class PickForm(PresetFields, Vertical):
    """Model, backends, size, device, dtype, layout, warm-up, iterations, threads, profiling, preset.

    The fields scroll (an 80x24 terminal cannot show them all); the line saying what will
    run and the Run button stay under them, always visible. A blank field shows what it
    means (blanks.py): the preset's value, marked `(preset)`, else the default.
    """

    def __init__(self, initial: RunOptions, load_catalogue: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.initial = initial
        self.models: dict = {}   # name -> {"size_name", "default_size", "dtype", "summary"}
        self.ready = False       # the catalogue worker has filled in sizes, backends, devices
        self._load_catalogue = load_catalogue
        #: what the chosen preset sets, by option (None: no preset chosen)
        self.preset_values: dict | None = preset_values(initial.preset)
        #: the preset the fields show (the command line's at first: its values stay)
        self.preset_shown: str | None = initial.preset
        #: the choices of each list, before the one its blank stands for is left out
        self.choices: dict[str, list[str]] = {}
        #: backend -> why it cannot run here (None: it can); all can until the catalogue says
        self.backend_status: dict[str, str | None] = {}

    def on_mount(self) -> None:
        self.show_task()
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
        # not focusable itself: it scrolls to the field that has the focus, and a focused
        # scroll area showed nothing of where the keys went (escape, then tab, landed there)
        with VerticalScroll(id="pick-fields", can_focus=False):
            yield from self._fields(a, model_names, preset_names)
        with Horizontal(id="run-bar"):
            # pressed (Enter, space, a click), it is r: it took the focus and did nothing
            yield Button("Run (r)", id="run", variant="success", compact=True, action="app.run")
            yield Static("", id="preview")

    def _fields(self, a: RunOptions, model_names, preset_names) -> ComposeResult:
        from couplescope import backends
        from couplescope.backends import hosts

        runtime = {"models": model_names, "devices": ["cpu"], "backends": backends.names(),
                   "hosts": hosts.names()}
        self.backend_status = {name: None for name in backends.names()}
        width = label_width()
        # the fields built now are the ones read later: a Slurm installed while the app is
        # open (srun on PATH) is for the next app, not a field this form never made
        self.fields_built = frozenset(o.name for o in declared.OPTIONS if offered(o))
        for group in declared.GROUPS:
            members = [o for o in declared.OPTIONS if o.group == group and o.name != BACKEND
                       and self.offers(o)]
            if not members and group != FIRST_GROUP:
                continue
            if group != FIRST_GROUP:
                yield Label(Text(group), classes="section")
            with Grid(classes="pick-grid", id=f"grid-{declared.GROUPS.index(group)}") as grid:
                # a label and its field, twice a row on a wide terminal (the pair repeats)
                grid.styles.grid_columns = f"{width} 1fr"
                if group == FIRST_GROUP:
                    yield Label("preset")
                    yield fields.Choice([(n, n) for n in preset_names], id="preset", prompt="(none)",
                                 compact=True, value=a.preset or Select.NULL)
                for option in members:
                    yield Label(option.short_label, id=f"{option.name}-label")
                    yield self._widget(option, a, runtime)
            if any(o.name == "export" for o in members):   # the folder whole, where cut in its field
                yield ExportWhole(id="export-whole")
            if group == FIRST_GROUP:
                yield Label(Text(heading(bool(a.preset), bool(a.backends))), id="backends-heading",
                            classes="section")
                chosen = set(a.backends or ())
                yield CheckList(*[(n, n, n in chosen) for n in backends.names()], id="backends",
                                compact=True)
                yield Static("", id="backend-notes")

    def blank(self, option) -> Blank:
        """What the field of `option` means left blank, with the preset chosen now."""
        if option.name == "model":
            return model_blank(self.preset_values)
        if option.name == "name":
            return name_blank(self.preset_values)
        if option.name == "export":   # in the app, where `e` writes (the command line's: off)
            from couplescope.export.run_dir import DEFAULT_PARENT

            return Blank(f"./{DEFAULT_PARENT}: where e writes a run")
        return blank_for(option, self.preset_values)

    def _widget(self, option, a: RunOptions, runtime: dict):
        """The field of one option, holding what the command line (or the app's caller) gave."""
        if option.scope == declared.RUN:
            value = getattr(a, option.name)
        elif option.name == "model":
            value = a.model
        elif option.sweep:
            value = {"size": a.sizes, "host": a.hosts}.get(option.name)
        else:
            value = a.overrides.get(option.name)
        choices = runtime.get(option.source)
        if choices is not None or option.choices is not None:
            self.choices[option.name] = fields.sweep_choices(option, choices, value)
        return fields.widget_for(option, value, choices, self.blank(option))

    # -- filled in from the catalogue worker ----------------------------------------------
    def set_catalogue(self, models: dict, backend_status: dict, devices: list[str]) -> None:
        self.models = models
        self.backend_status = dict(backend_status)
        self._fill_backends()
        notes = Text()
        for name, reason in backend_status.items():
            if reason:   # Text, not markup: reasons hold brackets ('couplescope[mpi]')
                notes.append(f"{name}: ", style="bold")
                notes.append(f"{reason}\n")
        notes.rstrip()
        self.query_one("#backend-notes", Static).update(notes)
        self.query_one("#backend-notes", Static).display = bool(notes)
        self.query_one("#backends", SelectionList).tooltip = notes if notes else None
        self.choices["device"] = list(devices)
        wanted = self.initial.overrides.get("device")
        self._offer(declared.get("device"), keep=wanted if wanted in devices else None)
        self.update_size_hint()

    def _offer(self, option, keep=None) -> None:
        """A list's choices (less the one its blank stands for) and its blank's words; the
        value picked stays when it is still offered (`keep`: pick this one)."""
        select = self.query_one(f"#{option.name}", Select)
        blank = self.blank(option)
        current = keep if keep is not None else select.value
        choices = offered_choices(self.choices.get(option.name, []), blank)
        with self.prevent(Select.Changed):
            select.prompt = blank.words
            select.set_options([(c, c) for c in choices])
            if current in choices:
                select.value = current

    def update_size_hint(self) -> None:
        """The size field's blank and label: the preset's size, else the model's own (the
        model picked, or the preset's one model) with the model's name for its size."""
        model = self.query_one("#model", Select).value
        if not isinstance(model, str):
            models = (self.preset_values or {}).get("model") or []
            model = models[0] if len(models) == 1 else None
        info = self.models.get(model) if model else None
        size = self.query_one("#size", Input)
        label = self.query_one("#size-label", Label)
        blank = self.blank(declared.get("size"))
        if blank.words.endswith("(preset)"):
            size.placeholder = blank.words
        elif info:
            size.placeholder = f"{value_words(declared.get('size'), info['default_size'])} (model's own)"
        else:
            size.placeholder = "model's own"
        label.update(f"size ({info['size_name']})" if info else "size")

    def task(self) -> str:
        """What the variants will do: the task field's, else the preset's (when all its
        variants train), else infer."""
        value = self.query_one("#task", Select).value
        if isinstance(value, str):
            return value
        tasks = (self.preset_values or {}).get("task") or []
        return tasks[0] if len(tasks) == 1 else "infer"

    def show_task(self) -> None:
        """A field a training step does not read says so and takes no value (INFERENCE_ONLY);
        one that counts calls says steps on a training form (STEP_LABELS, STEP_BLANKS)."""
        training = self.task() == "train"
        for name, words in INFERENCE_ONLY.items():
            select = self.query_one(f"#{name}", Select)
            if training:
                with self.prevent(Select.Changed):
                    select.clear()
            select.prompt = words if training else self.blank(declared.get(name)).words
            select.disabled = training
        for name, words in STEP_LABELS.items():
            self.query_one(f"#{name}-label", Label).update(words if training else declared.get(name).short_label)
        for name in STEP_BLANKS:
            words = self.blank(declared.get(name)).words
            self.query_one(f"#{name}", Input).placeholder = words.replace("calls", "steps") if training else words

    # -- reading the form --------------------------------------------------------------
    def options(self) -> RunOptions:
        """The form as RunOptions: every field through its option's parse (a blank field:
        the default), and what the command line gave that the form has no field for."""
        values, lists = {}, {}
        for option in declared.OPTIONS:
            if option.name == BACKEND or not self.offers(option):
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
                     if k not in declared.BY_NAME or not self.offers(declared.BY_NAME[k])}
        overrides.update(values)
        return RunOptions(preset=preset if isinstance(preset, str) else None, model=model,
                          backends=backends or None, sizes=lists.get("size"),
                          hosts=lists.get("host"), overrides=overrides, **run)

    def export_dir(self) -> str | None:
        """The export field: where `e` writes a run (None: blank)."""
        return fields.read(declared.get("export"), self.query_one("#export"))

    def build(self):
        """The RunRequest of the form, exactly as the command line's; raises UsageError."""
        from couplescope.core import request

        options = self.options()
        if not options.preset and not options.model:
            raise UsageError("nothing to run: pick a model or a preset")
        return request.build(options)

    def refresh_preview(self) -> None:
        preview = self.query_one("#preview", Static)
        self.call_after_refresh(self.keep_focus_in_sight)   # once the Run line's new length is laid out
        try:
            req = self.build()
        except UsageError as exc:
            preview.update(f"[b]will not run:[/] {escape(str(exc))}")
            self.mark_refused(exc.option)
            self.show_resolved(())
            self.post_message(FormChanged(False, str(exc)))
            return
        self.mark_refused(None)
        self.post_message(FormChanged(True, request=req))
        preset = self.preset_values
        preview.update(run_line(req.specs, list(self.query_one("#backends", SelectionList).selected),
                                (preset or {}).get(BACKEND, ()) if preset is not None else None,
                                self.overridden(), req.rounds if self.query_one("#rounds", Input).value else None))
        self.show_resolved(req.specs)

    def mark_refused(self, name: str | None) -> None:
        """Mark the field of the option the run refuses (`name`), as a value its own check
        refuses is marked: `save model` typed on an inference form is a fine path, but the
        run refuses it (it applies to training), and the field did not say so."""
        for widget in self.query(".-refused"):
            widget.remove_class("-refused")
        if name:
            self.query(f"#{name}").add_class("-refused")

    def keep_focus_in_sight(self) -> None:
        """The field with the focus back on the screen when the Run line grew under it: a
        value typed over a preset's made the line three lines long, the fields' page lost
        rows at its bottom, and the field typed in went out of sight (docs/tui.md: the focus
        is always visible). The backends list keeps its highlighted row in sight."""
        focused = self.app.focused
        page = self.query_one("#pick-fields")
        if focused is None or page not in focused.ancestors:
            return
        if isinstance(focused, CheckList):
            focused.show_highlighted()
        else:
            page.scroll_to_widget(focused, animate=False, immediate=True)

    def show_resolved(self, specs) -> None:
        """A blank number field shows the value the request gave every variant when that is
        not what its declaration or the preset says (a default that depends on the task or
        the model is the request's to decide): the field and the Run line never disagree."""
        for option in declared.SPEC_OPTIONS:
            if option.kind not in (int, float) or option.sweep or not self.offers(option):
                continue
            field = self.query_one(f"#{option.name}", Input)
            if field.value:
                continue
            blank = self.blank(option)
            values = {getattr(spec, option.name) for spec in specs}
            value = values.pop() if len(values) == 1 else None
            field.placeholder = (blank.words if value is None or value == blank.value
                                 else f"{value_words(option, value)} (default)")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "preset":
            preset = event.value if isinstance(event.value, str) else None
            if preset and preset != self.preset_shown:   # (not the command line's, on mount)
                model = self.query_one("#model", Select)
                cleared = self.held_words(declared.get("model"), model)
                with self.prevent(Select.Changed):
                    model.clear()   # the preset becomes the set of variants
                self.say_given_way(preset, cleared + self.clear_what_the_preset_sets(preset_values(preset) or {}))
            self.preset_shown = preset
            self.show_preset(preset)
        if event.select.id == "model":
            self.update_size_hint()
        if event.select.id in ("preset", "task"):
            self.show_task()
        self.refresh_preview()

    def say_given_way(self, preset: str, cleared: list[str]) -> None:
        """On the top line: the values a preset picked cleared (`simplenet-train: iterations
        300 and model cgdrag give way to the preset's`; they went without a word and the run
        was the preset's, the twelfth walk). Not in a toast: it would cover the Run line."""
        if not cleared:   # what a preset picked before said is no longer so
            if getattr(self.app, "_refusal", None) == getattr(self, "_given_way", None):
                self.app.refusal_gone()
            return
        listed = ", ".join(cleared[:-1]) + f" and {cleared[-1]}" if len(cleared) > 1 else cleared[0]
        verb = "give" if len(cleared) > 1 else "gives"
        names = [words.split(" ")[0] for words in cleared]
        named = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        self._given_way = (f"{preset}: {listed} {verb} way to the preset's",
                           f"{listed} {verb} way to the preset's",
                           f"{preset}: {named} {verb} way to the preset's",
                           f"{named} {verb} way to the preset's")
        self.app.say_form_note(self._given_way)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "export":
            self.query_one(ExportWhole).follow()
        self.refresh_preview()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self.refresh_preview()

    def on_descendant_focus(self, event) -> None:
        # show the backends' reasons under their list too (80x24)
        # (only while it still has the focus: the message arrives late, and the page went
        # back down to the list after the focus had moved up to the preset)
        if getattr(event.widget, "id", None) == "backends" and event.widget.has_focus:
            notes = self.query_one("#backend-notes", Static)
            self.query_one("#pick-fields").scroll_to_widget(notes if notes.display else event.widget,
                                                            animate=False, immediate=True)
            event.widget.show_highlighted()   # and its highlighted row, whatever the notes' length

    def on_selection_list_selected_changed(self, event) -> None:
        self.show_backends_heading()
        self.refresh_preview()
