"""What a ninth walk-through of the app by a new user found in History, on Watch's plot axis,
on the top line and in docs/tui.md (issue 30, at 80x24), each on the real app driven by
Pilot or on the real function: each History row shows what tells it apart in the room it
has, and a run alone what is notable about it (2b); Watch's time axis is in the unit the
rest of the app writes its top in (3d); the docs list the Pick form's fields in its order
and quote the top line as it reads (4).

Runs are recorded real runs played back (tests/fixtures) or requests built as the command
line builds them; no worker process, no catalogue (no torch import)."""

from __future__ import annotations

import os
import pytest

from couplescope.frontends.tui.runs import RunRecord
from couplescope.frontends.tui.watch_widgets import TimePlot
from test_tui_eighth_walk_top import built
from test_tui_eighth_walk_watch import y_labels
from test_tui_replay import replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def records(*argvs) -> list[RunRecord]:
    return [RunRecord(n, req.title, req.specs, req) for n, req in enumerate((built(*a) for a in argvs), 1)]


def cells(runs, width: int) -> list[str]:
    """The run cells as History writes them in a run column `width` wide."""
    from couplescope.frontends.tui.runs_apart import rows_words
    from couplescope.frontends.tui.runs_table import named, run_cell

    words = rows_words(runs, lambda r: width - len(named(r)))
    return [run_cell(r, words[r.id], width).plain for r in runs]


# -- 2b. History: what tells each row apart, in the room it has ----------------------------------

def the_training_walk() -> list[RunRecord]:
    """w9b: simplenet-train at 300 steps, again at size 2, then at 600 steps."""
    return records(("--preset", "simplenet-train", "--iterations", "300"),
                   ("--preset", "simplenet-train", "--iterations", "300", "--size", "2"),
                   ("--preset", "simplenet-train", "--iterations", "600"))


@pytest.mark.parametrize("width", [41, 44])   # the run column at 80: with `not judged`, without
def test_two_training_runs_apart_in_steps_read_apart_in_history(width):
    """`#1 simplenet-train  size default, …` and `#3 ... size default, …` hid the 300 and
    600 steps that told them apart: `size default` was the first setting of the rows'
    order and `steps 300` no longer fitted after it."""
    shown = cells(the_training_walk(), width)
    assert all(len(c) <= width for c in shown), shown
    assert "steps 300" in shown[0] and "steps 600" in shown[2], shown
    assert "size 2" in shown[1], shown
    assert len(set(shown)) == 3, shown   # no two rows read alike


def test_a_piece_too_long_no_longer_hides_a_shorter_one_after_it():
    from couplescope.frontends.tui.runs_apart import fitted

    assert fitted(["iterations 1 000", "size default", "preset"], None, 27) == "iterations 1 000, preset, …"
    assert fitted(["a long setting", "b"], None, 30) == "a long setting, b"   # all fit: no `…`
    assert fitted(["a path far too long for the row"], None, 10) == "a path far too long for the row"


def test_a_run_alone_says_its_sweep_and_what_it_changed():
    """A lone `--preset simplenet --size 1,2` read `preset, infer`: its sizes were said only
    once a second run existed. What the preset alone sets (its 1 000 iterations, warm-up 10)
    is not notable; what the user changed is, the sizes first."""
    from couplescope.frontends.tui.runs_apart import rows_words

    assert rows_words(records(("--preset", "simplenet", "--size", "1,2")), lambda r: 80) == {
        1: "size 1,2, preset, infer"}
    alone = records(("--preset", "simplenet", "--iterations", "300", "--size", "1,2"))
    assert rows_words(alone, lambda r: 80) == {1: "size 1,2, iterations 300, preset, infer"}
    assert cells(alone, 45) == ["  #1 simplenet  size 1,2, iterations 300, …"]
    assert rows_words(records(("--model", "simplenet")), lambda r: 80) == {1: "infer: torchscript"}
    assert rows_words(records(("--model", "simplenet", "--threads", "2")), lambda r: 80) == {
        1: "threads 2, infer: torchscript"}


async def test_history_at_80x24_tells_the_training_runs_apart_and_says_a_lone_sweep():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        table = app.main.query_one("#runs")
        lone, *training = records(("--preset", "simplenet", "--size", "1,2"),
                                  *(("--preset", "simplenet-train", "--iterations", n, *size)
                                    for n, size in (("300", ()), ("300", ("--size", "2")), ("600", ()))))
        for n, record in enumerate([lone, *training], 1):
            record.id, record.status = n, "finished"
            app.runs[n] = record
            table.add_run(record)
        await pilot.pause()
        rows = on_screen(app).splitlines()
        assert any("#1 simplenet  size 1,2, preset, infer" in row for row in rows), rows
        said = [next(row for row in rows if f"#{n} simplenet-train" in row) for n in (2, 3, 4)]
        assert "steps 300" in said[0] and "size 2" in said[1] and "steps 600" in said[2], said


# -- 3d. Watch's time axis in the unit the app writes its top in ---------------------------------

def test_the_axis_unit_is_the_one_formatting_seconds_writes_its_top_in():
    from couplescope.frontends import formatting as fmt
    from couplescope.frontends.tui.watch_widgets import axis_unit

    for top in (11.5, 7.6639, 1.0, 0.9, 1.0132e-3, 9.9e-3, 13.7e-3, 773.6e-6, 1.2e-6):
        unit, scale = axis_unit(top)
        assert fmt.seconds(top).endswith(f" {unit}"), (top, unit, fmt.seconds(top))
        assert scale == {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    assert axis_unit(3e-7) == ("µs", 1e6)   # (ns, formatting's below 1 µs: an axis's labels 0.1 to 0.3 µs)


async def test_a_stride_plot_reads_seconds_beside_the_table_s_seconds():
    """stride at N=512 takes 7.66 s an iteration: the axis read `7663.9┤`, `time per
    iteration (ms)` beside the table's `1 warm    7.664 s`. (The Watch view of the real app
    at 80x24, its plot given the walk's figures.)"""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("w")
        await pilot.pause()
        plot = app.screen.query_one(TimePlot)
        times = [7.664, 7.512, 7.498, 7.701, 7.583, 7.620, 7.655, 7.490, 7.533, 7.688]
        plot.reset("stride-torchscript", [{"kind": "warmup" if i == 0 else "timed", "seconds": s}
                                          for i, s in enumerate(times)])
        plot.draw(force=True)
        await pilot.pause()
        drawn = str(plot.render())
        assert "time per iteration (s)" in drawn, drawn
        labels = [float(label) for label, _ in y_labels(drawn)]
        assert labels and all(7 <= v < 12 for v in labels), labels


# -- 4. docs/tui.md: the Pick fields in the form's order; the top line as it reads ---------------

#: the Pick paragraph's words for the form's fields (docs/tui.md), by the label the form shows
PICK_WORDS = {"model": "the model", "size": "size", "host": "host", "grad mode": "grad mode",
              "bridge runs": "the bridge runs", "device": "device", "dtype": "dtype",
              "layout": "layout", "input shape": "input shape", "name": "name,", "warm-up": "warm-up",
              "iterations": "iterations", "threads": "threads", "seed": "seed",
              "profiled calls": "profiled calls", "profile max ops": "profile max ops", "export": "export"}


def pick_paragraph() -> str:
    text = open(os.path.join(DOCS, "tui.md"), encoding="utf-8").read()
    start = text.index("**Pick.**")
    return " ".join(text[start:text.index("flags are", start)].split())


async def form_labels() -> tuple[list[str], list[str]]:
    """The Pick form at 80x24, top to bottom: its fields' labels, and the labels of those
    that take words."""
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.fields import FieldInput

    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        labels = [str(w.render()) for w in app.screen.query("Label") if (w.id or "").endswith("-label")]
        words = [str(app.screen.query_one(f"#{w.id}-label").render())
                 for w in app.screen.query(FieldInput) if w.takes_words]
    return labels, words


async def test_the_docs_name_the_pick_fields_in_the_form_s_order():
    """docs/tui.md listed `iterations, warm-up, torch threads` where the form has warm-up
    first: a walker typed the iterations into warm-up."""
    labels, _ = await form_labels()
    paragraph = pick_paragraph()
    named = [label for label in labels if label in PICK_WORDS]
    assert set(named) == set(PICK_WORDS), (named, labels)
    where = [paragraph.index(PICK_WORDS[label]) for label in named]
    assert where == sorted(where), [(label, paragraph.index(PICK_WORDS[label])) for label in named]


async def test_the_docs_name_every_field_that_takes_words():
    _, words = await form_labels()
    text = " ".join(open(os.path.join(DOCS, "tui.md"), encoding="utf-8").read().split())
    said = text[text.index("The few fields that take words"):text.index("keep letters as text")]
    spoken = {"name": "name", "memory limit": "memory limit", "baseline": "baseline",
              "save model": "trained model's path", "export": "export directory",
              "launcher args": "launcher's arguments"}
    missing = [label for label in words if spoken.get(label, label) not in said]
    assert not missing, (missing, said)


async def test_a_second_copy_names_both_folders_where_their_names_fit_80_columns(tmp_path):
    """`e` with another folder in the export field read `#2 simplenet: a second copy written,
    in myruns`, without the `(the first is in ...)` the docs quote: the paths did not fit
    80 columns, and the folders' names were said for the copy only."""
    from test_tui_first_use import text

    app = replay_app("two-backends")
    app.options.export = str(tmp_path / "couplescope-runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        app.query_one("#export").value = str(tmp_path / "myruns")
        await pilot.press("e")
        await until(pilot, lambda: "a second copy" in text(app, "#status"), text(app, "#status"))
        status = " ".join(text(app, "#status").split())
        assert status == "#1 simplenet: a second copy written, in myruns (the first in couplescope-runs)", status


async def test_the_docs_say_where_pick_s_focus_starts_with_a_preset():
    """A walker in a `--tui --preset` session expected the focus on the preset: it starts
    on model, which the docs now say, with the way up to the preset."""
    from couplescope.frontends.cli.parser import build_parser, options_from
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(options_from(build_parser().parse_args(["--preset", "simplenet"])), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "model", app.focused
        await pilot.press("escape", "tab")
        assert app.focused is not None and app.focused.id == "preset", app.focused
    said = " ".join(open(os.path.join(DOCS, "tui.md"), encoding="utf-8").read().split())
    assert "The focus starts on `model`, in a `--tui --preset NAME` session too" in said
    assert "`escape` then `tab` puts the focus on `preset`" in said


@pytest.mark.parametrize("width", [41])   # the run column at 80 with `not judged`, as the walk's
def test_beside_a_row_cut_with_an_ellipsis_a_row_that_leaves_words_out_says_so(width):
    """The tenth walk: `#1 simplenet-train  size default, …` above `#2 simplenet-train  size
    2, preset`, whose `train` (the task both runs share) the shorter form had left out with
    nothing saying so; at 130 columns it read `size 2, preset, train`. (The walk's `size
    default` is `size 1` now, the model's own, short enough to fit: the row cut here is one
    whose learning rate, a setting that tells it apart, has no room.)"""
    runs = records(("--preset", "simplenet-train", "--iterations", "300", "--lr", "0.0125"),
                   ("--preset", "simplenet-train", "--iterations", "300", "--size", "2"))
    shown = cells(runs, width)
    assert shown[0].endswith("…"), shown
    for cell, whole in zip(shown, cells(runs, 130)):
        assert len(cell) <= width, cell
        assert cell == whole or cell.endswith("…"), (cell, whole)
