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
dtype, layout, warm-up, iterations, threads, profiled iterations. Blank fields mean the
command line's defaults. Backends marked `[x]` run (`space` toggles); `[-]` cannot run
here, and the reason is written under the list. The line beside Run says which variants
will run."""

    def compose(self) -> ComposeResult:
        yield PickForm(self.app.options, load_catalogue=self.app.load_catalogue, id="form")


VIEW = PickView
