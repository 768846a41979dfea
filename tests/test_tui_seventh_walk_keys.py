"""The keys a seventh walk-through of the app found acting out of order (issue 30, at
80x24), mended: each test failed on main before its mend. Driven by Pilot on the real app;
the keys of one terminal read are posted to the app together, as its driver posts what one
read parsed to (no pause between them); every wait is for a state."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input

from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from test_tui_replay import replay_app, run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

PRESET = "simplenet"


def one_read(app, *keys: str) -> None:
    """The keys as one read delivers them: posted to the app at once, none handled yet."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def iterations_focused(pilot, value: str) -> Input:
    app = pilot.app
    field = app.main.query_one("#iterations", Input)
    field.value = value
    field.focus()
    await until(pilot, lambda: app.focused is field, "iterations focused")
    await pilot.pause()
    return field


@pytest.mark.parametrize("value, keys, then", [
    ("20", ("backspace", "backspace", "0", "r"), "0"),    # 1a: the backspaces were lost
    ("", ("0", "r"), "0"),                                # 1a': the preset's 1 000 ran
    ("7", ("backspace", "0", "r"), "0"),                  # 1a'': judged before the keys
])
async def test_r_typed_with_the_keys_before_it_runs_what_they_made(value, keys, then):
    """`BSpace BSpace r`, `3 0 0 r`, `BSpace 2 0 r` in one read: `r` (a key of the app's, a
    priority binding) acted when the app read it, before the keys read with it reached the
    field: it ran the old value (the backspaces then lost), or refused the old value. Here
    the keys make a value `r` refuses, so no run starts once it is mended (on main, `r`
    ran the value from before them)."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field = await iterations_focused(pilot, value)
        one_read(app, *keys)
        await until(pilot, lambda: any(n.startswith("cannot run") for n in app.notes) or app.runs,
                    "r answered")
        assert not app.runs, f"r ran what the field held before {keys}"
        assert "(got 0)" in app.notes[-1], app.notes[-1]
        assert field.value == then


async def test_up_then_e_exports_the_run_the_up_highlighted(tmp_path):
    """1c: History, #2 highlighted, `Up e` in one read: the highlight moved to #1 but `e`
    exported #2 (it acted before the table's RowHighlighted reached the view)."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#export", Input).value = str(tmp_path)
        await run_replay(pilot)
        await run_replay(pilot)
        await pilot.press("h")
        runs = app.main.query_one("#runs")
        await until(pilot, lambda: app.focused is runs and runs.highlighted_id() == 2, "History, #2")
        one_read(app, "up", "e")
        await until(pilot, lambda: any(r.export_path for r in app.runs.values()), "exported")
        assert runs.highlighted_id() == 1
        assert app.runs[1].export_path and not app.runs[2].export_path, "e exported #2, not #1"
