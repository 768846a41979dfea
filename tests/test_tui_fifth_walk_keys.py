"""The keys a fifth walk-through of the app found doing nothing, acting on the wrong thing or
acting unseen (issue 30, at 80x24), mended: each test failed on main before its mend.
Replayed recordings of real runs (tests/fixtures), driven by Pilot; no worker process."""

from __future__ import annotations

import pytest
from textual import events

from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.backends_list import CheckList
from test_tui_fourth_walk_form import footer_keys
from test_tui_replay import replay_app, run_replay, until
from test_tui_walkthrough import second_variant_held  # noqa: F401 (a fixture)
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- K1, S6: the backends list: a space acts where it was typed; the list stops at its ends --------

#: (the row highlighted, the rows ticked before, the keys of one read, the rows ticked after, the row highlighted after)
TYPED_TOGETHER = [(1, set(), [("space", " "), ("down", None)], {"bridge"}, 2),
                  (1, {"bridge"}, [("space", " "), ("up", None)], set(), 0),
                  (0, set(), [("space", " "), ("down", None), ("space", " ")], {"torchscript", "bridge"}, 1)]


async def test_a_space_typed_with_an_arrow_ticks_the_row_it_was_typed_on_and_the_list_stops_at_its_ends():
    """A terminal read of "space, down" posts both keys at once. SelectionList toggles on a
    message its space posts, handled after the down had moved the highlight: the space
    ticked the next row (`Space Down Space` ticked nothing)."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.main.query_one(CheckList)
        box.focus()
        await until(pilot, lambda: app.focused is box and box.highlighted is not None, "the list focused")
        names = [box.get_option_at_index(i).value for i in range(box.option_count)]
        assert names[:3] == ["torchscript", "bridge", "aoti"], names
        for row, before, keys, after, then in TYPED_TOGETHER:
            box.deselect_all()
            for name in before:
                box.select(name)
            box.highlighted = row
            await pilot.pause()
            for key, character in keys:          # as the driver posts what one read parsed to
                app.post_message(events.Key(key, character))
            await until(pilot, lambda: box.highlighted == then, "the arrow acted")
            await pilot.pause()
            assert set(box.selected) == after, (keys, box.selected)
        last = max(i for i in range(box.option_count) if not box.get_option_at_index(i).disabled)
        seen: list[int] = []

        def moved(row) -> None:
            seen.append(row)
        box.watch(box, "highlighted", moved, init=False)
        for start, keys, then in ((0, ("up", "down"), 1), (last, ("down", "up"), last - 1)):
            box.highlighted = start
            await until(pilot, lambda: box.highlighted == start, "highlighted")
            await pilot.pause()
            seen.clear()
            await pilot.press(*keys)
            await until(pilot, lambda: box.highlighted == then or len(seen) >= 2, "the keys acted")
            assert seen == [then], f"{keys[0]} on row {start} went round: {seen}"


# -- K4: the help screen owns the keys -------------------------------------------------------------

async def test_the_help_screen_lists_its_own_keys_and_the_apps_close_it_before_they_act():
    """The footer under the help offered the screen's keys beneath it, and `r` put its toast
    over the help text."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for closing in ("escape", "q", "question_mark"):
            await pilot.press("question_mark")
            await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
            await until(pilot, lambda: "esc/q" in footer_keys(app), list(footer_keys(app)))
            assert set(footer_keys(app)) == {"↑↓ PgUp PgDn", "esc/q"}, list(footer_keys(app))
            await pilot.press(closing)
            await until(pilot, lambda: type(app.screen).__name__ != "HelpScreen", f"{closing} closes it")
        assert app.is_running, "q in the help quit the app"
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
        await pilot.press("r")                       # nothing to run: the refusal, on the views
        await until(pilot, lambda: any("cannot run" in str(n.message) for n in app._notifications), "r acted")
        assert type(app.screen).__name__ != "HelpScreen", "r's toast went over the help text"


# -- S5: an open list's escape in the footer's words -----------------------------------------------

async def test_an_open_lists_footer_entry_is_lower_case():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#preset").focus()
        await pilot.press("enter")
        await until(pilot, lambda: type(app.focused).__name__ == "EndingList", "the list open")
        await until(pilot, lambda: "esc" in footer_keys(app), list(footer_keys(app)))
        entry = footer_keys(app)["esc"].description
        assert entry == entry.lower(), entry
