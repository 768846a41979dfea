"""The History view: every run of this session, where it was exported, marks for compare."""

from __future__ import annotations

import os
import shlex

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from couplescope.frontends.tui.runs_table import RunsTable
from couplescope.frontends.tui.views.base import AppView

HINT = "space marks runs for c (compare); e exports the highlighted run"
#: under an empty table, after what r would do (app.no_run_words), where HINT offered
#: keys that had nothing to act on
NO_RUN_HINT = "each run of this session gets a row here"


def what_opens(path: str) -> str:
    """"open its traces", or what the command opens for a run exported without a profiler
    trace (profiled steps 0: TensorBoard's scalars only), in the words `--tensorboard`
    says it with (export/tensorboard_server.dashboard)."""
    from couplescope.export.tensorboard_server import dashboard

    return f"open its {dashboard(os.path.join(path, 'traces'))[1]}"


def tensorboard_command(path: str) -> str:
    """The command that opens an exported run's traces, shell-quoted (a path may hold spaces)."""
    return f"couplescope --tensorboard {shlex.quote(path)}"


def path_pieces(path: str, width: int) -> list[str]:
    """The path on lines of at most `width`, each broken after a `/` (the fifteenth walk:
    `that-goe` / `s-on-and-on`, a name cut in two that a double-click copied half of); a
    single name longer than a line is cut where it must, the only break inside a name."""
    parts = path.split("/")
    lines = [""]
    for part in [p + "/" for p in parts[:-1]] + parts[-1:]:
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
        while len(lines[-1]) > width:
            lines[-1:] = [lines[-1][:width], lines[-1][width:]]
    return lines


def tensorboard_lines(path: str, width: int) -> str:
    """The command whole in `width` columns: one line where it fits, else lines that end
    in a line continuation (`\\`), so that the lines copied are still one command (wrapped
    at its space by the terminal, they were two): the path on lines of its own, broken
    after a `/` as the path above it is (path_pieces; the shell removes a backslash-newline
    even inside a word, where a single name is longer than a line). A path that
    needs quotes (a space in it) is written whole on its line: inside quotes a
    backslash-newline is not removed."""
    command = tensorboard_command(path)
    if len(command) <= width:
        return command
    quoted = shlex.quote(path)
    step = max(1, width - 1)
    pieces = [quoted] if quoted != path else path_pieces(path, step)
    return "couplescope --tensorboard \\\n" + "\\\n".join(pieces)


def settings_lines(words: str, width: int) -> str:
    """A run's words in full on lines of `width`, each broken after a comma (a setting
    whole on its line)."""
    lines = [""]
    for piece in words.split(", "):
        joined = f"{lines[-1]}, {piece}" if lines[-1] else piece
        if lines[-1] and len(joined) + 1 > width:
            lines[-1] += ","
            lines.append(piece)
        else:
            lines[-1] = joined
    return "\n".join(lines)


class HistoryView(AppView):
    """One row a run; the highlighted run is the one `e` exports (app.picked) and the line
    under the table says where it went. The rows' fastest median follows the runs going."""

    key, title = "h", "History"
    focus_on = "#runs"
    follows = frozenset({"iteration", "variant_finished", "variant_failed"})
    redraw_seconds = 0.5
    help = """\
every run of this session: its name and what tells it from the others (each setting
another run of its title differs in, the most telling first and in the same order on
every row: `iterations 10` above `iterations 1 000`; a preset, the task, the backends),
its variants (`1 of 4`: stopped before the others made a call),
its verdict (the compare view's word: PASSED, FAILED, ERROR, STOPPED, running; `not judged`:
a training run's checks passed, with too few steps to judge whether it learned), its
fastest median, whether it was exported (yes or no). Export writes results.json, events.jsonl and the traces; open the traces with
`couplescope --tensorboard <path>`."""
    # the footer says what space does to the highlighted run (check_action)
    BINDINGS = [Binding("space", "mark", "mark", tooltip="mark the highlighted run for comparing."),
                Binding("space", "unmark", "unmark", tooltip="on a marked run: unmark it."),
                Binding("space", "no_run_to_mark", show=False,
                        tooltip="with no run yet: says so (the footer does not offer space then).")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield RunsTable(id="runs")
            yield Static(HINT if self.app.runs else self.no_run_hint(), id="export-note")

    def no_run_hint(self) -> str:
        return f"{self.app.no_run_words()}; {NO_RUN_HINT}"

    def form_changed(self) -> None:
        if not self.app.runs:
            self.show_export_note(None)

    def on_mount(self) -> None:   # (AppView's on_mount runs too, by Textual)
        self._dirty: set = set()   # runs whose row is out of date

    def run_started(self, record) -> None:
        self.query_one(RunsTable).add_run(record)
        self.refresh_bindings()           # a run to mark: the footer offers space
        self.show_export_note(self.app.picked())   # and the hint under the table says so

    def check_action(self, action: str, parameters) -> bool | None:
        """space marks where there is a run, unmarks a marked one; with none it says so,
        offered nowhere."""
        if action == "no_run_to_mark":
            return not self.app.runs
        if action in ("mark", "unmark"):
            record = self.highlighted() if self.app.runs else None
            return bool(self.app.runs) and bool(record and record.selected) == (action == "unmark")
        return True

    def action_no_run_to_mark(self) -> None:   # as c, e and s do, say why nothing happened
        self.app.say_why_not("no run to mark yet: run something first (r)")

    def follow(self, record, events: list[dict]) -> None:
        self._dirty.add(record)

    def redraw(self, force: bool = False) -> None:
        for record in self._dirty:
            self.query_one(RunsTable).update_run(record)
        self._dirty.clear()

    def run_ended(self, record) -> None:
        self.run_changed(record)

    def run_changed(self, record) -> None:
        self._dirty.discard(record)
        self.query_one(RunsTable).update_run(record)
        if record is self.app.picked():
            self.show_export_note(record)

    def highlighted(self):
        """The run of the highlighted row, or None."""
        run_id = self.query_one(RunsTable).highlighted_id()
        return self.app.runs.get(run_id) if run_id is not None else None

    def on_data_table_row_highlighted(self, event) -> None:
        self.app.picked_run = self.highlighted()
        self.show_export_note(self.app.picked_run)
        self.app.refresh_bindings()   # e offered only where the highlighted run can be exported

    def show_export_note(self, record) -> None:
        """Under the table: where the highlighted run was exported, the path and the command
        on lines of their own (inside a sentence a path was broken mid-token)."""
        note = self.query_one("#export-note", Static)
        width = note.content_size.width or self.app.size.width - 2   # (before its first layout)
        whole = self.query_one(RunsTable).left_out.get(record.id) if record is not None else None
        # last, what its row had no room for (the twelfth walk: nothing showed it at 80 columns)
        said = "\n" + settings_lines(f"{record.name}: {whole}", width) if whole else ""
        if record is None or not record.export_path:
            text = (HINT if self.app.runs else self.no_run_hint()) + said
        else:
            where = "\n".join(path_pieces(record.export_path, width))
            text = (f"{said[1:]}\n" if said else "") + (f"{record.name} was exported to\n{where}\n{what_opens(record.export_path)}:\n"
                    f"{tensorboard_lines(record.export_path, width)}")   # the command last, to copy
        self.query_one("#export-note", Static).update(Text(text))

    def on_resize(self) -> None:
        """The command laid out again for the new width."""
        self.show_export_note(self.app.picked())

    def action_mark(self) -> None:
        self._toggle_mark()

    def action_unmark(self) -> None:
        self._toggle_mark()

    def _toggle_mark(self) -> None:
        record = self.highlighted()
        if record is None:
            self.action_no_run_to_mark()
            return
        record.selected = not record.selected
        self.run_changed(record)
        self.app.refresh_bindings()   # c offered only where the runs marked can be compared; unmark on it


VIEW = HistoryView
