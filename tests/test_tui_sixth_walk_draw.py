"""What a sixth walk-through of the app by a new user found drawn wrong in the compare
screen (issue 30, /work/sixth-walk.md 2.1, 2.2, 2.3, 2.5 and 3.5): a sweep's plot at 80x24
given two rows of solid ▄, a narrow box without its `├` and two cells wide, boxes
renumbered when a row is left out, `direct-python-host` cut to `direct…host`, and one
run's variants left alone keeping the medians' ratios instead of its same-round pairs.

Pure functions are tested as such; the app is the real one driven by Pilot over recorded
real runs played back (tests/fixtures: no worker process, no catalogue)."""

from __future__ import annotations

import os

import pytest

from couplescope.core import replay
from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.box_rows import BoxPlot, box_plot, draw
from couplescope.frontends.tui.name_cuts import cut_names
from test_tui_replay import FIXTURES, replay_app, run_each, until
from test_tui_walkthrough import compared

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def recorded(name: str, title: str) -> replay.Recording:
    return replay.Recording(replay.read(os.path.join(FIXTURES, f"{name}.jsonl")), title)


def cells(table, name: str) -> list[str]:
    return [str(c).strip() for c in table.get_row(name)]


# -- 2.1: a sweep's plot at 80x24 has rows to read, and scrolls as the boxes do ----------------

#: the fewest rows of lines a sweep's plot is readable in (the walk's had two, the recording's four)
READABLE_ROWS = 8


async def test_a_sweep_of_many_variants_at_80x24_is_drawn_in_rows_to_read_and_scrolls():
    """The walk's compare had ten inference variants, a sweep among them; here two runs of
    deep-linear at sizes 8, 16 and 32 through two backends, twelve variants. The plot had
    the rows the table left: at the walk's every median line in two rows of solid `▄`
    (here four), and PgDn/End moved nothing."""
    app = replay_app("sweep")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_each(pilot, [app.recording, recorded("sweep", "deep-linear")])
        await compared(pilot)
        screen = app.screen
        await until(pilot, lambda: screen.plotted is not None and screen.query_one("#compare-plot").size.height,
                    "the sweep's plot drawn")
        assert len(screen.all_names) == 12 and len(screen.plotted) == 4
        plot = screen.query_one("#compare-plot").render().plain.splitlines()
        top = next(i for i, row in enumerate(plot) if "┌" in row)
        axis = next(i for i, row in enumerate(plot) if "└" in row)
        rows = [row.split("┤" if "┤" in row else "│", 1)[1].rstrip("│") for row in plot[top + 1:axis]]
        assert len(rows) >= READABLE_ROWS, "\n".join(plot)
        assert not [row for row in rows if set(row) == {"▄"}], "\n".join(plot)   # no row solid ▄
        labels = [row.split("┤")[0].strip() for row in plot[top + 1:axis] if "┤" in row]
        assert len(labels) >= 3, "\n".join(plot)   # values to read it by
        sweep = screen.query_one("#compare-sweep")
        assert sweep.max_scroll_y > 0   # more than the screen shows under the table ...
        await pilot.press("end")        # ... so it scrolls, as the boxes do
        legend = screen.query_one("#compare-legend")
        await until(pilot, lambda: sweep.scroll_y == sweep.max_scroll_y > 0
                    and sweep.region.y <= legend.region.y < legend.region.bottom <= sweep.region.bottom,
                    "the sweep's end: its key in view")
        await pilot.press("home")
        await until(pilot, lambda: sweep.scroll_y == 0, "the sweep's top")


# -- 2.2: every box keeps its whiskers' ends and is three columns wide at least ----------------

def boxes_drawn(plot: BoxPlot, width: int) -> list[str]:
    labels = [str(i) for i in range(1, len(plot.quintuples) + 1)]
    return [row.split("│", 1)[1] for row in draw(plot, labels, width).plain.splitlines()[1:1 + len(labels)]]


def assert_whole_boxes(rows: list[str]) -> None:
    """Each row: `├`, then a box of three columns or more with its median `┃` inside,
    then `┤` (or a cut whisker's `▸`)."""
    for row in rows:
        box = [i for i, ch in enumerate(row) if ch in "█┃"]
        assert box and box == list(range(box[0], box[-1] + 1)), row      # one box, whole
        assert len(box) >= 3 and row.count("┃") == 1, row                 # three wide, a median in it
        assert row.count("├") == 1 and row.index("├") < box[0], row       # its whisker's start, left of it
        ends = [i for i, ch in enumerate(row) if ch in "┤▸"]
        assert len(ends) == 1 and ends[0] > box[-1], row                   # its end, right of it


def test_a_narrow_box_at_the_axis_s_start_keeps_its_whiskers_and_three_columns():
    # the walk's box 5 (`5 │   ┃█┤`): its 5th, 25th percentiles and median in one column at
    # the axis's start, beside a slow variant; its row 6 (`┃███┤`); a box one call wide
    series = [[20e-6, 24e-6, 30e-6, 35e-6, 40e-6, 44e-6, 50e-6, 55e-6, 60e-6, 70e-6],
              [6.3e-6] * 4 + [6.8e-6, 6.9e-6, 7.0e-6, 7.2e-6, 7.4e-6, 7.8e-6],
              [5.9e-6] * 3 + [6.1e-6] * 4 + [6.6e-6, 7.1e-6, 8.0e-6],
              [6.5e-6] * 10]
    for width in (70, 80, 160):
        assert_whole_boxes(boxes_drawn(box_plot(series), width))
    # a box near zero time beside slow ones: the axis starts at zero, the box in its first columns
    near_zero = BoxPlot("µs", [[60.0, 40.0, 25.0, 10.0, 9.0], [1.2, 1.1, 1.0, 1.0, 1.0], [0.3] * 5], 0.0, 63.0, {})
    assert_whole_boxes(boxes_drawn(near_zero, 80))
    axis_values = draw(near_zero, ["1", "2", "3"], 80).plain.splitlines()[-1].split()
    assert all(not v.startswith("-") for v in axis_values), axis_values   # no time below zero labelled


# -- 2.3 and 3.5: a box keeps its number; one run's variants left alone are paired by round ----

async def test_a_box_keeps_its_number_and_one_run_left_alone_gives_its_same_round_ratios():
    """Two training runs in rounds (the recorded simplenet and simplenet-train preset): `space`
    on #1's two rows renumbered #2's boxes 1 to 4 (box 3 read before was box 1 after),
    and kept the ratios of the medians, where #2's own compare gives its same-round pairs'
    ("ratios: from same-round pairs, to box 1")."""
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_each(pilot, [app.recording, recorded("preset-train", "simplenet-train")])
        table = await compared(pilot)
        screen = app.screen
        names = screen.all_names
        assert [n.split(" ")[0] for n in names] == ["#1"] * 2 + ["#2"] * 4
        assert [cells(table, n)[0] for n in names] == ["1", "2", "3", "4", "5", "6"]
        for _ in range(2):                                    # #1's rows left out
            await pilot.press("space", "down")
        await until(pilot, lambda: set(names[:2]) <= screen.left_out and table.row_count == 6, "#1 left out")
        assert [cells(table, n)[0] for n in names] == ["", "", "3", "4", "5", "6"]   # the numbers stay
        boxes = str(screen.query_one("#box-rows").render()).splitlines()[1:5]
        assert [row.split("│")[0].strip() for row in boxes] == ["3", "4", "5", "6"], boxes
        own = app.runs[2].builder.comparison()               # #2's own rows, as `c` on it alone has them
        assert [cells(table, f"#2 {r['name']}")[5] for r in own] == [fmt.ratio(r["ratio"]) for r in own]
        notes = str(screen.query_one("#compare-notes").render())
        assert notes.startswith("ratios: from same-round pairs, to box 3"), notes
        assert "of the medians" not in notes, notes
        assert "ratio" in screen.columns() and "vs fastest" not in screen.columns()   # 7th walk 3c: to box 3
        await pilot.press("up", "up", "space")               # #1's first row back
        await until(pilot, lambda: names[0] not in screen.left_out, "#1's first row back")
        assert [cells(table, n)[0] for n in names] == ["1", "", "3", "4", "5", "6"]
        notes = str(screen.query_one("#compare-notes").render())
        assert notes.startswith("ratios: of the medians"), notes   # two runs again: not paired
        assert "vs fastest" in screen.columns()   # (the table's own label: fit shortens it to ratio at 80)


# -- 2.5: a name cut keeps the start that tells it apart, cut from its end ----------------------

def test_a_name_too_long_keeps_the_start_that_tells_it_apart():
    # the walk's training compare at 80 columns: 11 columns for the names, `direct…host`
    names = ["direct", "direct-python-host", "bridge", "bridge-python-host"]
    shown = cut_names(names, 11)
    assert shown == ["direct", "direct-pyt…", "bridge", "bridge-pyt…"], shown
    # docs/tui.md's example, with room for a whole word more
    assert cut_names([f"#3 {n}" for n in names], 17)[1] == "#3 direct-python…"
    # a start every other name of its run has is kept where the names stay apart (the twelfth
    # walk 2b: `#1 …torchscript` read as a name without its start, issue 30)
    other = cut_names(["#1 simplenet-torchscript", "#1 simplenet-bridge-torchscript", *names], 17)
    assert other[:2] == ["#1 simplenet-tor…", "#1 simplenet-bri…"], other
