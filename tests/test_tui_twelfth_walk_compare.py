"""What the eleventh walk-through of the app by a new user found in the compare screen and
Watch (issue 30, /work/eleventh-walk.md 3b, 3c, 2a, 2b, 2c): box numbers skipping past a
stopped run's rows, one run's ratio shown two ways depending on what else was compared,
the compare heading wrapped, Watch's scroll bar against its last column and its plot's
legend changing words within one run.

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures)."""

from __future__ import annotations

import os
import threading

import pytest

from couplescope.core import replay
from test_tui_eighth_walk_compare import sweep_in_rounds
from test_tui_replay import FIXTURES, replay_app, run_replay, until
from test_tui_walkthrough import open_compare, table_rows

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def recorded(name: str, title: str) -> replay.Recording:
    return replay.Recording(replay.read(os.path.join(FIXTURES, f"{name}.jsonl")), title)


def notes_of(screen) -> list[str]:
    return str(screen.query_one("#compare-notes").render()).splitlines()


# -- 3c: a run's same-round ratios are the same whatever else is compared ------------------------------

async def ratios_of(pilot) -> tuple[dict, list[str]]:
    """The compare screen's ratio cells by variant, and the lines under the table."""
    screen = await open_compare(pilot)
    label = next(c for c in screen.columns() if c in ("ratio", "vs fastest"))
    rows = dict(zip(screen.all_names, table_rows(screen)))
    return {name: cells[screen.columns().index(label)] for name, cells in rows.items()}, notes_of(screen)


async def test_a_run_s_same_round_ratios_alone_and_beside_another_run_are_equal():
    """The walk's #1 (simplenet-train in rounds) read `3.18x` and `2.94x` alone, `3.15x` and
    `3.29x` beside a run at another size (`ratios: of the medians`): here the recorded
    simplenet sweep in rounds (sizes 1 and 2), alone, then beside cgdrag (nothing like it).
    Each ratio is the same both times, marked `*` beside the other run's, and the line under
    the table says what they are."""
    app = replay_app("telemetry")
    async with app.run_test(size=(80, 24)) as pilot:
        app.recording = sweep_in_rounds()
        await run_replay(pilot)
        alone, _ = await ratios_of(pilot)
        await pilot.press("escape")
        app.recording = recorded("telemetry", "cgdrag")
        await run_replay(pilot)
        beside, notes = await ratios_of(pilot)
        assert set(alone) < set(beside), (alone, beside)
        assert {n: beside[n].rstrip("*") for n in alone} == alone, (alone, beside)
        assert all(beside[n].endswith("*") for n in alone if beside[n].endswith("x")), beside
        assert app.screen.columns().count("ratio") == 1   # not `vs fastest`: to its run's box
        assert any(line.startswith("ratios*: from same-round pairs in one run, to ") for line in notes), notes
        assert all(len(line) <= 78 for line in notes), notes


def test_a_slower_median_with_a_smaller_ratio_is_said_why():
    """`435.0 µs 3.18x` above `454.1 µs 2.94x`, nothing saying why: a same-round ratio is the
    median of its rounds' ratios. The line names the two boxes, within 78 columns."""
    from couplescope.frontends.tui.compare_table import slower_smaller

    rows = [{"name": "a", "median": 1.0, "ratio": 1.0, "baseline": "a", "paired_rounds": None},
            {"name": "b", "median": 4.350, "ratio": 3.18, "baseline": "a", "paired_rounds": 5},
            {"name": "c", "median": 4.541, "ratio": 2.94, "baseline": "a", "paired_rounds": 5}]
    lines = slower_smaller(rows, {"a": 1, "b": 2, "c": 3}, 78)
    assert lines == ["box 3 is slower than box 2 but its ratio smaller",
                     "(a ratio is the median of its rounds' ratios, not the medians')"], lines
    rows[2]["ratio"] = 3.5
    assert slower_smaller(rows, {"a": 1, "b": 2, "c": 3}, 78) == []


# -- 3b: boxes numbered consecutively past a run that made no step -------------------------------------

@pytest.fixture
def hold(monkeypatch) -> dict:
    """While `hold["on"]`, a played worker holds its events until stopped (a run stopped
    before its first step); `hold["started"]` counts the workers started."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    state = {"on": False, "started": 0}

    def events(self):
        state["started"] += 1
        if state["on"]:
            while not self._stopped:
                threading.Event().wait(0.01)
            return
        yield from play(self)
    monkeypatch.setattr(PlayedWorker, "events", events)
    return state


async def test_boxes_are_numbered_consecutively_past_a_run_stopped_before_its_first_step(hold):
    """The walk: simplenet-train #1 and #3 beside #2, stopped with no steps: the rows read
    4 then 9, and the plot's rows 4 and 9 stood together. The boxes are numbered 1 to 8,
    the table and the plot agreeing."""
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        app.recording = recorded("preset-train", "simplenet-train")
        await run_replay(pilot)
        hold["on"], started = True, hold["started"]
        await pilot.press("r")
        await until(pilot, lambda: hold["started"] > started, "the held worker started")
        await pilot.press("s")
        await until(pilot, lambda: app.active is None, "the stopped run ended")
        hold["on"] = False
        await run_replay(pilot)
        screen = await open_compare(pilot)
        rows = table_rows(screen)
        numbers = [cells[0] for cells in rows if cells[0]]
        assert len(rows) == 12 and numbers == [str(i) for i in range(1, 9)], rows
        plot = str(screen.query_one("#box-rows").render()).splitlines()[1:9]
        assert [row.split("│")[0].strip() for row in plot] == numbers, plot


# -- 2b: a blank column between Watch's table and its scroll bar ---------------------------------------

async def test_watch_s_table_leaves_a_blank_column_before_its_scroll_bar():
    """`67 timed   34.1 µs  0.0000E+00 PASSED▂`: the scroll bar against the check. At 80x24,
    with more rows than the table shows (its scroll bar drawn), every row leaves the column
    before the bar blank, its check whole."""
    from couplescope.frontends.tui.iterations_table import IterationsTable

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("w")
        table = app.main.query_one(IterationsTable)
        await until(pilot, lambda: table.show_vertical_scrollbar and table.lines, "the table's scroll bar")
        room = table.scrollable_content_region.width
        rows = [strip.text.rstrip() for strip in table.lines]
        assert all(row.endswith(("PASSED", "FAILED")) for row in rows[-5:]), rows[-5:]
        assert max(len(row) for row in rows) <= room - 1, (room, rows[-3:])
        assert table.region.right <= 80


# -- 2c: the Watch legend keeps one wording through a run ----------------------------------------------

#: the walk's resnet18 #1 legend, while it measured and once finished
MEASURING = [("x warm-up ↑556.4 ms", "orange"), ("━ timed", "white"),
             ("━ marshal_in", "cyan"), ("━ forward", "green"), ("━ marshal_out", "blue")]
FINISHED = [("x warm-up", "orange"), ("━ timed", "white"), ("x profiled ↑975.5 ms", "red"),
            ("━ marshal_in", "cyan"), ("━ forward", "green"), ("━ marshal_out", "blue")]


async def test_watch_s_legend_says_the_full_phase_names_while_measuring_and_once_finished():
    """`━ m_in`, `━ fwd` while resnet18 measured, `━ marshal_in`, `━ forward` once finished,
    at 80 columns: the full names both times, in the legend's lines, never cut."""
    from couplescope.frontends.tui.watch_widgets import PlotLegend

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        legend = app.main.query_one(PlotLegend)
        for items in (MEASURING, FINISHED):
            legend.show(items)
            # drawn at the width the layout gives it (a legend shown before its first layout
            # is drawn at the least width, with the short names, then again on its resize)
            await until(pilot, lambda: legend.content_size.width > 10
                        and all(f"━ {n}" in str(legend.render()) for n in ("marshal_in", "forward")),
                        "the legend drawn at its width with the full names")
            shown = str(legend.render())
            lines = shown.splitlines()
            assert all(f"━ {name}" in shown for name in ("marshal_in", "forward", "marshal_out")), shown
            assert legend.content_size.width < 40 and len(lines) <= 3, shown
            assert all(len(line) <= legend.content_size.width for line in lines), shown
            for text, _ in items:   # every entry whole on one line
                assert any(text in line for line in lines), (text, shown)


# -- 2a: the compare heading fits its rows at 80 columns ------------------------------------------------

async def test_the_compare_heading_at_80_columns_wraps_no_line():
    """`not compared: #2 simplenet-train's training steps, other work; tab compares` /
    `those`: the walk's heading took two rows. Here simplenet-train's recorded run, then an
    inference run: each line of the heading on one row of the screen."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        app.recording = recorded("preset-train", "simplenet-train")
        await run_replay(pilot)
        app.recording = recorded("two-backends", "simplenet")
        await run_replay(pilot)
        screen = await open_compare(pilot)
        title = screen.query_one("#compare-title")
        lines = str(title.render()).splitlines()
        assert lines[-1].startswith("not compared: #1 simplenet-train's training steps"), lines
        assert lines[-1].endswith("tab compares those"), lines
        assert title.region.height == len(lines) and all(len(line) <= title.content_size.width for line in lines), (
            title.region, lines)


@pytest.mark.parametrize("ids", [[12], [3, 12], [1, 2, 3, 12]])
def test_the_left_out_runs_line_fits_78_columns_with_the_catalogue_s_longest_names(ids):
    """The longest run titles of the catalogue (`deep-linear-cudagraph`, its presets'), two
    digits of run number: the line fits the 78 columns compare gives it at 80, naming the
    runs, or their numbers where the names would not fit, and saying what tab does."""
    from types import SimpleNamespace

    from couplescope.frontends.tui.compare_table import title_lines

    others = [SimpleNamespace(id=i, title="deep-linear-cudagraph", name=f"#{i} deep-linear-cudagraph") for i in ids]
    records = [SimpleNamespace(id=20, title="simplenet-train", name="#20 simplenet-train")]
    for task in ("infer", "train"):
        lines = title_lines(records, task, others, 78)
        assert all(len(line) <= 78 for line in lines), lines
        assert lines[-1].startswith("not compared: ") and lines[-1].endswith("tab compares those"), lines
        assert all(f"#{i}" in lines[-1] for i in ids), lines
