"""What the eleventh walk-through of the app by a new user found in its words (issue 30, at
80x24), each on the real app driven by Pilot or on the real function: an ended run's top
line with r refused fits one line (2a); a preset picked keeps what the command line gave,
and the run started is what the Run line says (3e); the Run line names a typed size (3d);
one word for a size (4); the quit question says ctrl+c saves (3f); the top line agrees
with a --preset form from its first frame (the tenth walk's 3d).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Select

from couplescope.core import replay
from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.runs import RUNS_AGAIN
from couplescope.frontends.tui.top_line import fitting
from test_tui_eighth_walk_top import ROOM, a_long_run, built
from test_tui_first_use import text
from test_tui_replay import FIXTURES, replay_app, run_each, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

#: a reason r will not run that no line of 80 columns holds beside a run's words
FTORCH_MISSING = ("preset real-ftorch: --host ftorch is unavailable: FTorch not found: pass --ftorch-dir "
                  "PREFIX or set FTorch_DIR; --host native runs without it")


def status(app) -> str:
    return str(app.main.query_one("#status").render())


def preview(app) -> str:
    return " ".join(text(app, "#preview").split())


# -- 2a. an ended run's words with r refused fit one line ---------------------------------------------

def test_every_ended_run_s_words_with_r_refused_fit_80_columns_with_the_longest_names():
    """`run #1 finished: e exports, c compares, r will not run: Pick's Run line (p) says
    why` took two rows (the eleventh walk): each way a run ends, by each stop, with the
    longest preset name and r refused for a long reason, has a form in 78 columns, and
    the form says r will not run where its words promised r runs again."""
    from couplescope.frontends.tui.top_line import with_r_refused   # (in _show_status before: not apart)

    too_wide, promised = [], []
    for status_, ran in (("finished", 12), ("error", 3), ("stopped", 0), ("stopped", 11), ("stopped", 12)):
        for how in ("s", "q", "ctrl+c", "SIGTERM", "SIGHUP", None):
            words = a_long_run(ran, status_, how).ending_words()
            shown = fitting(tuple(dict.fromkeys(with_r_refused(list(words), FTORCH_MISSING))), ROOM)
            if len(shown) > ROOM:
                too_wide.append(shown)
            if RUNS_AGAIN in words[-1] and "r will not run" not in shown:
                promised.append(shown)
    assert not too_wide, too_wide
    assert not promised, promised


async def test_r_refused_after_a_finished_run_leaves_the_top_line_one_row():
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = None   # r runs the form from now on
        await pilot.press("p")
        app.main.query_one("#preset", Select).value = "real-ftorch"   # as the walk picked it
        await until(pilot, lambda: "will not run" in preview(app), preview(app))
        await until(pilot, lambda: "r will not run" in status(app), status(app))
        top = app.main.query_one("#status")
        # it read "run #1 finished: e exports, c compares, r will not run: Pick's Run line (p)" / "says why"
        assert top.region.height == 1 and len(status(app)) <= ROOM, status(app)
        assert status(app) == "#1 simplenet-train finished: r will not run: Pick's Run line (p) says why"
        await pilot.press("r")   # and r's own refusal: one row too
        await until(pilot, lambda: status(app).startswith("cannot run"), status(app))
        await pilot.pause()
        assert top.region.height == 1 and len(status(app)) <= ROOM, status(app)
        rows = on_screen(app).splitlines()
        assert "Watch w" in rows[1] and "━" in rows[2], rows[:3]   # the view not pushed down


# -- 3e. the command line's values stay when a preset is picked ------------------------------------

async def test_a_preset_picked_keeps_the_command_line_s_iterations_and_runs_them(monkeypatch):
    """`--tui --preset simplenet --iterations 100`, then simplenet-train picked: the run made
    10 000 steps (the eleventh walk). The iterations stay in their field, the Run line names
    them over the preset's, and the run started gives every variant 100."""
    from couplescope.core import pipeline

    recorded = replay.read(f"{FIXTURES}/preset-train.jsonl")   # what the workers play back
    started = []
    real_init = pipeline.Pipeline.__init__

    def played(self, request, listeners=(), announce=None, workers=None, summary_plot=True):
        started.append(request)
        real_init(self, request, listeners, announce, replay.replayer(recorded), summary_plot)

    monkeypatch.setattr(pipeline.Pipeline, "__init__", played)
    app = CoupleScopeApp(RunOptions(preset="simplenet", overrides={"iterations": 100}), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        iterations = app.main.query_one("#iterations", Input)
        assert iterations.value == "100"
        app.main.query_one("#preset", Select).value = "simplenet-train"
        await until(pilot, lambda: "training" in preview(app), preview(app))
        assert iterations.value == "100", iterations.value
        line = preview(app)
        assert "100 timed steps" in line and "iterations 100 in place of 10 000 (preset)" in line, line
        await pilot.press("r")
        await until(pilot, lambda: started and app.active is None, "the run played")
        (request,) = started
        assert {s.task for s in request.specs} == {"train"}
        assert [s.iterations for s in request.specs] == [100] * len(request.specs), request.specs


async def test_a_value_typed_before_a_preset_still_gives_way_to_it():
    """The second walk's mend stays: iterations typed for a model are the preset's once a
    preset is picked (only the command line's stay)."""
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        iterations = app.main.query_one("#iterations", Input)
        iterations.value = "200"
        await until(pilot, lambda: "200" in preview(app), preview(app))
        app.main.query_one("#preset", Select).value = "simplenet-train"
        await until(pilot, lambda: "training" in preview(app), preview(app))
        assert iterations.value == "" and "10 000 timed steps" in preview(app), preview(app)


# -- 3d. the Run line names a typed size -------------------------------------------------------------

async def test_the_run_line_names_a_typed_size_first():
    """`--preset simplenet-train --iterations 300`, 2 typed in size: the line named the
    iterations alone (the tenth and eleventh walks); the size first, no word cut."""
    app = CoupleScopeApp(RunOptions(preset="simplenet-train", overrides={"iterations": 300}), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#size", Input).value = "2"
        await until(pilot, lambda: "size 2" in preview(app), preview(app))
        assert "(size 2; iterations 300 in place of 10 000 (preset))" in preview(app), preview(app)
        assert [s.size for s in app.main.query_one("#form").build().specs] == [2] * 4
        await pilot.pause()
        rows = on_screen(app).splitlines()
        below = [i for i, row in enumerate(rows) if "Run (r)" in row]
        shown = " ".join(" ".join(row.split()) for row in rows[below[0]:])   # the Run line, on the screen
        assert "(size 2; iterations 300 in place of 10 000 (preset)): direct," in shown, rows


async def test_the_run_line_names_a_size_typed_for_a_model():
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#size", Input).value = "1,2"
        await until(pilot, lambda: "(size 1,2)" in preview(app), preview(app))
        assert built("--model", "simplenet", "--size", "1,2").specs[0].size == 1
        app.main.query_one("#size", Input).value = "2048"   # grouped, as the size field's blank is
        await until(pilot, lambda: "(size 2 048)" in preview(app), preview(app))


# -- 4. one word for a size ---------------------------------------------------------------------------

async def test_history_says_the_size_a_run_ran_at_where_it_said_size_default():
    """A model's own size (simplenet: 1) beside a run at size 2: History said `size
    default`, Pick `1 (model's own)`, compare `1`; now History says `size 1` too."""
    app = replay_app("two-backends")   # simplenet at its own size, then at size 2
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        sized = replay.Recording(replay.read(f"{FIXTURES}/compiled.jsonl"), "simplenet")
        await run_each(pilot, [sized])
        await until(pilot, lambda: "#2 simplenet" in on_screen(app), on_screen(app))
        rows = [" ".join(row.split()) for row in on_screen(app).splitlines() if "simplenet" in row]
        assert any(row.startswith("#1 simplenet") and "size 1," in row for row in rows), rows
        assert any(row.startswith("#2 simplenet") and "size 2," in row for row in rows), rows
        assert not any("default" in row for row in rows), rows


def test_compare_s_size_column_groups_digits_as_pick_does():
    """`1024` on compare against `1 024 (model's own)` on Pick (the tenth walk)."""
    from types import SimpleNamespace

    from couplescope.frontends.tui.blanks import value_words
    from couplescope.frontends.tui.like_ratios import size_cell
    from couplescope.protocol import options

    ran = SimpleNamespace(spec={"model": "resnet18"}, model={"size": 1024})
    assert size_cell(ran) == value_words(options.get("size"), 1024) == "1 024"


# -- 3f. the quit question says ctrl+c saves ---------------------------------------------------------

async def test_the_quit_question_says_ctrl_c_saves_the_runs_it_would_lose(tmp_path):
    """It said `quitting loses them`, while ctrl+c saved five runs (the eleventh walk)."""
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await run_replay(pilot)
        await pilot.press("q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitScreen", app.screen)
        await pilot.pause()
        question = " ".join(str(app.screen.query_one("#quit-box Static").render()).split())
        assert "are not exported: quitting loses them" in question, question
        assert "ctrl+c saves them and quits (the terminal then says where)" in question, question
        await pilot.press("ctrl+c")   # and it does
        await until(pilot, lambda: app._exit, "the app closing")
    assert all(r.export_path and r.export_path.startswith(str(tmp_path)) for r in app.runs.values())


# -- the tenth walk's 3d: the top line before the form has spoken --------------------------------------

@pytest.mark.parametrize("given", [RunOptions(preset="simplenet-train"), RunOptions(model="simplenet"), None])
async def test_the_top_line_agrees_with_a_form_given_on_the_command_line_from_the_first_frame(monkeypatch, given):
    """Under load the form's first word (FormChanged) came 5-10 s late, and meanwhile a
    `--tui --preset simplenet` start read `pick a model or a preset, then press r` above
    a form that showed the preset: here the form's word never comes."""
    from couplescope.frontends.tui.top_line import HINTS, TopLine

    async def late(self, msg):   # (the form's word, still in the queue)
        return None

    monkeypatch.setattr(TopLine, "on_form_changed", late)
    app = CoupleScopeApp(given, load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert status(app) == HINTS[given is not None], status(app)


# -- a model picked over a preset's (the lead's twelfth look) ------------------------------------------

async def test_a_model_picked_over_a_preset_s_is_named_on_the_run_line_and_in_the_run_s_name():
    """`--tui --preset simplenet`, cgdrag picked in the model list: the Run line named no model
    and the run was `#1 simplenet` (top line, History, export folder) while it ran cgdrag."""
    app = CoupleScopeApp(RunOptions(preset="simplenet"), load_catalogue=True)
    async with app.run_test(size=(80, 24)) as pilot:
        model = app.main.query_one("#model", Select)
        await until(pilot, lambda: any(value == "cgdrag" for _, value in model._options), "the model list")
        model.value = "cgdrag"
        await until(pilot, lambda: "model cgdrag" in preview(app), preview(app))
        assert "(model cgdrag in place of simplenet (preset)): direct-torchscript," in preview(app), preview(app)
        built = app.main.query_one("#form").build()
        assert built.title == "simplenet-with-cgdrag" and {s.model for s in built.specs} == {"cgdrag"}
        model.clear()   # back to `simplenet (preset)`: nothing in its place
        await until(pilot, lambda: "model " not in preview(app), preview(app))
        assert app.main.query_one("#form").build().title == "simplenet"
