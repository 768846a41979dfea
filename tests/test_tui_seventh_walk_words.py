"""What a seventh walk-through of the app by a new user found in its words (issue 30, at
80x24), each on the real app driven by Pilot or the headless printer: the lines the app
prints as it closes fit 80 columns, a run's directory whole on a line of its own (2b);
the quit question during a run says how to stop it with the keys that act (3d); a
training run whose learning task was not judged reads `not judged`, not PASSED, in
History and in the command line's comparison (3e).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import os
import tempfile

import pytest

from couplescope.frontends.tui.quit_screen import QuitScreen
from test_replay import replay_run
from test_tui_first_use import held, text  # noqa: F401 (held: a fixture)
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- 2b. the closing lines ----------------------------------------------------------------------------

@pytest.fixture
def short_folder():
    """A folder with a path as short as the walk's (/tmp/walk7): pytest's tmp_path is
    longer than 80 columns with a run directory under it."""
    with tempfile.TemporaryDirectory(prefix="w7-") as folder:
        yield folder


async def test_ctrl_c_s_closing_lines_fit_80_columns_each_run_directory_whole_on_its_own_line(short_folder):
    """ctrl+c with runs not exported saves them and prints where: `couplescope: run #1
    simplenet saved to /tmp/walk7/couplescope-runs/20261127-094409-simplenet` was 86
    columns, and the terminal wrapped the directory mid-name (a double-click copied half)."""
    parent = os.path.join(short_folder, "couplescope-runs")
    app = replay_app("two-backends")
    app.options.export = str(parent)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await run_replay(pilot)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app._exit, "the app closing")
    paths = [app.runs[1].export_path, app.runs[2].export_path]
    assert all(p and p.startswith(str(parent)) and len(p) <= 80 for p in paths), paths
    assert all(len(line) <= 80 for line in app.farewell), app.farewell
    for number, path in zip((1, 2), paths):
        said = app.farewell.index(f"couplescope: run #{number} simplenet saved to")
        assert app.farewell[said + 1] == path, app.farewell
    assert app.farewell[0] == "couplescope: ctrl+c: the app closed", app.farewell


def test_a_closing_line_breaks_at_spaces_only_and_keeps_a_long_path_whole():
    from couplescope.frontends.tui.endings import closing_lines, saved_lines

    long_path = "/scratch/" + "a-long-project-name/" * 5 + "20261127-094409-simplenet"
    assert saved_lines("#3 simplenet", long_path, ["trace.json"]) == [
        "couplescope: run #3 simplenet saved to", long_path, "(no room for trace.json)"]
    error = f"couplescope: run #1 simplenet not saved: cannot write {long_path} (no space left on device)"
    lines = closing_lines(error)
    assert " ".join(lines) == error and long_path in lines, lines
    assert all(len(line) <= 80 for line in lines if line != long_path), lines


# -- 3d. the quit question's way out ---------------------------------------------------------------

async def test_the_quit_question_during_a_run_says_escape_comes_before_s(held):
    """It said "(s stops it; then e exports what it measured)", and s was refused while it
    asked: "the question first: q or y quits, escape or n goes back"."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, "the run going")
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), app.screen)
        question = app.screen.question
        assert "(escape, then s stops it and e exports what it measured)" in question, question
        assert "(s stops it;" not in question, question
        await pilot.press("escape")                     # and so it goes: escape, then s
        await until(pilot, lambda: not isinstance(app.screen, QuitScreen), app.screen)
        await pilot.press("s")
        await until(pilot, lambda: app.active is None, "the run stopped")
        assert app.runs[1].status == "stopped", app.runs[1].status


# -- 3e. a learning task not judged ---------------------------------------------------------------

async def test_history_says_not_judged_for_a_training_run_too_short_for_its_task():
    """simplenet-train at 40 steps (of the ~10 000 its task needs): Watch said `[training]
    not judged`, History's verdict PASSED; a new user asking "did it learn?" read yes."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await until(pilot, lambda: "not judged" in on_screen(app), on_screen(app))
        rows = on_screen(app).splitlines()
        header = next(line for line in rows if line.startswith("run "))
        row = next(line for line in rows if line.startswith("  #1 simplenet-train"))
        assert "PASSED" not in row and row[header.index("verdict"):].startswith("not judged"), (header, row)
        assert len(row.rstrip()) <= 80 and "120.4 µs" in row and row.rstrip().endswith("no"), row
        await pilot.press("w")
        await pilot.pause()
        assert "[training] not judged" in on_screen(app), on_screen(app)


async def test_history_still_says_passed_for_a_training_run_that_learned():
    app = replay_app("training")                          # 500 steps at lr 0.6: judged, PASSED
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await until(pilot, lambda: "#1 simplenet" in on_screen(app), on_screen(app))
        row = next(line for line in on_screen(app).splitlines() if line.startswith("  #1 simplenet"))
        assert "PASSED" in row and "not judged" not in row, row


def test_the_command_line_s_comparison_says_not_judged_and_why_and_exits_0():
    """The headless comparison's checks said PASSED for every variant of the same run; its
    exit code stays 0 (docs/usage.md: not judged is not failed)."""
    outcome, out, err = replay_run("preset-train", quiet=True)
    assert outcome.exit_code == 0
    table = out.split("comparison (a training step's median")[1]
    rows = [line for line in table.splitlines() if line.startswith(("direct", "bridge"))]
    assert len(rows) == 4 and all(row.endswith("not judged") for row in rows), rows
    assert "PASSED" not in table, table
    assert ("not judged: every check passed, but too few steps to judge whether the model learned "
            "its task: 41 of the ~10 000 steps it needs; use --iterations 10000") in table, table   # (as recorded)


# -- 2a. a toast over Watch's iterations table -------------------------------------------------------

async def test_a_toast_over_watch_s_table_reaches_the_screen_s_edge_no_letter_beside_it():
    """`s` with no run going, on Watch at 80x24: the toast stopped a column short of the
    edge (the rack's hidden scroll bar), and each iteration row's last letter, the D of
    PASSED, showed in column 79 beside it."""
    from textual.widgets._toast import Toast

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await run_replay(pilot)
        await pilot.press("w")
        await until(pilot, lambda: "PASSED" in " ".join(on_screen(app).splitlines()[8:]), on_screen(app))
        await pilot.press("s")
        await until(pilot, lambda: app.screen.query(Toast) and app.screen.query_one(Toast).region.width,
                    "the refusal's toast")
        toast = app.screen.query_one(Toast)
        assert toast.region.right == 80, toast.region
        beside = [line for line in on_screen(app).splitlines() if "▌" in line]
        assert beside and not any(line.rstrip().endswith("D") for line in beside), beside


# -- 4. ctrl+c's closing lines for a run that measured nothing, and from the compare screen -------------

async def test_ctrl_c_on_compare_goes_back_to_the_views_and_one_line_names_the_runs_that_measured_nothing(
        held, short_folder):
    """ctrl+c on the compare screen left it up, its title over the top line's `saving ...,
    then closing`, for the seconds the saving took; and a run stopped before its first call
    was said `not saved: nothing to export from run #1: no variant loaded its model`, 86
    columns, where History said it measured nothing."""
    app = replay_app("layout-c")
    app.options.export = os.path.join(short_folder, "couplescope-runs")
    seen = {}
    save_and_exit = app._save_and_exit

    def saving():   # the moment the copies begin (they block the app): what the screen shows
        seen["views"], seen["shown"] = app.screen is app.main, on_screen(app)
        save_and_exit()

    app._save_and_exit = saving
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, "run #1 going")
        await pilot.press("s")                          # before its first call: nothing measured
        await until(pilot, lambda: app.active is None, "run #1 stopped")
        held.set()
        await run_replay(pilot)                         # #2: measured, not exported
        await pilot.press("h", "c")
        await until(pilot, lambda: compare_shown(app), "the compare screen")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app._exit, "the app closing")
    assert seen["views"], seen
    assert "saving 1 run(s) not exported, then closing" in seen["shown"], seen["shown"]
    assert f"couplescope: run {app.runs[1].name} measured nothing: not saved" in app.farewell, app.farewell
    assert not any("nothing to export" in line for line in app.farewell), app.farewell
    assert app.farewell[app.farewell.index(f"couplescope: run {app.runs[2].name} saved to") + 1] == \
        app.runs[2].export_path
    assert all(len(line) <= 80 for line in app.farewell), app.farewell
