"""The help screen (`?`): keys, views, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# couplescope: keys

- `r` run what the Pick view describes (refused while a run goes)
- `s` stop the run: ends the worker process; what was measured stays
- `e` export the highlighted run in History (the latest by default), as `--export` does
- `c` compare the marked runs (all runs when none is marked); there `space` leaves a
  variant out or puts it back, `escape` goes back
- `space` in History: mark or unmark a run for comparing
- `p` `w` `t` `h` views: Pick, Watch, Telemetry, History
- `?` this help (`escape` closes it); `q` quit, stopping any running worker first

**Pick**: a preset, or a model with its size (blank: the model's own), backends, device,
dtype, layout, warm-up, iterations, threads, profiled iterations. Blank fields mean the
command line's defaults; the line above Run says which variants will run.

**Watch**: per-iteration time of the running variant with one line per phase (marshal in,
host to device, forward, device to host, marshal out), the latest iterations with
PASSED/FAILED and the maximum relative error, progress, and median, IQR, min and max of
the timed iterations. Warm-up and profiled iterations are shown but never counted.

**Telemetry**: cores, the worker's CPU, memory and threads, each GPU (or "no GPU"), and
diagnostics in plain words: sampled by this process, never inside the worker.

**History**: every run of this session. Export writes results.json, events.jsonl and the
traces; open the traces with `couplescope --tensorboard <path>`.
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
