"""What the twelfth walk-through of the app by a new user found in History's and Pick's
words (issue 30, at 80x24), each on the real app driven by Pilot: History's rows say, in
one order, the settings that tell the runs apart, a preset only where it tells them apart
(2a); a preset picked over values typed in the fields says which gave way (3a).

Runs are built from the walk's command lines and given the model each variant loaded as a
recorded run's `model_loaded` event says it (tests/fixtures); no worker process."""

from __future__ import annotations

import pytest

from textual.widgets import Input, Select

from couplescope.core import replay
from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from test_tui_first_use import text

from test_tui_ninth_walk_words import cells, records
from test_tui_replay import FIXTURES, replay_app, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def loaded(record, size: int = 1):
    """The record's variants as having loaded their model, at their size (the model's own,
    simplenet's 1, where none was asked): the recorded event, for each variant."""
    event = next(e for e in replay.read(f"{FIXTURES}/two-backends.jsonl") if e.get("event") == "model_loaded")
    for spec in record.specs:
        record.builder.on_event({**event, "variant": spec.label, "size": spec.size or size})
    return record


def the_walk(count: int = 6):
    """w12's runs: simplenet (the model), the simplenet preset, three at size 1,2 and 300
    iterations, one at size 1,2 (the preset's 1 000 iterations)."""
    sweep = ("--preset", "simplenet", "--size", "1,2")
    argvs = [("--model", "simplenet"), ("--preset", "simplenet"), *[(*sweep, "--iterations", "300")] * 3, sweep]
    return [loaded(r) for r in records(*argvs[:count])]


# -- 2a. History: what tells the runs apart, in one order on every row -----------------------------

def row_words(rows, n: int) -> str:
    row = next(row for row in rows if f"#{n} simplenet " in row)
    return row.split("simplenet", 1)[1].split("  ")[1]   # after the name, before the variants


@pytest.mark.parametrize("count", [3, 6])
async def test_history_says_the_sizes_and_iterations_that_tell_the_walk_s_runs_apart(count):
    """Six runs read `#6 simplenet  iterations 1 000, preset, …` (its `size 1,2`, the one
    thing telling it from #2, hidden while `preset` took its place on this row only), and
    three `#3 simplenet  iterations 300, preset, …` (the sweep's size hidden)."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        table = app.main.query_one("#runs")
        for record in the_walk(count):
            record.status = "finished"
            app.runs[record.id] = record
            table.add_run(record)
        await pilot.pause()
        rows = on_screen(app).splitlines()
        said = {n: row_words(rows, n) for n in range(1, count + 1)}
        assert said[1].startswith("iterations 10, ") and said[2].startswith("iterations 1 000, size 1"), said
        for n in range(3, count + 1):   # the sweep's size on every sweep
            assert said[n].startswith(("iterations 300, size 1,2", "iterations 1 000, size 1,2")), said
        for words in said.values():
            second = words.split(", ")[1]
            assert second.startswith(("size", "…")), said    # one order: the size second on every row
        assert all(len(row) <= 80 for row in rows)
        if count == 6:   # the highlighted row's words in full under the table: nothing showed them
            assert "#6 simplenet: iterations 1 000, size 1,2, warm-up 10, preset, infer" in rows, rows


def test_every_row_keeps_the_settings_that_tell_it_apart_in_one_order():
    """In the run column at 80 columns (44): each row keeps its iterations and size, in
    that order; `, …` where it fits after them, and #6's size kept where it does not, with ` …`."""
    assert cells(the_walk(), 44) == ["  #1 simplenet  iterations 10, size 1, …",
                                     "  #2 simplenet  iterations 1 000, size 1, …",
                                     *["  #3 simplenet  iterations 300, size 1,2, …".replace("3", str(n), 1)
                                       for n in (3, 4, 5)],
                                     "  #6 simplenet  iterations 1 000, size 1,2 …"]


# -- 3a. a preset picked says what it cleared -----------------------------------------------------

def status(app) -> str:
    return str(app.main.query_one("#status").render())


def preview(app) -> str:
    return " ".join(text(app, "#preview").split())


async def test_a_preset_picked_says_the_values_it_cleared_and_the_run_line_the_size_it_kept():
    """Iterations 300 typed and a model given, then simplenet-train picked: the preset's
    values took their place without a word, while the size 1,2 typed stayed and made 8
    variants (the twelfth walk). The top line says what gave way, on one row; the Run line
    says the size kept."""
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#iterations", Input).value = "300"
        app.main.query_one("#size", Input).value = "1,2"
        await until(pilot, lambda: "(size 1,2)" in preview(app), preview(app))
        app.main.query_one("#preset", Select).value = "simplenet-train"
        await until(pilot, lambda: "way to the preset's" in status(app), status(app))
        assert status(app) == "simplenet-train: model simplenet and iterations 300 give way to the preset's"
        assert app.main.query_one("#status").region.height == 1
        await until(pilot, lambda: "training" in preview(app), preview(app))
        assert "8 variants" in preview(app) and "(size 1,2" in preview(app), preview(app)
        rows = on_screen(app).splitlines()
        assert any("give way to the preset's" in row for row in rows[:2]), rows
        app.main.query_one("#preset", Select).value = "simplenet"   # nothing typed cleared: nothing said
        await until(pilot, lambda: "training" not in preview(app), preview(app))
        await until(pilot, lambda: "give way" not in status(app), status(app))
