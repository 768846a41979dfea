"""The History view's table: every run of the session, one row each.

The highlighted row is the run `e` exports; `space` marks rows for the compare view.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.compare_table import spaced, verdict_text
from couplescope.frontends.tui.runs_apart import rows_words
from couplescope.protocol.step_words import NOT_JUDGED


#: the run column's width at least: its mark, its name and what tells it from the others
#: (runs_apart.py); it takes what the other columns leave of the table's width
RUN_WIDTH = 42
#: the other columns: (key, label, width); each cell after a space (compare_table.spaced).
#: The fastest median's is a column wider than its longest figure (`116.2 ms`): `169.8 µs
#: yes` ran into the next column where the header read `fastest  exported`.
COLUMNS = (("variants", "variants", 9), ("verdict", "verdict", 8), ("median", "fastest", 10),
           ("export", "exported", 9))


def verdict_cell(record) -> Text:
    """The run's verdict (RunRecord.verdict: the compare view's word), `not judged` in
    place of PASSED when a training variant made too few steps for its learning task to
    be judged (Watch's `[training] not judged: 310 of the ~10 000 steps it needs`)."""
    word = record.verdict()
    if word == "PASSED" and any(v.learning_not_judged() for v in record.builder.variants.values()):
        return Text(NOT_JUDGED, style="bold yellow")
    return verdict_text(word)


def named(record) -> str:
    """`* #2 simplenet  ` (`*`: marked for compare): what comes before what tells it apart."""
    return f"{'*' if record.selected else ' '} {record.name}  "


def run_cell(record, words: str, width: int = RUN_WIDTH) -> Text:
    """`* #2 simplenet  iterations 1 000, train: torchscript, bridge` in `width` columns;
    what does not fit is left out whole from the end, `…` saying some are not shown: the
    words come in one order on every row (runs_apart.py), so the first ones kept on each
    row read against each other (it kept each row's shortest, and rows showed different
    settings); never cut in a word."""
    text = (named(record) + words).rstrip()
    if len(text) > width:
        pieces = words.split(", ")
        kept = 0
        while kept < len(pieces) and len(named(record) + ", ".join([*pieces[:kept + 1], "…"])) <= width:
            kept += 1
        if kept:
            text = named(record) + ", ".join([*pieces[:kept], "…"])
        else:   # one long word (a path): cut
            text = text[:width - 1] + "…"
    cell = Text(text)
    cell.stylize("bold", 0, min(len(record.name) + 2, len(text)))
    return cell


class RunsTable(DataTable):
    """`space` (mark a run) is the History view's key (views/history.py).

    80 columns hold every column (one space between them, not DataTable's two: the run's
    words need the room): a path never fits, so the highlighted run's export path is
    written in full under the table (the app's #export-note). One verdict column, the
    compare view's word (a stopped run read "stopped" and "PASSED")."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cell_padding=0, **kwargs)
        self._records: list = []   # the runs shown, in order: a run's words depend on the others
        self._cells: dict[str, str] = {}   # the run cells as drawn, by row key
        #: by run id, a row's words in full where its cell leaves some out (the view says
        #: them under the table for the highlighted run: nothing showed them at 80 columns)
        self.left_out: dict[int, str] = {}
        self.run_width = RUN_WIDTH         # the run column's, as wide as the table leaves it
        self.verdict_width = dict((k, w) for k, _, w in COLUMNS)["verdict"]   # `not judged` widens it

    def _name_runs(self) -> None:
        """Every run's cell again: a run added can make an earlier one's setting a difference
        (#1's `size 8` once #2 ran `size 8,16`)."""
        words = rows_words(self._records, lambda record: self.run_width - len(named(record)))
        whole = rows_words(self._records, lambda record: 10 ** 6, mark=False)
        self.left_out = {r.id: whole[r.id] for r in self._records if words[r.id] != whole[r.id]}
        for record in self._records:
            cell = run_cell(record, words[record.id], self.run_width)
            key = str(record.id)
            if self._cells.get(key) != cell.plain:
                self._cells[key] = cell.plain
                self.update_cell(key, "run", cell)

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("run", key="run", width=RUN_WIDTH)
        for key, label, width in COLUMNS:
            self.add_column(spaced(label), key=key, width=width)

    def on_resize(self) -> None:
        """The run column takes what the others leave (at 160 columns it stayed 42 wide
        and cut the settings that told the runs apart), and its words are said again. A
        verdict column widened for `not judged` takes its columns from the run column,
        its least too (80 columns still hold the table)."""
        wider = self.verdict_width - dict((k, w) for k, _, w in COLUMNS)["verdict"]
        others = sum(width for _, _, width in COLUMNS) + wider
        width = max(RUN_WIDTH - wider, self.scrollable_content_region.width - others)
        if width != self.run_width and "run" in self.columns:
            self.run_width = self.columns["run"].width = width
            self._require_update_dimensions = True   # (DataTable's: its widths measured again)
            self._clear_caches()
            self._name_runs()
            self.refresh()

    def add_run(self, record) -> None:
        self._records.append(record)
        self.add_row("", spaced(str(len(record.specs))), spaced(verdict_cell(record)),
                     "", spaced("no"), key=str(record.id))
        self._name_runs()
        self.move_cursor(row=self.row_count - 1)

    def update_run(self, record) -> None:
        key = str(record.id)
        self._name_runs()   # (its mark for compare)
        verdict = spaced(verdict_cell(record))
        if verdict.cell_len > self.verdict_width:   # `not judged`: the column wider, the run's narrower
            self.verdict_width = self.columns["verdict"].width = verdict.cell_len
            self.on_resize()
        self.update_cell(key, "verdict", verdict)
        self.update_cell(key, "variants", spaced(record.variants_words()))
        self.update_cell(key, "median", spaced(fmt.seconds(record.fastest_median())))
        # `no` said (a blank read as not known yet)
        self.update_cell(key, "export", spaced("yes" if record.export_path else "no"))

    def highlighted_id(self) -> int | None:
        if not self.row_count:
            return None
        return int(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
