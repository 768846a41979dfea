"""What a sixth walk-through of the app by a new user found in its words and numbers (issue
30, at 80x24), each driven by Pilot on the real app: the top line and Watch say what `r`
will do as `r` then does it (3.1); a refused field shows it while it has the focus (3.2);
numbers are grouped in the iterations table and the help (3.3); History's rows say the
settings that tell runs apart in one order (3.4); a refusal's toast from another screen
does not cover History's path (2.4); the progress bar says 100% only at the end, and
History says `no` for a run not exported (4).

Runs are recorded real runs played back (tests/fixtures) or made up by
couplescope.core.synthetic; no worker process, no catalogue (no torch import)."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable, Input, ProgressBar

from couplescope.core import replay, synthetic
from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.form import PickForm
from couplescope.protocol.spec import RunSpec
from test_tui_first_use import text
from test_tui_fourth_walk_form import table_rows
from test_tui_replay import compare_shown, replay_app, run_each, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

SAVE_MODEL_REFUSED = "--save-model applies to --task train"


def status(app) -> str:
    return str(app.main.query_one("#status").render())


def spec(**given) -> RunSpec:
    given = {"model": "simplenet", "warmup": 1, "iterations": 3, "profile_iterations": 0, **given}
    return RunSpec(**given)


# -- 3.1 the top line and Watch say what r does --------------------------------------------------------

async def test_after_a_run_the_top_line_says_r_will_not_run_while_the_form_is_refused():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        assert "r runs again" in status(app), status(app)
        app.recording = None   # r runs the form from now on, as after a run of the form's
        app.runs[1].request = app.main.query_one(PickForm).build()   # (the recording's was the run's)
        field = app.main.query_one("#save_model", Input)
        field.focus()
        await pilot.press("m")
        await until(pilot, lambda: SAVE_MODEL_REFUSED in text(app, "#preview"), text(app, "#preview"))
        await until(pilot, lambda: SAVE_MODEL_REFUSED in status(app), status(app))
        # it kept "#1 simplenet finished: e exports, c compares, r runs again, ? help"
        assert "r runs again" not in status(app) and f"r will not run: {SAVE_MODEL_REFUSED}" in status(app)
        # (at 80 columns without the keys the footer offers: it took two lines; eighth walk)
        assert status(app) == f"#1 simplenet finished: r will not run: {SAVE_MODEL_REFUSED}", status(app)
        await pilot.press("escape", "r")   # and r says the same
        await until(pilot, lambda: f"cannot run: {SAVE_MODEL_REFUSED}" in status(app), status(app))
        await pilot.press("w")
        field.value = ""                   # a value it runs: the promise back
        await until(pilot, lambda: "r runs again" in status(app), status(app))


async def test_watch_before_any_run_says_what_r_answers():
    app = CoupleScopeApp(RunOptions(), load_catalogue=False)   # nothing picked
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "pick a model" in status(app), status(app))
        await pilot.press("w")
        await pilot.pause()
        watch = " ".join(text(app, "#stats").split())
        await pilot.press("r")
        await until(pilot, lambda: "cannot run" in status(app), status(app))
        answer = status(app)
        # it said "no run yet: r runs what Pick (p) shows", and r: "cannot run: nothing to run: ..."
        assert "r runs what" not in watch and "pick a model or a preset" in watch, watch
        assert answer == "cannot run: nothing to run: pick a model or a preset", answer
        await pilot.press("h")
        await pilot.pause()
        assert "pick a model or a preset" in text(app, "#export-note"), text(app, "#export-note")
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)   # a run to make
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r runs what" in status(app), status(app))
        await pilot.press("w")
        await until(pilot, lambda: "r runs what Pick (p) shows" in text(app, "#stats"), text(app, "#stats"))


# -- 3.2 a refused field shows it while it has the focus -----------------------------------------------

async def test_a_refused_field_shows_it_while_focused_and_still_shows_the_focus():
    from rich.color import ColorSystem

    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field = app.main.query_one("#save_model", Input)
        field.focus()
        await pilot.pause()

        def drawn():   # the background of its row as the terminal gets it (256 colours in tmux)
            colour = field.render_line(0)._segments[-1].style.bgcolor
            return colour.downgrade(ColorSystem.EIGHT_BIT).number, colour.triplet, field.rich_style.bold

        focused, _, _ = drawn()
        await pilot.press("m")
        await until(pilot, lambda: field.has_class("-refused"), text(app, "#preview"))
        await pilot.pause()
        refused_focused, (red, green, _), bold = drawn()
        await pilot.press("tab")
        await pilot.pause()
        refused, _, _ = drawn()
    # it was drawn in the focus colour (94 in 256 colours) till the field was left
    assert refused_focused != focused and red > 2 * green, (focused, refused_focused, (red, green))
    assert refused_focused != refused and bold, (refused_focused, refused)   # and still shows the focus


# -- 3.3 numbers grouped as the app groups them ---------------------------------------------------------

async def test_the_iterations_table_groups_its_numbers_and_still_fits():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.main.query_one("#iteration-table").add_iterations(
            [{"kind": "timed", "seconds": 1.15e-5, "max_rel_error": 0.0, "passed": True, "index": i}
             for i in range(1, 10_002)])
        app.main.query_one("#iteration-table").flush()
        last, header = table_rows(app)[-1], text(app, "#iterations-header")
        # it read "10016 timed"
        assert last.startswith("  10 016 timed"), last
        assert last.index("timed") == header.index("kind") and last.endswith("PASSED"), (header, last)
        assert app.main.query_one("#iteration-table").region.right <= 80


async def test_the_help_groups_its_numbers():
    from couplescope.frontends.tui.help import help_text

    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("?")
        await until(pilot, lambda: len(app.screen_stack) > 1, "the help")
        words = help_text(app.views)
    ungrouped = re.findall(r".{0,20}(?<![\w.])\d{4,}(?![\w.]).{0,10}", words)
    assert "10 000 (preset)" in words and not ungrouped, ungrouped   # it said "10000 (preset)"


# -- 3.4 History: what tells runs apart, first and in one order -----------------------------------------

def test_history_says_the_settings_that_differ_first_in_one_order():
    from couplescope.core.request import from_specs
    from couplescope.frontends.tui.runs import RunRecord
    from couplescope.frontends.tui.runs_apart import rows_words
    from couplescope.frontends.tui.runs_table import RUN_WIDTH, named, run_cell

    made = ((1, [spec(backend="torchscript", warmup=1, iterations=10, size=1)]),
            (2, [spec(backend="bridge", warmup=10, iterations=1000, size=1)]),
            (4, [spec(backend="bridge", warmup=10, iterations=300, size=1),
                 spec(backend="bridge", warmup=10, iterations=300, size=2)]))
    runs = [RunRecord(n, "simplenet", specs, from_specs(specs)) for n, specs in made]
    width = RUN_WIDTH + 3   # History's run column at 80 columns
    words = rows_words(runs, lambda r: width - len(named(r)))
    cells = [run_cell(r, words[r.id], width).plain for r in runs]
    # it kept the shorter words: "torchscript, warm-up 1, …" beside "bridge, size 1,2, …"; then
    # the backends, which tell apart no run the iterations did not, before the size of #4's
    # sweep (the twelfth walk: the settings first, the task and backends after them)
    assert cells == ["  #1 simplenet  iterations 10, size 1, …", "  #2 simplenet  iterations 1 000, size 1, …",
                     "  #4 simplenet  iterations 300, size 1,2, …"], cells
    assert all(len(c) <= width for c in cells), cells
    wide = rows_words(runs, lambda r: 80)
    # the most telling first (three values), then the settings of two values, the backend
    # after them (it tells apart no run the iterations did not: the twelfth walk)
    assert wide[4] == "iterations 300, size 1,2, warm-up 10, infer: bridge", wide


# -- 2.4 a refusal's toast from another screen does not cover History's path -------------------------

async def test_a_refusal_toast_from_the_compare_screen_does_not_cover_history_s_path(tmp_path):
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h", "e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "the compare screen")
        await pilot.press("s")   # refused: no run is going
        await until(pilot, lambda: any(n.message.startswith("no run is going") for n in app._notifications),
                    "the refusal's toast")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, "History")
        await pilot.pause()
        shown = on_screen(app)
        # the toast stayed 5 s over the right half of the path and the command
        note = text(app, "#export-note")
        assert "no run is going" not in shown, shown
        joined = re.sub(r" *\n *", "", shown)   # (a path longer than the line wraps)
        assert all(line in joined for line in note.splitlines()), (note, shown)
        await pilot.press("s")   # refused on History: the top line says it, no toast over the path
        await until(pilot, lambda: status(app).startswith("no run is going"), status(app))
        assert not any(n.message.startswith("no run is going") for n in app._notifications)


# -- 4. the progress bar at its end only; History says no ------------------------------------------------

async def test_the_progress_bar_says_100_only_when_every_call_is_made_and_history_says_no():
    made = spec(iterations=1009, profile_iterations=3)   # 1 + 1009 + 3 = 1013 calls
    played = synthetic.events_for(made)
    kinds = [ev.get("kind") for ev in played]
    assert [len(ev["ns"]) for ev in played if ev["event"] == "iterations"] == [1, 1009, 3], kinds
    # 1 010 calls made (the warm-up and the timed), the variant still going when the run ends
    cut = played[:kinds.index("profiled")]
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording(cut, "simplenet"))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await until(pilot, lambda: "1 010/1 013 calls" in text(app, "#stats"), text(app, "#stats"))
        bar = app.main.query_one(ProgressBar)
        shown = str(bar.query_one("#percentage").render())
        await run_each(pilot, [])
        exported = app.main.query_one("#runs", DataTable).get_row("1")[-1]
    assert str(exported).strip() == "no", repr(exported)   # it was blank
    assert shown == "99%", shown   # 99.7%: it said 100%
