"""What a fifth walk-through of the app by a new user found in its words (issue 30, at
80x24), each driven by Pilot on the real app: ctrl+c and the quit question's yes say
stopping until the app closes, as `s` does (M1); the top line and a field name the
reason a run is refused (M2); a top-line message goes with the next key (M3); the Run
line counts the profiled calls Watch counts (M5); History says what its command opens
for a run exported without a profiler trace (M6).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import pytest

from test_tui_first_use import text
from test_tui_fourth_walk_run import stopped_in_round_one, top_lines  # noqa: F401 (a fixture)
from test_tui_replay import compare_shown, replay_app, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- M1. ctrl+c and q's yes go through the stopping state `s` uses ----------------------------------

async def stop_in_round_one_with(keys, gates, tmp_path) -> tuple[list[str], list[str]]:
    """Run the training preset, press `keys` while its second variant's worker starts (its
    loading events arrive after them, as a real worker's do), let the run end; the top
    lines said from the keys on, and Watch's status line after the late events came."""
    app = replay_app("preset-train")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        app.redraw_views()   # Watch names direct's round now, not after the keys
        await pilot.pause()
        record, shown = app.runs[1], top_lines(app)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await until(pilot, lambda: any(ev["event"] == "model_loaded" and ev["variant"] == "direct"
                                       for ev in record.events), "direct loaded, after the keys")
        app.redraw_views()
        await pilot.pause()
        stats = [" ".join(text(app, "#stats").split())]
        gates[0].set()   # direct's last words: interrupted
        await until(pilot, lambda: record.builder.variants["direct"].verdict == "stopped", "direct stopped")
        app.redraw_views()
        await pilot.pause()
        stats.append(" ".join(text(app, "#stats").split()))
        gates[1].set()
        await until(pilot, lambda: app._exit, "the app closing")
    return shown, stats


async def test_ctrl_c_during_a_run_says_stopping_till_the_app_closes(stopped_in_round_one, tmp_path):
    shown, stats = await stop_in_round_one_with(["ctrl+c"], stopped_in_round_one, tmp_path)
    # it went back to "round 1/5: direct: building and loading the model", and "rounds done:
    # direct: interrupted", Watch saying "running"
    # (the eighth walk: the stop as far as it has gone between them, never the run's progress)
    assert shown == ["stopping #1 simplenet-train (ctrl+c) ...",
                     "stopping run #1 (ctrl+c): 1 of 4 stopped, 1 still ending, 2 not started ...",
                     "#1 simplenet-train stopped (ctrl+c): keeping what it measured ...",
                     "saving 1 run(s) not exported, then closing ..."], shown
    assert stats[0].startswith("direct stopping"), stats


async def test_the_quit_questions_yes_during_a_run_says_stopping_till_the_app_closes(stopped_in_round_one,
                                                                                   tmp_path):
    shown, stats = await stop_in_round_one_with(["q", "y"], stopped_in_round_one, tmp_path)
    assert stats[0].startswith("direct stopping"), stats   # it said "direct running"
    # (it offered e and r as it closed)
    assert shown == ["quitting: stopping the worker of #1 simplenet-train ...", "quitting ..."], shown


# -- M2. a value the run refuses: its reason on the top line, its field marked ------------------------

async def test_a_value_the_run_refuses_is_named_on_the_top_line_and_marked_on_its_field():
    from textual.widgets import Input

    from couplescope.core.request import RunOptions
    from couplescope.frontends.tui.app import HINTS, CoupleScopeApp

    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        status, field = app.main.query_one("#status"), app.main.query_one("#save_model", Input)
        await until(pilot, lambda: str(status.render()) == HINTS[True], str(status.render()))
        field.focus()
        await pilot.press("a")
        refusal = "--save-model applies to --task train"
        await until(pilot, lambda: refusal in text(app, "#preview"), text(app, "#preview"))
        await pilot.pause()
        # it said "pick a model or a preset, then press r", the model picked, the field unmarked
        assert str(status.render()) == f"couplescope: r will not run: {refusal}", str(status.render())
        assert field.has_class("-refused")
        await pilot.press("tab")   # leaving the field keeps the mark
        await pilot.pause()
        assert field.has_class("-refused")
        field.value = ""
        await until(pilot, lambda: str(status.render()) == HINTS[True], str(status.render()))
        assert not field.has_class("-refused")


# -- M3. a key's answer goes with the next key; the pointer to History only away from it -------------

async def test_already_exported_goes_with_the_next_key_and_h_is_not_said_over_history(tmp_path):
    import os

    from test_tui_replay import run_replay

    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h", "c")
        await until(pilot, lambda: compare_shown(app), "the compare screen")
        await pilot.press("e")                           # exported from the compare screen ...
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        exported = f"#1 simplenet exported to {os.path.basename(app.runs[1].export_path)}"
        await pilot.press("escape")                      # ... and back to History, which shows where
        await until(pilot, lambda: app.screen is app.main, "History")
        await pilot.pause()
        assert text(app, "#status") == exported, text(app, "#status")   # it said "(where, ...: h)"
        await pilot.press("w")
        await until(pilot, lambda: text(app, "#status") == f"{exported} (where, and its command: h)",
                    text(app, "#status"))
        await pilot.press("h", "e")                      # again: where it already is, till the next key
        await until(pilot, lambda: "already exported" in text(app, "#status"), text(app, "#status"))
        await pilot.press("tab")                         # it stayed through p, escape, tab, a preset
        await until(pilot, lambda: text(app, "#status") == exported, text(app, "#status"))


# -- M5. the Run line counts the calls Watch counts --------------------------------------------------

async def test_the_run_line_counts_the_profiled_calls_that_watch_counts():
    from test_tui_replay import run_replay

    app = replay_app("two-backends")   # 1 warm-up, 12 timed, 2 profiled
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "variants" in text(app, "#preview"), text(app, "#preview"))
        run_line = " ".join(text(app, "#preview").split())
        await run_replay(pilot)
        app.redraw_views()
        await pilot.pause()
        stats = " ".join(text(app, "#stats").split())
    # it said "12 timed calls + 1 warm-up each", and Watch then counted 15
    assert "15/15 calls = 12 timed + 1 warm-up + 2 profiled" in stats, stats
    # (then what the fields filled in change: `(bridge runs eager)`, the twelfth walk's 3d)
    assert "12 timed calls + 1 warm-up + 2 profiled each (bridge runs eager):" in run_line, run_line


def test_the_run_line_says_a_model_loaded_in_every_call_and_the_rounds_set():
    from couplescope.core import request
    from couplescope.core.request import RunOptions
    from couplescope.frontends.tui.run_line import run_line

    req = request.build(RunOptions(model="simplenet", backends=["torchscript", "bridge"],
                                   overrides={"reload_every_call": True, "iterations": 20}))
    line = run_line(req.specs, rounds=req.rounds)   # the rounds field filled in (the form gives them then)
    assert "20 timed calls + 1 warm-up + 3 profiled each, the model loaded in each call in 5 rounds:" in line, line
    assert "in 1 round:" in run_line(req.specs, rounds=1)
    assert "round" not in run_line(req.specs)


# -- M6. what History's command opens for a run exported without a profiler trace ------------------

async def test_history_says_what_its_command_opens_for_a_run_without_a_profiler_trace(tmp_path):
    import os

    from test_tui_replay import run_replay

    app = replay_app("layout-c")   # --profile-iterations 0: TensorBoard's scalars only
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h", "e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        await pilot.pause()
        files = [f for _, _, names in os.walk(os.path.join(app.runs[1].export_path, "traces")) for f in names]
        assert files and not any(".pt.trace.json" in f for f in files), files   # scalars, no trace
        note = text(app, "#export-note")
    # it said "open its traces:"
    assert "open its per-iteration scalars, no profiler traces:\ncouplescope --tensorboard" in note, note
