"""The app as a fifth walk-through (and the fourth's left-overs) found it, mended: each test
failed on main before its mend (replayed recordings of real runs, driven by Pilot)."""

import pytest

from test_tui_fourth_walk_form import footer_keys
from test_tui_replay import replay_app, until
from test_tui_snapshots import on_screen
from test_tui_walkthrough import second_variant_held  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def test_a_stopped_training_runs_unstarted_variants_are_compared_as_training(second_variant_held):
    """The variants a stop left unstarted have no worker's spec: they were put under
    inference, and the compare offered an inference table of variants that made nothing."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: len(second_variant_held) == 2, "the second variant's worker started")
        await pilot.press("s")
        await until(pilot, lambda: app.active is None, "the stopped run ended")
        await pilot.press("c")
        await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", "compare")
        table = app.screen.query_one("#compare-table")
        await until(pilot, lambda: table.row_count >= 1, "the compare's rows")
        await pilot.pause()
        assert "tab" not in footer_keys(app), list(footer_keys(app))   # no inference table to go to
        assert table.row_count == 2, on_screen(app)   # the unstarted direct among the training rows
        assert "no steps" in on_screen(app) and "no calls" not in on_screen(app), on_screen(app)
