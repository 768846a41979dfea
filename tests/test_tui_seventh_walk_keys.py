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
from couplescope.frontends.tui.stats_panel import StatsPanel
from test_tui_replay import compare_shown, replay_app, run_replay, until

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


#: (the iterations field's text, the keys of one read, the text they leave): each value one `r`
#: refuses, so no run starts once it is mended (on main, `r` ran the value from before them)
MENDED_THEN_RUN = [("20", ("backspace", "backspace", "0", "r"), "0"),   # 1a: the backspaces were lost
                   ("", ("0", "r"), "0"),                               # 1a': the preset's 1 000 ran
                   ("7", ("backspace", "0", "r"), "0")]                 # 1a'': judged before the keys


async def test_r_typed_with_the_keys_before_it_runs_what_they_made():
    """`BSpace BSpace r`, `3 0 0 r`, `BSpace 2 0 r` in one read: `r` (a key of the app's, a
    priority binding) acted when the app read it, before the keys read with it reached the
    field: it ran the old value (the backspaces then lost), or refused the old value."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for value, keys, then in MENDED_THEN_RUN:
            field = await iterations_focused(pilot, value)
            noted = len(app.notes)
            one_read(app, *keys)
            await until(pilot, lambda: any(n.startswith("cannot run") for n in app.notes[noted:]) or app.runs,
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


@pytest.fixture
def start_held_till_stopped(monkeypatch):
    """The run's session starts its first worker only once a stop was asked for: `s`
    arriving while the run starts, as `r s` in one read has it (a stop 0.3 s later came
    while a worker ran, and was a stop)."""
    from couplescope.core.session import Session

    run = Session.run

    def held(self):
        assert self._stop.wait(timeout=60), "no stop came"
        return run(self)
    monkeypatch.setattr(Session, "run", held)


async def test_a_stop_that_comes_while_the_run_starts_is_a_stop_everywhere(start_held_till_stopped):
    """1e: `r s` in one read: the run ended as `finished: e exports, c compares`, Watch said
    `failed before any variant reported: the log (t) says why` (the log said nothing), and
    History's verdict was `-`."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        one_read(app, "r", "s")
        await until(pilot, lambda: app.runs and app.active is None, "the run ended")
        record = app.runs[1]
        assert record.status == "stopped", record.status
        status = str(app.main.query_one("#status").render())
        # (in one line at 80 columns: the eighth walk; Watch says "before its first call")
        assert "stopped by you (s): nothing measured" in status, status
        panel = app.main.query_one(StatsPanel)._waiting
        assert "failed" not in panel and "stopped by you (s)" in panel, panel
        await pilot.press("h")
        runs = app.main.query_one("#runs")
        await until(pilot, lambda: app.focused is runs and runs.row_count == 1, "History")
        row = [str(c).strip() for c in runs.get_row("1")]
        assert row[1:3] == ["0 of 2", "STOPPED"], row


# -- 1b, 1d: escape and a letter in one read reach the app as alt+letter ---------------------------

async def test_escape_then_a_letter_in_one_read_acts_as_escape_then_the_letter():
    """`tmux send-keys Escape r` from the name field typed `r` into it (`myr`, no run), and
    `Escape t` on the compare screen did nothing: the terminal's ESC r is alt+r to Textual
    (the bytes a terminal sends for alt+r), which no part of the app binds."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        name = app.main.query_one("#name", Input)
        name.value = "my"
        name.focus()
        await until(pilot, lambda: app.focused is name, "the name field focused")
        await pilot.pause()
        app.post_message(events.Key("alt+r", "r"))          # ESC r, as Textual's parser reads it
        await until(pilot, lambda: app.runs or name.value != "my", "alt+r acted")   # (main: myr)
        assert name.value == "my" and app.focused is not name
        await until(pilot, lambda: app.active is None and app.runs[1].measured(), "the run ran")
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "compare")
        app.post_message(events.Key("alt+t", "t"))
        await until(pilot, lambda: app.screen is app.main and app.main.query_one("#tabs").active == "telemetry",
                    "escape closed the compare and t showed Telemetry")   # (main: the compare stayed)


# -- the eighth walk-through: a view's key, then keys, in one read ----------------------------

async def test_a_view_key_then_keys_in_one_read_go_where_the_view_puts_the_focus():
    """`p Tab 9` from History (Pick's focus last on iterations, 300): the Tab was lost and
    the 9 replaced the iterations' 300 (the view's key moved the focus from a callback the
    Tab overtook); `h space` moved to History's highlighted run but never marked it."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("p")
        field = await iterations_focused(pilot, "300")
        await pilot.press("h")
        runs = app.main.query_one("#runs")
        await until(pilot, lambda: app.focused is runs, "History")
        one_read(app, "p", "tab", "9")
        await until(pilot, lambda: app.focused is not runs and app.focused is not field
                    and getattr(app.focused, "value", "") == "9", "9 in the field after iterations")
        assert field.value == "300"
        one_read(app, "h", "space")
        record = app.runs[1]
        await until(pilot, lambda: record.selected, "h space marked the highlighted run")
