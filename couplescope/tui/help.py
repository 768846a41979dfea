"""The help screen (`?`): keys, views, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# couplescope: keys

| key | what it does |
|---|---|
| `r` | run what the pick panel describes (refused while a run goes) |
| `s` | stop the run: ends the worker process; what was measured stays |
| `e` | export the selected run (History) or the latest one, as `--export` does |
| `c` | compare the marked runs (all runs when none is marked) |
| `space` | in History: mark or unmark a run for comparing |
| `p` `w` `t` `h` | views: Pick, Watch, Telemetry, History |
| `?` | this help; `escape` closes it |
| `q` | quit (stops any running worker first) |

**Pick**: a preset, or a model with its size (blank = the model's own), backends,
device, dtype, layout, warm-up, iterations, threads and profiled iterations. Blank
fields mean the same defaults as the command line.

**Watch**: per-iteration time of the running variant (one line per phase: marshal in,
host to device, forward, device to host, marshal out), the last iterations with
PASSED/FAILED and the maximum relative error, progress, and median, IQR, min and max
of the timed iterations. Warm-up and profiled iterations are shown, never counted.

**Telemetry**: cores, the worker's CPU, memory and threads, each GPU (or "no GPU"),
and diagnostics in plain words. Measured by the parent, never inside the worker.

**History**: every run of this session. Export writes results.json, events.jsonl and
traces; open the traces with `couplescope --tensorboard <path>`.
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
