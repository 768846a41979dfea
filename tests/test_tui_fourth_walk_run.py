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

import pytest

from test_tui_replay import replay_app, run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


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
    async with app.run_test(size=(80, 21)) as pilot:   # 3 rows, then 10: plotext's 7 ticks fall between
        await run_replay(pilot)
        plot = app.main.query_one("#plot")
        assert_on_their_rows(y_labels(plot), 21)
        await pilot.resize_terminal(80, 28)   # the rows are counted again
        await until(pilot, lambda: plot.size.height == 8 + 7, ("the plot grown", plot.size))
        assert_on_their_rows(y_labels(plot), 28)


async def test_the_sweep_plots_y_labels_name_the_rows_they_sit_on():
    app = replay_app("sweep")
    async with app.run_test(size=(80, 24)) as pilot:   # 10 rows
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: app.screen.query("#compare-plot") and app.screen.plotted, "the sweep plot")
        await pilot.pause()
        assert_on_their_rows(y_labels(app.screen.query_one("#compare-plot")), "sweep")
