"""The Pick view: what to run, field by field as on the command line (tui/form.py)."""

from __future__ import annotations

from textual.app import ComposeResult

from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.views.base import AppView


class PickView(AppView):
    key, title = "p", "Pick"
    focus_on = "#model"
    help = """\
a preset, or a model with its size (blank: the model's own), backends, device,
dtype, layout, warm-up, iterations, threads, profiled iterations. A blank field says what
it means: `10 (default)`, or with a preset the preset's value, `10 000 (preset)`; a value
typed in overrides it for every variant, as on the command line (a name typed with a
preset of several variants goes before each of their names). Backends marked `[x]` run
(`space` toggles); `[-]` cannot run here, and the reason is written under the list; a
backend ticked with a preset runs every variant of the preset with it. The line beside Run
says what will run: how many variants, the task, the iterations, the names. A value the
run would refuse is marked red. Each field is the command-line option of its name
(`couplescope --help` says what each does)."""

    def compose(self) -> ComposeResult:
        yield PickForm(self.app.options, load_catalogue=self.app.load_catalogue, id="form")


VIEW = PickView
