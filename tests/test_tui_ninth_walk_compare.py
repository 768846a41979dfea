"""What the ninth walk-through of the app by a new user found in the compare screen (issue
30, /work/ninth-walk.md 3a, 3b, 2a, 3c): several runs' ratios to the fastest of every row
(a size-2 variant to a size-1 one, stride to simplenet), a sweep of separate runs drawn by
one rule here and another there, a sweep series hidden under another with nothing in the
key, and a loss of four digits written with three.

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures)."""

from __future__ import annotations

import pytest

from couplescope.frontends import formatting as fmt
from couplescope.results.labels import size_of
from test_tui_replay import replay_app, until
from test_tui_walkthrough import open_compare, runs_of, table_rows

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def like(screen, name) -> tuple:
    v = screen.builder.variants[name]
    return v.spec.get("model"), size_of({"spec": v.spec, "model": v.model})


# -- 3a: a ratio compares like with like ---------------------------------------------------------------

@pytest.mark.parametrize("runs", [("two-backends", "compiled"), ("telemetry", "two-backends")])
async def test_several_runs_ratios_are_each_to_the_fastest_of_its_model_and_size(runs):
    """The walk: `#3 direct-torchscript-2 ... 1.32x` to a variant at size 1, and
    `#1 stride-torchscript ... 325827.15x` to simplenet. Simplenet at size 1 (two-backends)
    beside size 2 (compiled): each ratio is to the fastest of its size, and the table shows
    each row's size (the names do not say it). cgdrag beside simplenet: cgdrag has nothing
    like it, it reads `alone`; the lines under the table say what each ratio is to."""
    app = replay_app(runs[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, *runs)
        screen = await open_compare(pilot)
        columns = screen.columns()
        rows = dict(zip(screen.all_names, table_rows(screen)))
        medians = {r["name"]: r["median"] for r in screen.builder.comparison()}
        ratio = columns.index("vs fastest")
        groups = {}
        for name in medians:
            groups.setdefault(like(screen, name), []).append(name)
        for key, members in groups.items():
            fastest = min(medians[n] for n in members)
            for name in members:
                want = "alone" if len(members) == 1 else fmt.ratio(medians[name] / fastest)
                assert rows[name][ratio] == want, (name, key, rows[name])
        notes = str(screen.query_one("#compare-notes").render()).splitlines()
        assert notes[0] == "ratios: of the medians, each to the fastest of its model and size", notes
        sizes = {key[1] for key in groups}
        assert ("size" in columns) == (len(sizes) > 1), columns
        if "size" in columns:
            assert {name: cells[columns.index("size")] for name, cells in rows.items()} == \
                {name: str(like(screen, name)[1]) for name in rows}, rows
        else:   # cgdrag alone
            alone = [int(cells[0]) for cells in rows.values() if cells[ratio] == "alone"]
            assert alone and notes[1] == f"alone: box {alone[0]} has no other variant of its model and size, no ratio"
        assert all(len(line) <= 78 for line in notes), notes


# -- 3c: four significant digits keep their trailing zero ----------------------------------------------

def test_a_loss_of_four_digits_keeps_its_trailing_zero():
    """The walk's training compare: `0.106` beside `0.1526`."""
    from couplescope.frontends.tui.compare_table import loss_cell

    assert [loss_cell(v) for v in (0.106, 0.1526, 0.5418, 12.3, 1000.0, 9999.9, 5e-9)] == \
        ["0.1060", "0.1526", "0.5418", "12.30", "1000", "1.000E+04", "5.000E-09"]


# -- 3b, 2a: a sweep is one run's variant at several sizes; every series seen or named under another -----

def sweep_recording():
    from test_tui_eighth_walk_compare import sweep_in_rounds

    return sweep_in_rounds()


async def sweep_shown(pilot, screen):
    """The compare screen's sweep plot, once drawn with its key."""
    plot, legend = screen.query_one("#compare-plot"), screen.query_one("#compare-legend")
    if screen.plotted is None:
        await pilot.press("v")
    await until(pilot, lambda: screen.plotted and legend.items and plot.size.height, "the sweep's plot")
    await pilot.pause()
    return plot, legend


@pytest.mark.parametrize("first", ["two-backends", "compiled"])
async def test_a_sweep_beside_another_run_draws_only_its_own_series_and_hides_none_unnamed(first):
    """The walk's #2 (simplenet at size 1) + #3 (the sweep at sizes 1, 2): bridge-torchscript
    under bridge-python with no `(under ...)` in the key; with another run at size 1 or 2
    beside a sweep, its points were joined to the sweep's where no size repeated (under the
    other run's name) and not drawn where one did. One rule: a series is one run's variant;
    the other run's boxes are `not drawn`, and each series in the key has its colour on the
    plot or is named under the one over it."""
    from test_tui_eighth_walk_compare import line_colors
    from rich.style import Style

    app = replay_app(first)
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, first)
        app.recording = sweep_recording()
        from test_tui_replay import run_replay
        await run_replay(pilot)
        screen = await open_compare(pilot)
        plot, legend = await sweep_shown(pilot, screen)
        assert all(len({n.split(" ")[0] for n in group}) == 1 for group in screen.plotted), screen.plotted
        assert [text.split(" ")[1] for text, _ in legend.items if text.startswith("━")] == ["#2"] * 3, legend.items
        drawn = line_colors(plot)
        for text, color in legend.items:
            if text.startswith("━"):
                assert (Style.parse(color).color.number in drawn) == (" (under " not in text), (text, drawn, legend.items)
        first_boxes = sorted(int(c[0]) for name, c in zip(screen.all_names, table_rows(screen)) if name.startswith("#1 "))
        said = [text for text, _ in legend.items if text.startswith("not drawn: ")]
        assert said == [f"not drawn: {', '.join(map(str, first_boxes))} (one size in its run; v draws every box)"], said


@pytest.mark.parametrize("size", [(80, 24), (80, 40), (100, 30)])
async def test_the_sweep_key_is_worked_out_on_the_rows_the_plot_is_drawn_on(monkeypatch, size):
    """The walk's 2a: bridge-torchscript drawn under bridge-python, nothing in the key. The key
    names a covered line from the rows each median falls in (compare_sweep.hidden_under),
    and they were counted before the plot was laid out (its least height: 10 rows, drawn on
    11 at 100x30 and on 20 at 80x40): lines a row apart on the screen could be counted as
    apart and drawn in one row. The key is worked out again on the rows drawn, and each
    series has its colour on the plot or is named under the one over it."""
    from rich.style import Style

    from couplescope.frontends.tui import compare_sweep
    from test_tui_eighth_walk_compare import line_colors

    told = []
    real = compare_sweep.hidden_under
    monkeypatch.setattr(compare_sweep, "hidden_under", lambda *a: told.append(a[3]) or real(*a))
    app = replay_app("two-backends")
    async with app.run_test(size=size) as pilot:
        app.recording = sweep_recording()
        from test_tui_replay import run_replay
        await run_replay(pilot)
        screen = await open_compare(pilot)
        plot, legend = await sweep_shown(pilot, screen)
        rows = plot.size.height - plot._frame_rows
        await until(pilot, lambda: told and told[-1] == rows, f"the key worked out on {rows} rows: {told}")
        drawn = line_colors(plot)
        for text, color in legend.items:
            if text.startswith("━"):
                assert (Style.parse(color).color.number in drawn) == (" (under " not in text), (text, drawn, legend.items)
