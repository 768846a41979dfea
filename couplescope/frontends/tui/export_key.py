"""The export key (`e`): the run History highlights, copied to a new run directory on a
thread, the top line saying so at once and then where it went.

A part of the app (CoupleScopeApp inherits it), as endings.py is: it reads the app's runs
and the form's export field, and tells the views when a run was exported.
"""

from __future__ import annotations

import os

from textual import work

from couplescope.export.run_dir import DEFAULT_PARENT
from couplescope.frontends.tui import messages as m
from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.messages import while_shown
from couplescope.frontends.tui.runs import RunRecord
from couplescope.frontends.tui.top_line import Words, forms
from couplescope.frontends.tui.views.history import tensorboard_command, what_opens
from couplescope.protocol.errors import UsageError


class ExportKey:
    """`e` and what answers it (see the module docstring)."""

    def picked(self) -> RunRecord | None:
        """The run `e` exports: History's highlighted one, else the latest."""
        if self.picked_run is not None and self.runs.get(self.picked_run.id) is self.picked_run:
            return self.picked_run
        return self.runs[max(self.runs)] if self.runs else None

    def tell(self, words: Words, where: Words = "") -> None:
        """The top line says `words` (`where`: set_status's), and a screen over it (compare)
        shows them as a toast: `e` there exported with no sign, the top line under the
        compare's title."""
        self.set_status(words, where=where)
        if self.screen is not self.main:
            self.notify(forms(words)[0], timeout=8)

    def action_leave_compare(self) -> None:
        """escape on compare: back to the views, and the toasts said over compare go (the top
        line, on the screen again, says tell's words): `e` there, then escape, left the
        export's toast over History's path and command for seconds (the thirteenth walk)."""
        self.pop_screen()
        self.clear_notifications()

    def exportable(self) -> bool:
        """Whether `e` can act: the run it exports has ended and measured something (the
        footer offered e before any run, and e then refused)."""
        record = self.picked()
        return record is not None and record.status != "running" and bool(record.measured())

    def export_folder(self) -> str:
        """Where a run is exported: the form's export field (the command line's --export
        fills it), else ./couplescope-runs; raises UsageError for a value it refuses."""
        return self.main.query_one(PickForm).export_dir() or DEFAULT_PARENT

    def action_export(self) -> None:
        """Export the picked run on a thread (copying its traces and drawing summary.png take
        seconds): the status line says so at once, and where it went when it is done."""
        record = self.picked()
        if record is None:
            self.say_why_not("nothing to export yet: run something first (r)")
            return
        if record.status == "running" and record.stopping:   # (s is refused then: r's words)
            self.say_why_not(record.still_stopping("e exports it once it has stopped"))
            return
        if record.status == "running":
            self.say_why_not(record.untitled(f"{record.name} is still running: e exports it once it ends (s stops it)"))
            return
        if self.exporting is not None:
            self.say_why_not(self.exporting.untitled(f"{self.exporting.name} is being exported: e again when it is done"))
            return
        if not record.measured():
            self.say_why_not(record.untitled(f"nothing to export: {record.name} made no {record.unit()} (the log, t, says why)"))
            return
        try:
            parent = self.export_folder()
        except UsageError as exc:
            self.say_why_not(f"cannot export: {exc}")
            return
        if already_in(record, parent):   # a second copy, written without a word, helped no one
            # the top line only, as an export's end: a toast sat over the path under History;
            # an answer to the key, gone with the next key (it stayed for good)
            where = "" if self.history_shown() else " (h shows where)"
            self.say_why_not(record.untitled(f"{record.name} is already exported, to "
                                             f"{os.path.basename(record.export_path)}{where}"),
                             toast=self.screen is not self.main)
            return
        self.exporting = record
        record.export_done.clear()
        self.tell(record.untitled(f"exporting {record.name} to {parent} ...",
                                  f"exporting {record.name} to {os.path.basename(os.path.abspath(parent))} ..."))
        self.export_run(record, parent)

    @work(thread=True, exit_on_error=False, group="export")
    def export_run(self, record: RunRecord, parent: str) -> None:
        path = error = None
        record.export_earlier = record.export_path
        try:
            path = record.export(parent)
        except (UsageError, OSError) as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - shown in the app, never closes it
            error = f"{type(exc).__name__}: {exc}"
        finally:
            record.export_done.set()
            self.post_message(m.Exported(record.id, path, error))

    @while_shown
    def on_exported(self, msg: m.Exported) -> None:
        record = self.runs.get(msg.run_id)
        self.exporting = None
        if record is None:
            return
        if msg.error is not None:
            self.notify(msg.error, title="export failed", severity="error", timeout=8)
            self.note(f"export failed: {msg.error}", "error")
            self.set_status(record.untitled(f"{record.name}: export failed (the log, t, says why)"))
            return
        path = msg.path
        if record.summary_error:
            self.note(record.summary_error, "warning")
        if record.export_missing:   # a full disk: results.json was written, these were not
            self.note(f"export incomplete (no room): not written: {', '.join(record.export_missing)}", "error")
        self.note(f"exported {record.name} to {path}; {what_opens(path)}: {tensorboard_command(path)}")
        # the status line, not a toast: a toast sat over the path under History for seconds;
        # and the toasts shown meanwhile go (`e` again while it exported: "being exported")
        self.clear_notifications()
        if record.export_earlier and os.path.isdir(record.export_earlier):   # the export field changed since
            # the folders by their names where the paths do not fit (80 columns): the first's
            # too where it fits (the ninth walk read `a second copy written, in myruns` alone)
            copy = f"{record.name}: a second copy written, in"
            self.tell(record.untitled(f"{copy} {os.path.dirname(path)} (the first is in "
                                      f"{os.path.dirname(record.export_earlier)})",
                                      f"{copy} {folder_name(path)} (the first in "
                                      f"{folder_name(record.export_earlier)})",
                                      f"{copy} {folder_name(path)}"),
                      where=("; h: where, and its command", "; h shows where"))
        else:
            self.tell(record.untitled(f"{record.name} exported to {os.path.basename(path)}"),
                      where=(" (where, and its command: h)", "; h shows where"))
        for view in self.views:
            view.run_changed(record)


def already_in(record: RunRecord, parent: str) -> bool:
    """Whether the run was exported into `parent` already, and its directory is still there
    (one removed since is written again; another folder in the export field gets a copy)."""
    path = record.export_path
    return bool(path) and os.path.isdir(path) and os.path.realpath(os.path.dirname(path)) == os.path.realpath(parent)


def folder_name(path: str) -> str:
    """The name of the folder a run directory is in (`couplescope-runs`)."""
    return os.path.basename(os.path.dirname(os.path.abspath(path)))
