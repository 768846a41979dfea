"""The History view's table: every run of the session, one row each.

The highlighted row is the run `e` exports; `space` marks rows for the compare view.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from couplescope.frontends import formatting as fmt


class RunsTable(DataTable):
    """`space` (mark a run) is the History view's key (views/history.py)."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("", key="mark", width=1)
        # 80 columns hold every column: a path never fits, so the highlighted run's export
        # path is written in full under the table (the app's #export-note)
        self.add_column("run", key="run", width=24)
        self.add_column("variants", key="variants", width=8)
        self.add_column("status", key="status", width=8)
        self.add_column("fastest", key="median", width=8)
        self.add_column("checks", key="checks", width=7)
        self.add_column("exported", key="export", width=8)

    def add_run(self, record) -> None:
        self.add_row("", record.name, str(len(record.specs)), record.status, "", "", "", key=str(record.id))
        self.move_cursor(row=self.row_count - 1)

    def update_run(self, record) -> None:
        key = str(record.id)
        checks = record.checks()
        style = {"PASSED": "bold green", "FAILED": "bold red", "ERROR": "bold red"}.get(checks, "")
        self.update_cell(key, "status", record.status)
        self.update_cell(key, "variants", record.variants_words())
        self.update_cell(key, "median", fmt.seconds(record.fastest_median()))
        self.update_cell(key, "checks", Text(checks, style=style))
        self.update_cell(key, "mark", "*" if record.selected else "")
        if record.export_path:
            self.update_cell(key, "export", "yes")

    def highlighted_id(self) -> int | None:
        if not self.row_count:
            return None
        return int(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
