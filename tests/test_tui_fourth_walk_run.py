"""What a fourth walk-through of the app by a new user found around a run (issue 30, at
80x24), each driven by Pilot on the real app: the time plot's y labels name the rows they
sit on, a stop says stopping until it is done and Watch then shows what was kept, a
variant that measured nothing says so, compare counts a training run's steps, a refusal
reaches the top line and goes with the next key, and a training run speaks of steps and
of the app's fields (the Watch verdict, the form, summary.png).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import re
import threading
import time

import pytest
from textual.widgets import Input, Label, Select

from couplescope.core import replay
from couplescope.core.request import RunOptions
from couplescope.export import plot_panels, plots
from couplescope.frontends.tui.app import HINTS, CoupleScopeApp
from couplescope.protocol import events as ev_mod
from test_tui_first_use import held, text  # noqa: F401 (held: a fixture)
from test_tui_replay import compare_shown, FIXTURES, replay_app, run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def fitting(words, width):
    from couplescope.frontends.tui.top_line import fitting

    return fitting(words, width)


def top_lines(app) -> list[str]:
    """Every text the top line is given from now on, in order."""
    shown: list[str] = []
    status = app.main.query_one("#status")
    update = status.update

    def spy(content="", **kwargs):
        shown.append(str(content))
        return update(content, **kwargs)

    status.update = spy
    return shown


def y_labels(plot) -> list[tuple[int, float]]:
    """(row counted from the bottom, value) of each y label of a plotext plot, as built."""
    lines = plot.render().plain.splitlines()
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    found = [(bottom - 1 - i, re.match(r"\s*(-?[\d.]+)┤", lines[i])) for i in range(top + 1, bottom)]
    return sorted((row, float(m.group(1))) for row, m in found if m)


def assert_on_their_rows(labels: list[tuple[int, float]], where) -> None:
    """The value per row is the same between every two neighbouring labels (within the
    labels' rounding), and the bottom row is labelled."""
    assert len(labels) >= 3 and labels[0][0] == 0, (labels, where)
    decimals = max(len(str(v).split(".")[1]) for _, v in labels)
    per_row = [(v2 - v1) / (r2 - r1) for (r1, v1), (r2, v2) in zip(labels, labels[1:])]
    assert max(per_row) - min(per_row) <= 2 * 10 ** -decimals, (labels, per_row, where)


# -- 4. the y labels of the time plot and the sweep plot -----------------------------------------

async def test_the_time_plots_y_labels_name_the_rows_they_sit_on_at_any_height():
    app = replay_app("preset-train")
    # 3 rows, then 10: plotext's 7 ticks fall between (the statistics take 5 lines at 80
    # columns: the counts and `n=` on lines of their own for the whole run; the key's
    # full phase names three: the eleventh walk)
    async with app.run_test(size=(80, 23)) as pilot:
        await run_replay(pilot)
        plot = app.main.query_one("#plot")
        assert_on_their_rows(y_labels(plot), 21)
        await pilot.resize_terminal(80, 29)   # the rows are counted again
        await until(pilot, lambda: plot.size.height == 8 + 6, ("the plot grown", plot.size))
        assert_on_their_rows(y_labels(plot), 29)


async def test_the_sweep_plots_y_labels_name_the_rows_they_sit_on():
    app = replay_app("sweep")
    async with app.run_test(size=(80, 24)) as pilot:   # 10 rows
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: app.screen.query("#compare-plot") and app.screen.plotted, "the sweep plot")
        await pilot.pause()
        assert_on_their_rows(y_labels(app.screen.query_one("#compare-plot")), "sweep")


# -- 8, 9, 10. a stop in the first round --------------------------------------------------------

@pytest.fixture
def stopped_in_round_one(monkeypatch):
    """Played workers of a run in rounds: the first to start plays on; each later one waits
    for the stop, then says what a worker loading its model says as it is ended (its
    host_build, run_started and model_loaded; when the first Event is set, variant_failed:
    interrupted): they reach the app after `s`, as a real worker's do. It ends when the
    second Event is set."""
    from couplescope.core.replay import PlayedWorker

    play, first, gates = PlayedWorker.events, [], (threading.Event(), threading.Event())

    def events(self):
        first.append(first[0] if first else self)
        if first[0] is self:
            yield from play(self)
            return
        while not self._stopped:
            time.sleep(0.005)
        yield from (ev for ev in self._events if ev.event in ("host_build", "run_started", "model_loaded"))
        gates[0].wait(60)
        yield ev_mod.make("variant_failed", self.spec.label, reason="interrupted", kind="interrupted",
                          traceback="")
        gates[1].wait(60)
        self.returncode = 0

    monkeypatch.setattr(PlayedWorker, "events", events)
    yield gates
    for gate in gates:
        gate.set()


def plot_title(app) -> str:
    return app.main.query_one("#plot").render().plain.splitlines()[0].strip()


async def test_a_stop_says_stopping_till_it_is_done_then_watch_shows_what_was_kept(stopped_in_round_one):
    app = replay_app("preset-train")   # round 1: bridge-python-host, then direct ...
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        app.redraw_views()   # Watch names direct's round now, not after `s` (it raced the spy)
        await pilot.pause()
        record, shown = app.runs[1], top_lines(app)
        await pilot.press("s")
        await until(pilot, lambda: any(ev["event"] == "model_loaded" and ev["variant"] == "direct"
                                       for ev in record.events), "direct loaded, after s")
        app.redraw_views()
        await pilot.pause()
        # 9: what came after `s` does not take the top line back to a stale message, and
        # the variant going says it is stopping
        assert shown == ["stopping #1 simplenet-train ..."], shown
        assert " ".join(text(app, "#stats").split()).startswith("direct stopping"), text(app, "#stats")
        stopped_in_round_one[0].set()
        await until(pilot, lambda: record.builder.variants["direct"].verdict == "stopped", "direct's last words")
        app.redraw_views()
        await pilot.pause()
        # (the eighth walk: the stop as far as it has gone, each variant stopped counted)
        assert shown == ["stopping #1 simplenet-train ...",
                         "stopping #1 simplenet-train: 1 of 4 stopped, 1 still ending, 2 not started ..."], shown
        # 10: the variant shown measured nothing, and says so
        stats = " ".join(text(app, "#stats").split())
        assert stats.startswith("direct STOPPED nothing measured"), stats
        assert "no checks yet" not in stats and "loss" not in stats, stats
        assert plot_title(app).startswith("direct stopped: nothing measured"), plot_title(app)
        stopped_in_round_one[1].set()
        await until(pilot, lambda: app.active is None, "the run ended")
        assert shown[-1] == fitting(record.ending_words(), 78), shown   # (at 80 columns, eighth walk)
        assert "1 of 4 variants kept" in shown[-1] and "stopping" not in shown[-1], shown
        # 10: Watch shows the variant that measured, its steps kept
        app.redraw_views()
        await pilot.pause()
        stats = " ".join(text(app, "#stats").split())
        assert stats.startswith("bridge-python-host STOPPED 9 checks passed 9/41 steps"), stats
        assert plot_title(app).startswith("time per step"), plot_title(app)
        # 8: compare counts steps
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "the compare screen")
        table = app.screen.query_one("#compare-table")
        cells = [str(c).strip() for key in table.rows for c in table.get_row(key)]
        assert cells.count("no steps") == 3 and "no calls" not in cells, cells   # direct, and the unstarted two


async def stopped_before_its_first_step(pilot) -> None:
    """The replayed training preset (held at its first step) started with r, stopped with s
    once its first round named its variant, its run ended and the views redrawn."""
    app = pilot.app
    await pilot.press("r")
    await until(pilot, lambda: app.runs and app.runs[1].current, "the first round named its variant")
    await pilot.press("s")
    await until(pilot, lambda: app.active is None, "the stopped run ended")
    app.redraw_views()
    await pilot.pause()


async def test_a_run_in_rounds_stopped_before_its_first_step_says_so_in_watch(held):
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await stopped_before_its_first_step(pilot)
        said = "#1 simplenet-train stopped by you (s) before its first step: nothing measured"
        stats = " ".join(text(app, "#stats").split())
        assert stats.startswith(said), stats   # it read "bridge-python-host STOPPED no checks yet"
        assert plot_title(app).startswith("run #1 stopped: nothing measured"), plot_title(app)


# -- 11. refusals on the top line, and gone with the next key ------------------------------------

async def test_a_refusal_reaches_the_top_line_and_goes_with_the_next_key():
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.main.query_one("#status")
        await until(pilot, lambda: str(status.render()) == HINTS[True], str(status.render()))
        for key in "wp":   # (t and h switch views as w and p do)
            await pilot.press("s")
            await until(pilot, lambda: str(status.render()).startswith("no run is going"), str(status.render()))
            await pilot.press(key)
            await pilot.pause()
            assert str(status.render()) == HINTS[True], (key, str(status.render()))
        app.main.query_one("#iterations", Input).value = "0"
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        said = str(status.render())
        assert said.startswith("cannot run: ") and "iterations must be at least 1" in said, said
        assert any(n.message == said for n in app._notifications), list(app._notifications)
        assert not app.runs


async def test_r_and_e_while_a_run_goes_stay_on_the_top_line_over_its_progress(held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, "the run going")
        shown = top_lines(app)
        await pilot.press("r")
        await pilot.press("e")
        await pilot.pause()
        held.set()                                       # its progress: building, measuring ...
        await until(pilot, lambda: app.active is None, "the run ended")
        assert shown[0].startswith("run #1 simplenet is still going"), shown
        assert shown[1].startswith("#1 simplenet is still running: e exports it"), shown
        assert shown[2:] == [fitting(app.runs[1].ending_words(), 78)], shown


# -- 12. a training run's words: steps, and the app's fields ------------------------------------

async def test_the_watch_verdict_of_too_few_steps_names_the_apps_field():
    app = replay_app("preset-train")   # 40 steps of SimpleNet's ~10 000: not judged
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        stats = " ".join(text(app, "#stats").split())
        said = ("not judged: 41 of the ~10 000 steps it needs (40 timed + 1 warm-up: all train the model); "
                "set iterations to 10 000 (Pick, p)")
        assert said in stats and "--" not in stats, stats
        assert not any("--iterations" in note for note in app.notes), app.notes


def labels_of(app) -> dict[str, str]:
    return {name: str(app.main.query_one(f"#{name}-label", Label).render())
            for name in ("profile_iterations", "reload_every_call")}


async def test_a_training_form_names_steps_where_its_fields_count_calls():
    app = CoupleScopeApp(RunOptions(preset="simplenet-train"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert labels_of(app) == {"profile_iterations": "profiled steps", "reload_every_call": "reload each step"}
        assert "(fewer under 15 steps)" in app.main.query_one("#rounds", Input).placeholder
        app.main.query_one("#task", Select).value = "infer"   # the preset's variants, inferring
        await pilot.pause()
        assert labels_of(app) == {"profile_iterations": "profiled calls", "reload_every_call": "reload each call"}
        assert "(fewer under 15 calls)" in app.main.query_one("#rounds", Input).placeholder


def figure_words(fig) -> str:
    """Every text of a matplotlib figure: titles, axis labels, legends' titles and entries."""
    words = [fig._suptitle.get_text() if fig._suptitle else ""]
    for sub in fig.subfigs:
        for ax in sub.axes:
            words += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
            legend = ax.get_legend()
            if legend is not None:
                words += [legend.get_title().get_text()] + [t.get_text() for t in legend.get_texts()]
    return "\n".join(words)


def test_a_training_runs_summary_plot_says_steps_and_explains_no_x_it_did_not_draw():
    document = replay.document(replay.read(f"{FIXTURES}/preset-train.jsonl"), "simplenet-train")
    words = figure_words(plots.figure([document]))
    assert "time per step" in words and "timed steps in order" in words and "timed step" in words, words
    assert "per call" not in words and "calls" not in words, words
    assert "(x:" not in words, words   # every loss finite: no x drawn
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    plot_panels.losses(ax, [{"label": "a", "color": "tab:blue", "steps": [1, 2, 3],
                             "losses": [1.0, 0.5, float("nan")]}])
    assert "(x: the loss stopped being finite)" in ax.get_title(), ax.get_title()
