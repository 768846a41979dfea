"""What a third walk-through of the app by a new user found in the compare screen and the
layout (issue 30; /work/third-walk.md items 1, 2, 7's compare part, 8 and 14), each driven
by Pilot on the real app: a sweep's median lines drawn whole, names cut between words,
one order of the rows (the Run line's, run after run), a training compare's plot speaking
of steps, and the telemetry panel's border as tall as the Watch view.

Runs are recorded real runs played back (tests/fixtures)."""

from __future__ import annotations

import pytest
from rich.text import Text

from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.compare_table import ranking_lines
from test_tui_replay import compare_shown, replay_app, run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

#: the characters plotext draws a line with (its "hd" marker: half blocks and quadrants)
LINE_CHARS = {chr(c) for c in range(0x2580, 0x25A0)}


async def open_compare(pilot) -> CompareScreen:
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
    await pilot.pause()
    return pilot.app.screen


def coloured_cells(text: Text) -> list[list[tuple[str, str | None]]]:
    """The rendered plot as rows of (character, its colour's name)."""
    colours: list[str | None] = [None] * len(text.plain)
    for span in text.spans:
        style = span.style if not isinstance(span.style, str) else None
        if style is not None and style.color is not None:
            colours[span.start:span.end] = [style.color.name] * (span.end - span.start)
    rows, at = [], 0
    for line in text.plain.split("\n"):
        rows.append(list(zip(line, colours[at:at + len(line)])))
        at += len(line) + 1
    return rows


# -- item 1: the percentiles never hide a median line ------------------------------------------

def assert_every_median_line_whole(screen) -> None:
    """Every series' line runs, in its colour, through every column from its first size
    to its last (two series here, over the same sizes)."""
    plot = screen.query_one("#compare-plot").render()
    rows = coloured_cells(plot)
    axis = next(i for i, row in enumerate(rows) if "└" in "".join(char for char, _ in row))
    ticks = [x for x, (char, _) in enumerate(rows[axis]) if char == "┬"]   # the first and last size
    lines: dict[str, set[int]] = {}
    for row in rows[:axis]:
        for x, (char, colour) in enumerate(row):
            if char in LINE_CHARS and colour:
                lines.setdefault(colour, set()).add(x)
    assert len(lines) == len(screen.plotted), (list(lines), plot.plain)    # a line per series
    for colour, columns in lines.items():
        missing = sorted(set(range(ticks[0], ticks[-1] + 1)) - columns)
        assert not missing, (colour, missing, plot.plain)


async def test_every_median_line_of_a_sweep_is_drawn_whole():
    """The 25th and 75th percentiles were dotted lines drawn after the medians: at 80x24
    no line of torchscript's medians showed, at 160x48 one began half-way."""
    app = replay_app("sweep")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        screen = await open_compare(pilot)
        assert screen.plotted and len(screen.plotted) == 2
        assert_every_median_line_whole(screen)
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: screen.query_one("#compare-plot").size.width > 150, "the plot at 160 columns")
        assert_every_median_line_whole(screen)
        legend = str(screen.query_one("#compare-legend").render())   # the key under the plot, not over it
        assert "━ deep-linear-torchscript" in legend and "━ deep-linear-bridge-eager" in legend


# -- items 2, 7 and 8: a training compare of two runs of the preset -----------------------------

def cut_between_words(shown: str, name: str) -> bool:
    """Whether `shown` is `name` whole, or its whole words around ellipses, in order."""
    words, at = name.split("-"), 0
    for piece in filter(None, shown.split("…")):
        found = [i for i in range(at, len(words)) if "-".join(words[i:i + len(piece.split("-"))]) == piece]
        if not found:
            return False
        at = found[0] + len(piece.split("-"))
    return True


async def test_a_training_compare_keeps_the_run_line_s_order_whole_words_and_steps():
    """The walk's compare of two runs of simplenet-train at 80x24: rows in each round's
    shuffled order (#1's differed from the Run line's and from #2's), `#3 direct…hon-host`
    ("python" cut), and a box plot of "timed calls". The rows follow the Run line, run
    after run, their boxes numbered down the table; the plot counts steps; the names
    keep whole words and stay told apart."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        def preview() -> str:
            return " ".join(str(app.main.query_one("#preview").render()).split())

        await until(pilot, lambda: "variants, training" in preview(), preview())
        order = preview().rsplit(": ", 1)[1].split(", ")   # the Run line's names, after what it runs
        assert order == ["direct", "direct-python-host", "bridge", "bridge-python-host"], preview()
        await run_replay(pilot)
        planned = next(ev for ev in app.runs[1].events if ev["event"] == "rounds_planned")
        assert planned["orders"][0] != order             # the recording's first round is shuffled
        screen = await open_compare(pilot)
        assert screen.all_names == [f"#1 {n}" for n in order]
        await pilot.press("escape")
        await run_replay(pilot)
        screen = await open_compare(pilot)
        assert screen.all_names == [f"#{run} {n}" for run in (1, 2) for n in order]   # one rule, run after run
        table = screen.query_one("#compare-table")
        assert [str(table.get_row(name)[0]).strip() for name in screen.all_names] == [str(i) for i in range(1, 9)]
        boxes = str(screen.query_one("#box-rows").render())
        assert boxes.startswith("timed steps ("), boxes   # training speaks of steps
        assert [line.split("│")[0].strip() for line in boxes.splitlines()[1:9]] == [str(i) for i in range(1, 9)]
        # the walk's runs made 300 steps: a column wider by a digit cut the long names; here
        # 40 steps, so the screen is a few columns narrower for them to be cut
        await pilot.resize_terminal(76, 24)
        await until(pilot, lambda: any("…" in str(table.get_row(n)[1]) for n in screen.all_names), "names cut")
        shown = [str(table.get_row(name)[1]).strip() for name in screen.all_names]
        for run in ("#1 ", "#2 "):                          # between words, told apart
            mine = [s[len(run):] for s in shown if s.startswith(run)]
            assert len(set(mine)) == len(order) and all(map(cut_between_words, mine, order)), shown


def test_pairs_not_ranked_are_listed_ascending():
    """"cannot rank 3, 2, 4 vs 1": the boxes as the rows came; they read ascending."""
    rows = [{"name": n, "baseline": "a", "cannot_rank": "4 of 4 rounds disturbed"} for n in "dbc"]
    rows += [{"name": "a", "baseline": "a"}, {"name": "f", "baseline": "e", "cannot_rank": "5 of 5 rounds disturbed"},
             {"name": "e", "baseline": "e"}]
    box = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}
    assert ranking_lines(rows[::-1], box) == [
        "cannot rank 2, 3, 4 vs 1: 4 of 4 rounds disturbed by other processes",
        "cannot rank 6 vs 5: 5 of 5 rounds disturbed by other processes"]


# -- item 14: the telemetry panel beside the Watch view ----------------------------------------

async def test_the_telemetry_panel_s_border_runs_the_watch_view_s_height():
    """At 160x48 the panel's left border stopped under its few lines of text: it is as
    tall as the plot and the table beside it."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("w")
        panel = app.query_one("#watch-telemetry")
        await until(pilot, lambda: panel.display and panel.region.width > 0, "the panel beside the Watch view")
        body = app.query_one("#watch-body").region
        assert panel.styles.border_left[0] != ""                              # it has a border ...
        assert (panel.region.y, panel.region.height) == (body.y, body.height)   # ... as tall as the view
