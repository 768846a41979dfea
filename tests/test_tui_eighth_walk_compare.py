"""What the eighth walk-through of the app by a new user found in the compare screen
(issue 30, /work/eighth-walk.md 3c, 3a, 2c and 4): PASSED beside History's `not judged`,
a stopped sweep's `1.00x` under a line saying every ratio was to box 1, two sweep series
drawn on one row, no `q` in the footer, and a variant left out by an earlier compare
starting out left out without a word.

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures)."""

from __future__ import annotations

import os

import pytest
from rich.style import Style
from textual.widgets._footer import FooterKey

from couplescope.core import replay
from test_tui_replay import FIXTURES, replay_app, run_replay, until
from test_tui_seventh_walk_compare import stopped
from test_tui_walkthrough import held_from, open_compare, runs_of, table_rows

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def footer_keys(pilot) -> dict[str, tuple[int, int]]:
    """The compare footer's keys as laid out: description -> (x, right), once every key
    the screen offers is drawn."""
    app = pilot.app
    shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}

    def laid_out():
        drawn = {k.description: k for k in app.screen.query(FooterKey)}
        return shown == set(drawn) and all(k.region.width > 0 for k in drawn.values())
    await until(pilot, laid_out, shown)
    return {k.description: (k.region.x, k.region.right) for k in app.screen.query(FooterKey)}


# -- 4: q in the compare footer ---------------------------------------------------------------------

@pytest.mark.parametrize("runs", [("training", "two-backends"), ("sweep",), ("training", "sweep")])
async def test_the_compare_footer_offers_q_at_80_columns_and_every_key_fits(runs):
    """`esc back  space leave out  r run  e export  c compare  ? help`: q quits there, and
    the footer did not say so. With q every key fits 80 columns, tab (two tasks) and v (a
    sweep) included; with both, c (compare drawn again) gives way, and still acts."""
    app = replay_app(runs[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, *runs)
        screen = await open_compare(pilot)
        keys = await footer_keys(pilot)
        assert "quit" in keys, keys
        assert all(right <= 80 for _, right in keys.values()), keys
        spans = sorted(keys.values())
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), keys   # none under another
        crowded = len(runs) == 2 and "sweep" in runs
        assert ("compare" in keys) != crowded, keys
        if crowded:
            await pilot.press("c")   # drawn again: a new screen
            await until(pilot, lambda: app.screen is not screen and app.screen.__class__ is screen.__class__,
                        "compare drawn again")
            await pilot.resize_terminal(100, 24)
            await until(pilot, lambda: any(b.binding.description == "compare" and b.binding.show
                                           for b in app.screen.active_bindings.values()), "c with room")


# -- 3a: a stopped sweep's ratios say to what they are --------------------------------------------

def sweep_in_rounds() -> replay.Recording:
    """A real run of the simplenet preset at sizes 1 and 2 in 5 rounds (each size's
    variants paired with a baseline of their size); round 1's order: bridge-torchscript-1,
    bridge-torchscript-2, bridge-python-2, direct-torchscript-2, ..."""
    return replay.Recording(replay.read(os.path.join(FIXTURES, "sweep-rounds.jsonl")), "simplenet")


@pytest.mark.parametrize("workers", [4, 9])
async def test_a_stopped_sweep_s_ratios_name_their_box_and_a_variant_alone_at_its_size_has_none(
        monkeypatch, workers):
    """The walk's #4 (the preset's sweep stopped part-way): box 6 read `1.00x` at 24.9 µs
    beside box 1's 6.5 µs, under `ratios: of the medians, to box 1 (fewer than two rounds
    in common)`: its size's other variants made no call, so it was its own baseline.
    Stopped at the 4th worker, box 3 is alone at size 1: it reads `alone`, a line says so,
    and every `1.00x` left is a box the ratios line names. Stopped at the 9th (round 2),
    the line is longer than the screen: it is broken before its parenthesis, not wrapped."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        held = held_from(monkeypatch, workers)
        await stopped(pilot, held, sweep_in_rounds(), workers)
        screen = await open_compare(pilot)
        rows = dict(zip(screen.all_names, table_rows(screen)))
        ratio = screen.columns().index("ratio")
        notes = str(screen.query_one("#compare-notes").render()).splitlines()
        assert screen.query_one("#compare-notes").region.height == len(notes), notes   # none wrapped
        assert all(len(line) <= 78 for line in notes), notes
        to = next(line for line in notes if line.startswith("ratios: ")).split(", each")[0]
        bases = {int(b) for b in to.split("to box ")[1].split(" (")[0].split(", ")}
        for name, cells in rows.items():
            if cells[ratio] == "1.00x":
                assert int(cells[0]) in bases, (name, cells, notes)
        if workers == 4:
            assert rows["#1 bridge-torchscript-1"][ratio] == "alone", rows
            # numbered among the variants that made a call (the eleventh walk 3b: 6 and 3 before)
            assert notes == ["ratios: of the medians, to box 3 (fewer than two rounds in common)",
                             "alone: box 1, the only variant measured at its size, has no ratio"], notes
        else:
            assert not any(cells[ratio] == "alone" for cells in rows.values()), rows
            assert notes == ["ratios: of the medians, to box 1, 2, each at its size",
                             "(fewer than two rounds in common)"], notes


# -- 2c: every series of the sweep's key seen, or named under the line that covers it ---------------

def line_colors(plot) -> set[int]:
    """The colours (ANSI numbers) of the plot's line cells as drawn (plotext's half blocks;
    the percentiles' dots are `.`)."""
    seen = set()
    for line in plot.render().split("\n"):
        for span in line.spans:
            style = Style.parse(span.style) if isinstance(span.style, str) else span.style
            if style.color is not None and set(line.plain[span.start:span.end]) & set("▄▀▞▚▖▗▘▝▌▐█▙▛▜▟"):
                seen.add(style.color.number)
    return seen


@pytest.mark.parametrize("runs", [1, 2])
async def test_every_sweep_series_in_the_key_is_drawn_or_named_under_the_line_over_it(runs):
    """The walk's sweep plot at 80x24: bridge-torchscript (40.1 → 37.0) and bridge-python
    (37.6 → 36.8) drew one row of ▄, the key naming three series. Two runs of one
    recorded sweep have each series twice, one over the other: the key names the covered
    one under the other; each series not named so has its colour on the plot. The sizes
    under the axis are labelled. (One run in rounds: the line under the table saying what
    its ratios are wrapped at `log`.)"""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(runs):
            app.recording = sweep_in_rounds()
            await run_replay(pilot)
        screen = await open_compare(pilot)
        plot, legend = screen.query_one("#compare-plot"), screen.query_one("#compare-legend")
        await until(pilot, lambda: screen.plotted and legend.items and plot.size.height, "the sweep's plot")
        under = [text for text, _ in legend.items if " (under " in text]
        drawn = line_colors(plot)
        for text, color in legend.items:   # (the key's colour the line's: yellow was drawn bright red)
            assert (Style.parse(color).color.number in drawn) == (text not in under), (text, drawn, legend.items)
        if runs == 2:   # each of #1's under the same series of #2's
            assert under == [f"━ #1 {s} (under #2 {s})" for s in ("direct-torchscript", "bridge-torchscript",
                                                                  "bridge-python")], legend.items
        assert legend.region.height == len(str(legend.render()).splitlines()), legend.items   # none cut
        assert [line.strip() for line in plot.render().plain.splitlines()][-1] == "size"
        if runs == 1:   # one run in rounds: its ratios line, too long for the screen, broken not wrapped
            notes = screen.query_one("#compare-notes")
            assert str(notes.render()).splitlines() == ["ratios: from same-round pairs, to box 1, 2, each at its size",
                                                        "intervals in the log (t)"], str(notes.render())
            assert notes.region.height == 2   # (it wrapped to three: `intervals in the` / `log` / `(t)`)


# -- 3c: not judged, as History says, and the names no shorter for it -------------------------------

async def test_a_training_compare_says_not_judged_as_history_does_and_keeps_its_names():
    """The walk: History said `not judged` for a simplenet-train run of too few steps, and
    its compare rows PASSED. The word is four columns wider than PASSED: the loss gives
    them back (`0.5418` for `5.4182E-01`), so two runs' names stay whole at 80 columns and
    cut between words at 76 (the first mend cut them to `#1 direct-py…`)."""
    from couplescope.frontends.tui.runs_table import verdict_cell
    from test_tui_third_walk_compare import cut_between_words

    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await run_replay(pilot)
        assert [str(verdict_cell(run)) for run in app.runs.values()] == ["not judged"] * 2   # History's
        screen = await open_compare(pilot)
        table = screen.query_one("#compare-table")
        checks = screen.columns().index("checks")
        rows = table_rows(screen)
        assert [cells[checks] for cells in rows] == ["not judged"] * 8, rows
        assert [cells[1] for cells in rows] == screen.all_names, rows               # whole
        assert [cells[screen.columns().index("loss")] for cells in rows] == ["0.5418"] * 8, rows
        await pilot.resize_terminal(76, 24)
        await until(pilot, lambda: any("…" in str(table.get_row(n)[1]) for n in screen.all_names), "names cut")
        shown = [cells[1] for cells in table_rows(screen)]
        for run in ("#1 ", "#2 "):
            mine = [s[len(run):] for s in shown if s.startswith(run)]
            whole = [n[len(run):] for n in screen.all_names if n.startswith(run)]
            assert len(set(mine)) == 4 and all(map(cut_between_words, mine, whole)), shown


# -- 4: a variant left out by an earlier compare says why it starts out left out ---------------------

async def test_a_compare_of_other_runs_says_which_variants_an_earlier_one_left_out():
    """The walk: `#2 direct-torchscript  left out` on the #2+#3 compare, left out in the #2
    compare before, with nothing saying why the row started out so. Opened, compare says
    it in a toast; drawn again on itself (c), it does not repeat it."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        screen = await open_compare(pilot)
        first = screen.all_names[0]
        await pilot.press("space")                                 # left out of #1's compare
        await until(pilot, lambda: first in screen.left_out, "left out")
        assert not any("earlier compare" in str(n.message) for n in app._notifications)
        await pilot.press("escape")
        await run_replay(pilot)                                    # another run; both compared
        screen = await open_compare(pilot)
        assert len({n.split(" ")[0] for n in screen.all_names}) == 2
        said = [str(n.message) for n in app._notifications if "earlier compare" in str(n.message)]
        assert said == [f"left out in an earlier compare: {first} (space on its row puts it back)"], said
        await pilot.press("c")
        await until(pilot, lambda: app.screen is not screen and app.screen.__class__ is screen.__class__, "drawn again")
        await pilot.pause()
        assert len([n for n in app._notifications if "earlier compare" in str(n.message)]) == 1
