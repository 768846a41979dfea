"""What a third walk-through of the app by a new user found in its words (issue 30, at
80x24), each driven by Pilot on the real app: History tells apart runs that differ only in
a setting, the quit question names every run it loses, a run stopped before its first
call says so one way everywhere, the plot says a run is starting, training speaks of
steps, the plot chosen with `v` stays chosen, a disabled field looks closed, a field that
takes words says escape leaves it, and `e` on an exported run says where it already is.

Runs are recorded real runs played back (tests/fixtures) or made up by
couplescope.core.synthetic; no worker process, no catalogue (no torch import)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Select, Tabs

from couplescope.core import replay, synthetic
from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.messages import EventsArrived
from couplescope.protocol.spec import RunSpec
from test_tui_first_use import held, text  # noqa: F401 (held: a fixture)
from test_tui_replay import compare_shown, replay_app, run_each, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def made_up(*specs: RunSpec, title: str = "simplenet") -> replay.Recording:
    """A run of `specs` with made-up calls (couplescope.core.synthetic), played back on r."""
    return replay.Recording([ev for spec in specs for ev in synthetic.events_for(spec)], title)


def spec(**given) -> RunSpec:
    given = {"model": "simplenet", "warmup": 1, "iterations": 3, "profile_iterations": 0, **given}
    return RunSpec(**given)


def history_rows(app) -> list[str]:
    table = app.main.query_one("#runs", DataTable)
    return [str(table.get_row(key)[0]).strip() for key in table.rows]


# -- 3. History: runs that differ only in a setting ----------------------------------------------

async def test_history_tells_apart_runs_that_differ_only_in_size_or_threads():
    runs = [made_up(spec(size=8, name="simplenet-torchscript-8")),
            made_up(spec(size=8, name="simplenet-torchscript-8"), spec(size=16, name="simplenet-torchscript-16")),
            made_up(spec(size=8, threads=2, name="simplenet-torchscript-8"))]
    app = CoupleScopeApp(load_catalogue=False, recording=runs[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await run_each(pilot, runs)
        await pilot.pause()
        first, second, third = history_rows(app)
        assert len({first[3:], second[3:], third[3:]}) == 3, (first, second, third)
        assert "size 8," in first + "," and "size 8,16" in second, (first, second)
        assert "threads 2" in third and "threads default" in first, (first, third)
        assert "…" not in first + second + third, (first, second, third)   # whole words
        table = app.main.query_one("#runs", DataTable)
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width


# -- 4. the quit question during a run names every run it loses ----------------------------------

async def test_q_during_a_run_names_the_runs_not_exported_it_also_loses(held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        held.set()
        await run_replay(pilot)                         # #1: finished, not exported
        held.clear()
        await pilot.press("r")                          # #2: going
        await until(pilot, lambda: app.active is not None and app.active.id == 2, "run #2 going")
        await pilot.press("q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitScreen", app.screen)
        question = " ".join(on_screen(app).split())
        assert "#2 simplenet is still going" in question, question
        assert "#1 simplenet is not exported: quitting loses it too" in question, question
        await pilot.press("n")


# -- 5, 6. a run starting, and a run stopped before its first call -------------------------------

def plot_title(app) -> str:
    """The plot's first row as built, its title (on_screen leaves out blank rows: the
    statistics keep a row for a training run's loss line before its first step)."""
    return app.main.query_one("#plot").render().plain.splitlines()[0].strip()


async def test_a_run_starting_says_so_and_stopped_before_its_first_call_says_one_thing(held):
    app = replay_app("layout-c")                        # one variant, no rounds: held, nothing reported
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, "the run going")
        await pilot.pause()
        assert plot_title(app).startswith("run #1 starting"), on_screen(app)
        await pilot.press("s")                          # before the first call
        await until(pilot, lambda: app.active is None, "the stopped run ended")
        await pilot.pause()
        # the log, the watch view and the top line tell one story, and point to no reason
        assert "says why" not in on_screen(app), on_screen(app)
        assert not any("measured is kept" in note for note in app.notes), app.notes
        said = "stopped by you (s) before its first call: nothing measured"
        assert app.notes[-1].endswith(said), app.notes
        # the top line in one line at 80 columns, what r does next in it (eighth walk)
        assert text(app, "#status") == "#1 stride stopped by you (s): nothing measured; r runs again", text(app, "#status")
        assert " ".join(text(app, "#stats").split()).startswith(f"#1 stride {said}"), text(app, "#stats")
        assert plot_title(app).startswith("run #1 stopped: nothing measured"), on_screen(app)


# -- 7. training speaks of steps -------------------------------------------------------------------

async def test_a_training_run_counts_steps_from_its_start_and_plots_them(held):
    app = replay_app("training")   # in rounds: a variant is named at its round's start, before it reports
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current, "the first round started")
        app.redraw_views()
        await pilot.pause()
        stats = " ".join(text(app, "#stats").split())
        assert "0/501 steps" in stats and "calls" not in stats, stats
        assert plot_title(app).startswith("no steps yet"), on_screen(app)
        sample = {"tree": {"cpu_percent": 90.0}, "iteration": {"kind": "timed", "index": 5}}   # as sampled
        app.post_message(EventsArrived(1, "telemetry", [{"event": "telemetry", "variant": app.runs[1].current,
                                                         "sample": sample}]))
        await pilot.press("t")
        await until(pilot, lambda: "during timed" in text(app, "#telemetry-panel"), "the sample drawn")
        assert "during timed step 5" in text(app, "#telemetry-panel"), text(app, "#telemetry-panel")
        await pilot.press("w")
        held.set()
        await until(pilot, lambda: app.active is None, "the run ended")
        app.redraw_views()
        await pilot.pause()
        shown = on_screen(app)
        assert "time per step (" in shown and "iteration" not in shown, shown


def test_history_says_steps_for_training_and_keeps_what_differs_in_a_narrow_row():
    from couplescope.frontends.tui.runs import RunRecord
    from couplescope.frontends.tui.runs_apart import rows_words

    backends = ("torchscript", "bridge", "aoti")
    runs = [RunRecord(1, "simplenet", [spec(task="train", iterations=50, backend=b) for b in backends], None),
            RunRecord(2, "simplenet", [spec(task="train", iterations=500, backend=b) for b in backends], None)]
    # what tells them apart first (issue 30's sixth walk), what they share after it
    assert rows_words(runs, lambda r: 80) == {1: "steps 50, train: torchscript, bridge, aoti",
                                              2: "steps 500, train: torchscript, bridge, aoti"}
    assert rows_words(runs, lambda r: 24) == {1: "steps 50, 3 backends", 2: "steps 500, 3 backends"}
    # the rounds a run decides by itself (5 for a comparison, 1 for one variant) tell nothing
    from couplescope.core.request import from_specs

    one, two = [spec(size=8, iterations=20)], [spec(size=8, iterations=20), spec(size=16, iterations=20)]
    runs = [RunRecord(n, "simplenet", specs, from_specs(specs)) for n, specs in ((1, one), (2, two))]
    assert rows_words(runs, lambda r: 80) == {1: "size 8, infer: torchscript", 2: "size 8,16, infer: torchscript"}


# -- 10. a disabled field does not look openable ----------------------------------------------------

async def test_a_training_form_s_grad_mode_shows_no_arrow():
    from test_tui_first_use import PRESET

    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        grad = app.query_one("#grad_mode", Select)
        await until(pilot, lambda: grad.disabled, "a training form")
        await pilot.pause()
        (row,) = [line for line in on_screen(app).splitlines() if "forward with gradients" in line]
        assert "▼" not in row and "▲" not in row, row
        app.query_one("#task", Select).value = "infer"   # enabled again: its arrow back
        await until(pilot, lambda: not grad.disabled, "an inference form")
        await pilot.pause()
        (row,) = [line for line in on_screen(app).splitlines() if line.strip().startswith("grad mode")]
        assert "▼" in row, row


# -- 11. a field that takes words says escape leaves it ----------------------------------------------

async def test_a_field_that_takes_words_shows_escape_in_the_footer_and_a_number_field_the_keys():
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for field in ("name", "fc"):                    # the variant's name, the Fortran compiler
            app.query_one(f"#{field}").focus()
            await pilot.pause()
            footer = " ".join(on_screen(app).splitlines()[-1].split())
            assert "esc leave the field" in footer, (field, footer)
            await pilot.press("escape")                  # and it does
            await until(pilot, lambda: isinstance(app.focused, Tabs), app.focused)
        app.query_one("#iterations").focus()             # digits only: the letter keys act there
        await pilot.pause()
        footer = " ".join(on_screen(app).splitlines()[-1].split())
        assert "r run" in footer and "leave the field" not in footer, footer


# -- 13. e on a run already exported -----------------------------------------------------------------

async def test_e_on_an_exported_run_says_where_it_is_and_writes_no_second_copy(tmp_path):
    import os

    app = replay_app("two-backends")
    app.options.export = str(tmp_path / "runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        first = app.runs[1].export_path
        await pilot.press("e")                          # again: it says where it already is
        await until(pilot, lambda: "already exported" in text(app, "#status"), text(app, "#status"))
        assert os.path.basename(first) in text(app, "#status"), text(app, "#status")
        await pilot.pause()
        assert app.exporting is None and os.listdir(tmp_path / "runs") == [os.path.basename(first)]
        assert not list(app._notifications)           # no toast over the path under History
        app.query_one("#export").value = str(tmp_path / "elsewhere")   # another folder: a copy there, said so
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path != first and app.exporting is None, app.notes[-1:])
        assert os.path.isdir(first) and app.runs[1].export_path.startswith(str(tmp_path / "elsewhere"))
        assert "a second copy" in text(app, "#status") and "elsewhere" in text(app, "#status"), text(app, "#status")


# -- 9. the plot chosen with v stays chosen ------------------------------------------------------------

async def test_the_plot_chosen_with_v_is_kept_when_compare_draws_again_or_opens_again():
    app = replay_app("sweep")                          # one model at three sizes: median vs size first
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), app.screen)
        assert app.screen.plotted is not None             # median vs size
        await pilot.press("v")                             # the boxes
        await until(pilot, lambda: app.screen.plotted is None, "the boxes")
        for keys in (("tab", "tab"), ("c",), ("escape", "c")):   # one task: tab says so; c draws it again
            await pilot.press(*keys)
            await until(pilot, lambda: compare_shown(app), app.screen)
            await pilot.pause()
            shown = " ".join(on_screen(app).split())
            assert app.screen.plotted is None and "(v: vs size)" in shown, (keys, shown)


def test_history_compares_values_not_words_and_leaves_out_whole_settings():
    from couplescope.frontends.tui.runs import RunRecord
    from couplescope.frontends.tui.runs_apart import rows_words
    from couplescope.frontends.tui.runs_table import RUN_WIDTH, run_cell

    runs = [RunRecord(1, "simplenet", [spec(iterations=20, size=8)], None),
            RunRecord(2, "simplenet", [spec(iterations=20, size=16, task="train")], None)]
    assert rows_words(runs, lambda r: 80) == {1: "infer: torchscript, size 8", 2: "train: torchscript, size 16"}
    cell = run_cell(runs[0], "size 8, threads 2, iterations 200").plain   # (iterations 20 = steps 20)
    assert cell == "  #1 simplenet  size 8, threads 2, …" and len(cell) <= RUN_WIDTH, cell
