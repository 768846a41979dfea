"""What an eighth walk-through of the app by a new user found on Watch (issue 30, at 80x24),
each on the real app driven by Pilot or on the real function: the legend's warm-up mark is
drawn (on the plot's top edge, its value in the legend, when it is above the scale) (2d);
the y labels read short, in a unit chosen for the axis (2e); a training run's steps are
counted one way in the statistics, the loss line and the `[training] not judged` hint (3b).

Runs are recorded real runs played back (tests/fixtures); no worker process, no catalogue
(no torch import)."""

from __future__ import annotations

import re

import pytest

from couplescope.frontends.tui.watch_widgets import PlotLegend, TimePlot
from test_tui_replay import replay_app, run_replay

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def watched(name: str):
    """The Watch view after replaying `name` at 80x24: (the plot's text, its legend's text,
    the legend's width, the statistics' text)."""
    from couplescope.frontends.tui.stats_panel import StatsPanel

    app = replay_app(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("w")
        await pilot.pause()
        app.redraw_views(force=True)
        await pilot.pause()
        legend = app.screen.query_one(PlotLegend)
        return (str(app.screen.query_one(TimePlot).render()), str(legend.render()),
                legend.content_size.width, str(app.screen.query_one(StatsPanel).render()))


def y_labels(plot: str) -> list[tuple[str, str]]:
    """(label, the row's canvas) of each labelled row of the plot's y axis."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^ *(\S+)┤(.*)│$", plot, re.M)]


def top_row(plot: str) -> str:
    """The canvas's top row (the one under the plot's top border), labelled or not."""
    lines = plot.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if "┌" in line) + 1]
    return re.split(r"[│┤]", row, maxsplit=1)[1].rstrip("│")


# -- 2d. the warm-up in the legend is on the plot ------------------------------------------------

async def test_a_warm_up_above_the_scale_is_marked_on_the_top_edge_and_its_value_in_the_legend():
    """simplenet-train at 40 steps: the warm-up step (74.10 ms) is far above the axis's top
    (773.6 µs); the legend said `x warm-up` while no x was drawn (a phase's line through its
    clipped point covered the mark)."""
    plot, legend, _, _ = await watched("preset-train")
    labels = y_labels(plot)
    assert float(labels[0][0]) < 74_100, labels       # (in µs) the warm-up is above the scale
    assert top_row(plot).startswith("x"), plot        # its mark: the first call, on the top edge
    assert " ".join(legend.split()).startswith("x warm-up ↑74.10 ms ━ timed"), legend   # (lines broken as they fit)


async def test_warm_up_and_profiled_calls_above_the_scale_each_say_their_value():
    plot, legend, _, _ = await watched("two-backends")   # inference: 527.5 µs and 538.7 µs over 209.3
    assert "x warm-up ↑527.5 µs" in legend and "x profiled ↑538.7 µs" in legend, legend
    assert top_row(plot).startswith("x") and top_row(plot).rstrip().endswith("xx"), plot  # the warm-up's and both profiled calls' marks


def test_the_legend_with_both_marks_above_the_scale_fits_its_three_lines_at_80_columns():
    """The widest a training variant's key gets (every phase of a host with marshalling, the
    warm-up and profiled steps above the scale): within the legend's three lines (its
    max-height) at 80 columns, where it is 34 wide (measured above: `watched`); where the
    values would need a fourth line, the arrows stay without them."""
    from couplescope.frontends.tui.watch_widgets import fitted_legend

    items = [("x warm-up ↑999.9 ms", "orange"), ("━ timed", "white"), ("x profiled ↑999.9 ms", "red")] + [
        (f"━ {name}", "cyan") for name in ("marshal_in", "zero_grad", "forward", "loss", "backward",
                                           "allreduce", "step", "marshal_out")]
    lines = fitted_legend(items, 34)
    assert len(lines) <= 3, lines
    assert [text for text, _ in lines[0]][:2] == ["x warm-up ↑", "━ timed"], lines   # the value left out
    without_mpi = fitted_legend([item for item in items if item[0] != "━ allreduce"], 34)
    assert len(without_mpi) == 3 and without_mpi[0][0][0] == "x warm-up ↑999.9 ms", without_mpi


# -- 2e. the y labels in a unit that keeps them short --------------------------------------------

async def test_a_training_plot_with_steps_above_10_ms_is_labelled_in_ms():
    """500 steps on a busy machine, spikes to 36.94 ms: the y labels read `13814.3┤`,
    `10361.6┤` (µs); in ms they read `13.8┤`, and the axis's title says ms."""
    plot, _, _, _ = await watched("training")
    assert "time per step (ms)" in plot, plot
    labels = [label for label, _ in y_labels(plot)]
    assert len(labels) >= 3 and all(len(label) <= 5 for label in labels), labels
    assert 10 <= float(labels[0]) < 100, labels        # 13.8 ms: the 1.5x the 95th percentile


async def test_an_inference_plot_below_10_ms_stays_in_µs_with_short_labels():
    plot, _, _, _ = await watched("two-backends")
    assert "time per iteration (µs)" in plot, plot
    labels = [label for label, _ in y_labels(plot)]
    assert len(labels) >= 3 and all(len(label) <= 6 for label in labels), labels


def test_the_axis_unit_keeps_every_label_short():
    """Below 1 000 (in seconds, a few digits): the unit formatting.seconds writes the top
    in (the ninth walk: `7663.9┤` ms beside the table's `7.664 s`; test_tui_ninth_walk_words)."""
    from couplescope.frontends.tui.watch_widgets import axis_unit

    assert axis_unit(9.9e-3) == ("ms", 1e3) and axis_unit(13.7e-3) == ("ms", 1e3)
    assert axis_unit(999e-6) == ("µs", 1e6) and axis_unit(1.0132e-3) == ("ms", 1e3)
    assert axis_unit(9.99) == ("s", 1.0) and axis_unit(12.0) == ("s", 1.0)
    assert axis_unit(3e-7) == ("µs", 1e6)


# -- 3b. a training run's steps, counted one way ------------------------------------------------

async def test_watch_counts_a_training_run_s_steps_one_way_in_its_counts_loss_line_and_hint():
    """The status line counted `34/34 steps = 30 timed + 1 warm-up + 3 profiled`, the loss
    line `(30 timed steps + 1 warm-up)` and the hint `34 of the ~10 000 steps it needs`
    beside advice in timed iterations. Every step trains the model (protocol.step_words):
    each line counts all of them, by kind. (The recording: 40 timed + 1 warm-up.)"""
    _, _, _, stats = await watched("preset-train")
    shown = " ".join(stats.split())
    assert "41/41 steps = 40 timed + 1 warm-up" in shown, shown
    assert "at the last (40 timed steps + 1 warm-up)" in shown, shown
    assert ("[training] not judged: 41 of the ~10 000 steps it needs (40 timed + 1 warm-up: all train "
            "the model); set iterations to 10 000 (Pick, p)") in shown, shown
    assert all(len(line) <= 80 for line in stats.splitlines()), stats


def test_the_not_judged_words_count_every_kind_of_step():
    from couplescope.protocol.step_words import not_judged

    assert not_judged({"timed": 30, "warmup": 1, "profiled": 3}, 10_000) == (
        "not judged: 34 of the ~10 000 steps it needs (30 timed + 1 warm-up + 3 profiled: all train the model)")
    assert not_judged({"timed": 9_990, "warmup": 0, "profiled": 0}, 10_000).startswith(
        "not judged: 9 990 of the ~10 000 steps it needs (9 990 timed: ")


@pytest.mark.e2e
def test_the_command_line_and_results_json_count_the_profiled_steps_that_trained_the_model(cli):
    """`--task train --iterations 10` with 3 profiled steps (a real run, the python host:
    about 8 s): the loss line, the `training:` line, results.json's message and the
    comparison's line all count the 14 steps the same way; the last loss is the last
    (profiled) step's, the trained model's."""
    import json

    r = cli("--model", "simplenet", "--task", "train", "--host", "python", "--iterations", "10",
            "--profile-iterations", "3", "--telemetry-hz", "0", "--json")
    assert r.returncode == 0, r.stderr
    (variant,) = json.loads(r.stdout)["variants"]
    said = ("not judged: 14 of the ~10 000 steps it needs (10 timed + 1 warm-up + 3 profiled: all train "
            "the model); use --iterations 10000")
    assert variant["training"]["final_check"]["message"] == said
    assert variant["training"]["steps"] == 14
    assert f"training: {said}" in r.stderr, r.stderr
    from couplescope.results.saved import iteration_records

    steps = iteration_records(variant)
    assert [it["kind"] for it in steps][-1] == "profiled" and len(steps) == 14
    loss_line = next(line for line in r.stderr.splitlines() if line.startswith("loss: "))
    assert loss_line.endswith(f"{steps[-1]['loss']:.4E} at the last (10 timed steps + 1 warm-up + 3 profiled, "
                              "sgd lr 0.05)"), loss_line
    last_loss = next(line for line in r.stderr.splitlines() if line.startswith("simplenet-"))
    assert f"{steps[-1]['loss']:.4E}  not judged" in last_loss, last_loss    # the comparison's last loss


async def test_a_view_s_redraw_timer_firing_while_the_app_takes_it_down_draws_nothing():
    """Quitting during a run once failed under load with `No nodes match 'TimePlot' on
    WatchView`: Textual marks every node it is about to remove (`_pruning`) and removes a
    view's widgets before the view, whose redraw timer can fire between. Here that moment
    is made by hand: the plot gone, the view marked, its timer's callback called."""
    from couplescope.frontends.tui.views.watch import WatchView

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        watch = app.screen.query_one(WatchView)
        await watch.query_one(TimePlot).remove()
        watch._pruning = True
        try:
            watch._redraw_timer._callback()   # the timer's own callback, as Textual calls it
        finally:
            watch._pruning = False
            watch._redraw_timer.stop()


async def test_events_arriving_while_the_app_takes_a_view_down_are_not_handed_to_it():
    """The same moment, for the events the app hands on: quitting during a run failed under
    load with `No nodes match 'TimePlot' on WatchView` from Watch.follow (the calls' events
    arriving between the plot's removal and the view's)."""
    from couplescope.frontends.tui.messages import EventsArrived
    from couplescope.frontends.tui.views.watch import WatchView

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        watch = app.screen.query_one(WatchView)
        record = app.runs[1]
        calls = [ev for ev in record.events if ev["event"] == "iteration" and ev["variant"] == watch._shown]
        assert calls, watch._shown
        await watch.query_one(TimePlot).remove()
        watch._pruning = True
        try:
            app.on_events_arrived(EventsArrived(record.id, "iteration", calls[-1:]))
        finally:
            watch._pruning = False
            watch._redraw_timer.stop()


@pytest.mark.parametrize("name,word", [("preset-train", "not judged"), ("training", "PASSED")])
async def test_watch_s_verdict_for_a_training_run_too_short_to_judge_is_not_judged(name, word):
    """The thirteenth walk: Watch said `direct PASSED  310 checks passed` of a training run
    History and compare call `not judged` (too few steps for its learning task); a run
    whose learning task was judged (`training`: it learned the shift) stays PASSED."""
    stats = (await watched(name))[3]
    head = stats.splitlines()[0]
    assert word in head and ("PASSED" in head) == (word == "PASSED"), stats
