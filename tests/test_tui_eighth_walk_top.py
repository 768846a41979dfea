"""What an eighth walk-through of the app by a new user found on its top line and in History
(issue 30, at 80x24), each on the real app driven by Pilot or on the real function: the
top line never wraps for the catalogue's names and presets, and keeps the tab bar whole
when words of a user's cannot fit (2a); Watch does not say the top line's words again
(2a); the top line follows a stop as it goes (4); History says what sets runs apart
while its column has room (2b).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import glob
import os

import pytest

from couplescope.core import request
from couplescope.frontends.cli.parser import build_parser, options_from
from couplescope.frontends.tui.runs import RunRecord
from test_tui_first_use import held, text  # noqa: F401 (held: a fixture)
from test_tui_fourth_walk_run import stopped_before_its_first_step, stopped_in_round_one, top_lines  # noqa: F401 (a fixture)
from test_tui_replay import replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

#: the top line's room at 80 columns (its padding takes one column each side)
ROOM = 78
PRESETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")


def built(*argv: str):
    return request.build(options_from(build_parser().parse_args(list(argv))))


def longest_names() -> tuple[str, str]:
    """The longest run title (a preset's name) and variant name the catalogue makes: its
    presets' variants, and each model's through three backends at two sizes."""
    titles = [os.path.basename(p).removesuffix(".toml") for p in glob.glob(os.path.join(PRESETS, "*.toml"))]
    labels = []
    for title in titles:
        try:
            labels += [s.label for s in built("--preset", title).specs]
        except Exception:   # noqa: BLE001 - a preset this machine cannot run (cuda, FTorch)
            pass
    for model in ("cgdrag", "deep-linear", "polynomial", "resnet18", "simplenet", "stride", "toy-resnet"):
        labels += [s.label for s in built("--model", model, "--backend", "torchscript,bridge,aoti",
                                          "--size", "1000,2000").specs]
    return max(titles, key=len), max(labels, key=len)


def a_long_run(ran: int, status: str, stopping: str | None = "s") -> RunRecord:
    """Run #12 of the longest preset name, 12 variants, `ran` of them measured."""
    title, _ = longest_names()
    specs = built("--preset", "deep-linear-sweep").specs
    record = RunRecord(12, title, specs, None)
    record.status, record.stopping = status, stopping
    record.measured = lambda: ran
    return record


# -- 2a. the top line fits 80 columns ---------------------------------------------------------------

def test_every_top_line_a_run_says_fits_80_columns_with_the_longest_names():
    """The stop answers, a round's variant loading its model, the export's words: each at
    80 columns in one line with the longest preset name and variant name (it wrapped:
    `#2 simplenet-train stopped by you (s) before its first step: nothing measured;` / `r
    runs again`)."""
    from couplescope.frontends.tui.app import STATUS
    from couplescope.frontends.tui.notes import build_words
    from couplescope.frontends.tui.top_line import fitting

    title, variant = longest_names()
    assert (title, variant) == ("deep-linear-cudagraph", "deep-linear-bridge-torchscript-1000"), (title, variant)
    said = []
    for status, ran in (("finished", 12), ("error", 3), ("stopped", 0), ("stopped", 11), ("stopped", 12)):
        for how in ("s", "SIGTERM", None):
            said.append(a_long_run(ran, status, how).ending_words())
    record = a_long_run(0, "running")
    record.builder.rounds = {"rounds": 5}
    said += [record.running_words(), record.stopping_words(),
             *(record.doing_words(variant, words) for words in STATUS.values()),
             build_words({"variant": variant, "status": "building", "message": "building the native host for "
                          "torch 2.13.0+cpu with g++-12 (first use, 2-4 minutes) in /work/cache/native/torch-2"})]
    too_wide = [fitting(words, ROOM) for words in said if len(fitting(words, ROOM)) > ROOM]
    assert not too_wide, too_wide


async def test_a_stop_before_the_first_step_says_so_on_one_line_and_watch_does_not_repeat_it(held):
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await stopped_before_its_first_step(pilot)
        status = app.main.query_one("#status")
        top = str(status.render())
        assert top == "#1 simplenet-train stopped by you (s): nothing measured; r runs again", top
        assert status.region.height == 1
        rows = on_screen(app).splitlines()
        assert rows[0].strip() == top and "Watch w" in rows[1] and "━" in rows[2], rows[:3]   # the tabs whole
        stats = text(app, "#stats")
        # it said the top line's words again, wrapped: "... nothing measured;" / "r runs again"
        assert stats.splitlines()[0].strip() == ("#1 simplenet-train stopped by you (s) before its first step: "
                                                 "nothing measured"), stats
        assert "r runs again" not in stats, stats


async def test_a_round_s_progress_and_a_partial_stop_fit_one_line(stopped_in_round_one):
    app = replay_app("preset-train")   # round 1: bridge-python-host, then direct ...
    async with app.run_test(size=(80, 24)) as pilot:
        shown = top_lines(app)
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        await pilot.press("s")
        for gate in stopped_in_round_one:
            gate.set()
        await until(pilot, lambda: app.active is None, "the run ended")
        await pilot.pause()
        # it read "#1 simplenet-train: round 1/5: direct-python-host: building and loading the" / "model"
        assert "#1 simplenet-train: round 1/5: bridge-python-host: loading its model" in shown, shown
        # it read "#3 simplenet-train stopped: what 1 of its 4 variants measured is kept; e" /
        # "exports it, c compares, r runs again"
        assert shown[-1] == "#1 simplenet-train stopped (s): 1 of 4 variants kept; e exports, c compares", shown
        assert all(len(line) <= ROOM for line in shown), [line for line in shown if len(line) > ROOM]
        assert app.main.query_one("#status").region.height == 1


async def test_words_too_long_for_any_form_take_two_lines_and_leave_the_tab_bar_whole():
    """A user's own long file name: two lines, never cut, the tabs and their underline under
    them (the underline's row was taken, the tab bar cut in half)."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        status = app.main.query_one("#status")
        long = "#1 my-own-climate-emulator-with-a-long-name.pt exported to 20261127-034309-my-own-climate-emulator"
        app.set_status(long)
        await until(pilot, lambda: status.region.height == 2, "the top line in two lines")
        await pilot.pause()
        rows = on_screen(app).splitlines()
        assert " ".join(" ".join(rows[:2]).split()) == long, rows[:2]
        assert "Watch w" in rows[2] and "━" in rows[3], rows[:4]


# -- 4. the top line follows the stop -------------------------------------------------------------------

async def test_the_top_line_follows_a_stop_as_its_workers_end(stopped_in_round_one, monkeypatch):
    """It said `stopping #2 simplenet-train ...` while Watch read `bridge STOPPED  nothing
    measured`: as far as the stop has gone, each variant stopped counted, then what is
    kept while the run's session ends (held here: its run directory written)."""
    import threading

    from couplescope.frontends.tui.listener import AppListener

    written, session_done = threading.Event(), AppListener.session_done

    def held_done(self, builder):
        written.wait(60)
        session_done(self, builder)

    monkeypatch.setattr(AppListener, "session_done", held_done)
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        record, status = app.runs[1], app.main.query_one("#status")
        await pilot.press("s")
        await until(pilot, lambda: str(status.render()) == "stopping #1 simplenet-train ...", "stopping")
        stopped_in_round_one[0].set()
        await until(pilot, lambda: "1 of 4 stopped" in str(status.render()), "direct stopped")
        assert str(status.render()) == "stopping #1 simplenet-train: 1 of 4 stopped, 1 still ending, 2 not started ..."
        stopped_in_round_one[1].set()
        await until(pilot, lambda: all(v.status != "running" for v in record.builder.variants.values()),
                    "every worker ended")
        await until(pilot, lambda: "closing the run" in str(status.render()), "the workers ended")
        app.redraw_views()
        await pilot.pause()
        assert app.active is record and "STOPPED" in text(app, "#stats"), text(app, "#stats")
        top = str(status.render())
        assert top == "#1 simplenet-train stopped (s): keeping what it measured; closing the run ...", top
        written.set()
        await until(pilot, lambda: app.active is None, "the run ended")
        assert str(status.render()).startswith("#1 simplenet-train stopped (s): 1 of 4 variants kept")


# -- 2b. History: what sets runs apart, while the column has room -----------------------------------

def the_walk_s_runs() -> list[RunRecord]:
    """The walk's session: simplenet alone, its preset, then the preset at 300 iterations
    over sizes 1 and 2, twice (the second stopped)."""
    argvs = (("--model", "simplenet"), ("--preset", "simplenet"),
             ("--preset", "simplenet", "--iterations", "300", "--size", "1,2"),
             ("--preset", "simplenet", "--iterations", "300", "--size", "1,2"))
    return [RunRecord(n, req.title, req.specs, req) for n, req in enumerate((built(*a) for a in argvs), 1)]


def test_history_shows_the_sweep_that_sets_a_run_apart_before_what_tells_one_run_from_three():
    """It read `#3 simplenet  iterations 300, preset, …` with room to spare: `size 1,2`,
    what makes #3 a sweep, came after the backends and the warm-up that told #1 from the
    three others (which iterations told apart already), and `bridge runs`, read by no
    variant of #1, counted as a difference."""
    from couplescope.frontends.tui.runs_apart import rows_words
    from couplescope.frontends.tui.runs_table import RUN_WIDTH, named, run_cell

    runs = the_walk_s_runs()
    width = RUN_WIDTH + 3   # History's run column at 80 columns
    words = rows_words(runs, lambda r: width - len(named(r)))
    cells = [run_cell(r, words[r.id], width).plain for r in runs]
    assert cells[2:] == [f"  #{n} simplenet  iterations 300, size 1,2, …" for n in (3, 4)], cells
    assert all(len(c) <= width for c in cells), cells
    wide = rows_words(runs, lambda r: 120)
    # the task and backends after the settings where they tell no run apart that a setting
    # did not (the twelfth walk: `preset` in the place of a sweep's `size 1,2`)
    # (#1 not run here: the size it would run at, the model's own, as once run: 7999df2)
    assert wide[1] == "iterations 10, size 1, warm-up 1, infer: torchscript", wide
    assert wide[3] == "iterations 300, size 1,2, warm-up 10, preset, infer", wide
    assert not any("bridge runs" in said for said in wide.values()), wide


async def test_history_at_80x24_shows_the_sweep_of_a_run(tmp_path):
    """The table as drawn at 80x24 after runs of the walk's settings (recordings with the
    walk's requests): the sweep's `size 1,2` on its row."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        table = app.main.query_one("#runs")
        for record in the_walk_s_runs():
            record.status = "finished"
            app.runs[record.id] = record
            table.add_run(record)
        await pilot.pause()
        rows = on_screen(app).splitlines()
        row = next(line for line in rows if "#3 simplenet" in line)
        assert "iterations 300, size 1,2" in row, rows
