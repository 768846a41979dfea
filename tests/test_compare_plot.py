"""The app's compare view plot on recorded real runs: the axis of the boxes (a row each,
tui/box_rows.py) is not stretched by one slow call, the whiskers it cuts are marked with
their true ends, and a sweep's lines (plotext) are named as the table names the variants."""

from __future__ import annotations

import pytest

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.box_rows import box_plot
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.results import saved, stats
from test_plots_compare import document
from test_tui_replay import compare_shown, replay_app, run_replay, until


def timed(name: str) -> list[list[float]]:
    return [[s["seconds"] for s in saved.timed_steps(v)] for v in document(name)["variants"]]


def test_one_slow_call_no_longer_flattens_the_boxes():
    """simplenet through TorchScript, 12 calls of 126 to 160 µs and one of 841 µs (its
    95th percentile 507 µs), beside the bridge's 108 to 140 µs: the axis ran to 507 µs and
    both boxes sat in its bottom tenth."""
    series = timed("two-backends")
    drawn = box_plot(series)
    assert drawn.unit == "µs"
    p95 = stats.percentile(sorted(series[0]), 95) * 1e6
    assert p95 > 400 and drawn.cut == {1: pytest.approx(p95)}
    assert drawn.quintuples[0][0] == pytest.approx(drawn.top / 1.06, rel=0.05)   # the whisker ends at the top
    lowest_box = min(q[3] for q in drawn.quintuples)
    highest_box = max(q[1] for q in drawn.quintuples)
    assert (highest_box - lowest_box) / (drawn.top - drawn.bottom) > 0.5   # the boxes fill the plot
    assert drawn.top < 2 * highest_box


def test_nothing_is_cut_when_no_whisker_runs_far_past_the_boxes():
    series = [[t for t in ts] for ts in timed("telemetry")]   # cgdrag, 25 calls of 40 to 54 ms
    drawn = box_plot(series)
    assert drawn.cut == {} and drawn.unit == "ms"
    assert drawn.top >= max(q[0] for q in drawn.quintuples)


async def test_the_compare_view_marks_the_cut_whisker_with_its_end_at_80_columns():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        assert isinstance(app.screen, CompareScreen)
        plot = app.screen.query_one("#box-rows")
        await pilot.pause()
        shown = plot.render().plain
        p95 = stats.percentile(sorted(timed("two-backends")[0]), 95) * 1e6
        first = next(line for line in shown.splitlines() if line.lstrip().startswith("1 │"))
        assert first.endswith(f"▸{fmt.seconds(p95 / 1e6)}")   # the whisker's arrow, where it really ends, in the tables' unit
        assert "timed calls (µs): █ 25-75% ┃ median, ├─┤ 5-95%; ▸N: cut here, ends at N" in shown


async def test_a_sweep_s_lines_are_named_as_the_table_names_the_variants():
    app = replay_app("sweep")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        shown = str(app.screen.query_one("#compare-legend").render())   # the plot's key, under it
        assert "deep-linear-torchscript" in shown and "deep-linear-bridge-eager" in shown
        assert "bridge (eager)" not in shown


async def test_two_runs_of_one_sweep_are_a_line_each():
    """The same sweep run twice and compared: a series per run, each one point per size."""
    app = replay_app("sweep")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_replay(pilot)
        await pilot.pause()
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert sorted(map(tuple, screen.plotted)) == sorted(
            tuple(f"#{run} deep-linear-{coupling}-{n}" for n in (8, 16, 32))
            for run in (1, 2) for coupling in ("torchscript", "bridge-eager"))
        shown = str(screen.query_one("#compare-legend").render())
        assert "#1 deep-linear-torchscript" in shown and "#2 deep-linear-torchscript" in shown
