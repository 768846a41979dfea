"""What the eighth walk-through of the app by a new user found in the compare screen
(issue 30, /work/eighth-walk.md 3c, 3a, 2c and 4): PASSED beside History's `not judged`,
a stopped sweep's `1.00x` under a line saying every ratio was to box 1, two sweep series
drawn on one row, no `q` in the footer, and a variant left out by an earlier compare
starting out left out without a word.

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from test_tui_replay import replay_app, until
from test_tui_walkthrough import open_compare, runs_of

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
