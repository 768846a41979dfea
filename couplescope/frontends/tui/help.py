"""The help screen (`?`): keys, views, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
**Keys**

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
command line's defaults. Backends marked `[x]` run (`space` toggles); `[-]` cannot run
here, and the reason is written under the list. The line beside Run says which variants
will run.

**Watch**: per-iteration time of the running variant with one line per phase (marshal in,
host to device, forward, device to host, marshal out), the latest iterations with
PASSED/FAILED and the maximum relative error, progress, and median, IQR, min and max of
the timed iterations. `204/204 calls = 200 timed + 1 warm-up + 3 profiled` counts every
call (all are checked); only the timed ones enter the statistics (`n=200 timed`). In a
narrow terminal the legend shortens the phases: `m_in` marshal in, `fwd` forward,
`m_out` marshal out.

**Telemetry**: cores, the worker's CPU, memory and threads, each GPU (or "no GPU"), and
diagnostics in plain words: sampled by this process, never inside the worker.

**History**: every run of this session. Export writes results.json, events.jsonl and the
traces; open the traces with `couplescope --tensorboard <path>`.
"""


class HelpScreen(ModalScreen):
    """The help text in a box that scrolls (an 80x24 terminal shows a third of it); the
    box's border says so, and it has the focus, so the arrow keys scroll it at once."""

    BINDINGS = [Binding("escape", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        box = VerticalScroll(id="help-box")
        box.border_title = "couplescope help"
        box.border_subtitle = "↑ ↓ PgUp PgDn scroll · esc closes"
        with box:
            yield Markdown(HELP)

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()
