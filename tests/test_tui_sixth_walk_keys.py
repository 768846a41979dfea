"""The keys and footers a sixth walk-through of the app found wrong (issue 30, at 80x24),
mended: each test failed on main before its mend. Driven by Pilot on the real app;
replayed recordings of real runs (tests/fixtures), no worker process, no catalogue."""

from __future__ import annotations

import os
import threading

import pytest
from textual import events
from textual.widgets import Input, Select

from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.backends_list import CheckList
from couplescope.frontends.tui.fields import EndingList
from couplescope.frontends.tui.form import PickForm
from couplescope.frontends.tui.help import help_text
from test_tui_fourth_walk_form import footer_keys, preset_list_opened
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_walkthrough import second_variant_held  # noqa: F401 (a fixture)

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs")

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- 1.2: keys typed with a Tab go to the field the Tab moved to -----------------------------------

#: (the field focused, the keys of one read, the field focused after, the text of the fields after)
AFTER_A_FOCUS_MOVE = [("model", [("tab", "\t"), ("1", "1"), ("2", "2")], "size", {"size": "12"}),
                      ("host", [("shift+tab", None), ("3", "3"), ("4", "4")], "size", {"size": "34"}),
                      ("warmup", [("tab", "\t"), ("5", "5"), ("0", "0")], "iterations",
                       {"warmup": "", "iterations": "50"})]


async def test_keys_typed_with_a_tab_go_to_the_field_it_moved_to():
    """`tmux send-keys Tab 1 2` (one read, as a fast typist or ssh delivers it) moved the
    focus from `model` to `size` but the 1 and 2 went to `model`, which had the focus when
    they were handed on (from a number field, they were typed into the field left): the
    Tab acts only once it has bubbled up to the screen."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for start, keys, then, texts in AFTER_A_FOCUS_MOVE:
            fields = {name: app.main.query_one(f"#{name}", Input) for name in texts}
            for field in fields.values():
                field.value = ""
            app.main.query_one(f"#{start}").focus()
            await until(pilot, lambda: app.focused.id == start, f"{start} focused")
            await pilot.pause()
            for key, character in keys:          # as the driver posts what one read parsed to
                app.post_message(events.Key(key, character))
            await until(pilot, lambda: app.focused.id == then, f"{keys[0][0]} moved the focus")
            await until(pilot, lambda: all(f.value == texts[n] for n, f in fields.items()),   # (main: never)
                        f"the keys after {keys[0][0]} reached {then}")


async def test_keys_typed_with_the_key_that_opens_a_list_move_in_the_open_list():
    """`enter down` in one read: the down went to the closed list, which opened it again,
    and the open list's highlight stayed on its first row."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        host = app.main.query_one("#host", Select)
        host.focus()
        await until(pilot, lambda: app.focused is host, "host focused")
        await pilot.pause()
        for key in ("enter", "down"):
            app.post_message(events.Key(key, None))
        await until(pilot, lambda: isinstance(app.focused, EndingList), "the list open")
        listed = app.focused
        await until(pilot, lambda: listed.highlighted == 1, "the down moved the open list's highlight")  # (main: never)


# -- 1.3: space's word in the footer follows the highlighted row -----------------------------------

async def test_spaces_word_in_the_footer_is_what_it_does_to_the_highlighted_row():
    """Compare said `space leave out` on a row already left out, History `space mark` on a
    run already marked: the next space put the row back, unmarked the run."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "compare")
        table = app.screen.query_one("#compare-table")
        await until(pilot, lambda: table.row_count >= 2 and "space" in footer_keys(app), "its rows, its footer")

        def space_says(words):
            return lambda: "space" in footer_keys(app) and footer_keys(app)["space"].description == words
        await until(pilot, space_says("leave out"), "leave out, on a row in")
        await pilot.press("space")
        await until(pilot, space_says("put back"), "put back, on the row left out")
        await pilot.press("down")
        await until(pilot, space_says("leave out"), "leave out, on the next row")
        await pilot.press("up")
        await until(pilot, space_says("put back"), "put back, back on the row left out")
        await pilot.press("space")
        await until(pilot, space_says("leave out"), "leave out, once it is back")
        await pilot.press("escape", "h")
        runs = app.main.query_one("#runs")
        await until(pilot, lambda: app.focused is runs and runs.row_count == 2, "History, two runs")
        await until(pilot, space_says("mark"), "mark, on a run not marked")
        await pilot.press("space")
        await until(pilot, space_says("unmark"), "unmark, on the marked run")
        await pilot.press("up")                        # (the latest run is highlighted, the last row)
        await until(pilot, space_says("mark"), "mark, on the other run")
        await pilot.press("down", "space")
        await until(pilot, space_says("mark"), "mark, once unmarked")
        assert not any(r.selected for r in app.runs.values())


# -- 1.4: an open list searches with the letter keys, as docs/tui.md and the help say -------------

async def test_an_open_list_searches_with_letters_offers_only_its_escape_and_the_docs_say_so():
    """`r` in an open list moved its highlight (a search), where docs/tui.md said the letter
    keys act wherever the focus is: the docs now say the exception, as the footer does."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await preset_list_opened(pilot)
        await until(pilot, lambda: isinstance(app.focused, EndingList), "the list open")
        listed = app.focused
        names = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        await until(pilot, lambda: set(footer_keys(app)) - {"^p"} == {"esc"}, list(footer_keys(app)))
        await pilot.press("t")                           # (a view's key, elsewhere)
        await until(pilot, lambda: listed.highlighted is not None and "t" in names[listed.highlighted],
                    "the search moved the highlight")
        assert app.focused is listed and not app.runs
    tui = open(os.path.join(DOCS, "tui.md")).read()
    assert "An open list takes the letter keys as a search" in " ".join(tui.split())
    assert "an open list searches with them" in " ".join(help_text(app.view_types).split())


# -- 4: s offered while it can act; the backends heading true to the ticks --------------------------

async def test_s_is_offered_once_per_run_not_during_its_stop(second_variant_held):
    """After `s`, while `stopping #1 ...` was shown, the footer still offered `s stop`."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: len(second_variant_held) == 2, "the second variant's worker started")
        await until(pilot, lambda: "s" in footer_keys(app), "s offered while the run goes")
        session = app.active.session
        release = threading.Event()
        stop = session.stop

        def slow_stop() -> None:                     # a worker that takes its time to end
            release.wait(300)             # (bounds a failure only)
            stop()
        session.stop = slow_stop
        try:
            await pilot.press("s")
            await until(pilot, lambda: app.active is not None and app.active.stopping
                        and "s" not in footer_keys(app), "s no longer offered while it stops")
            assert "r" not in footer_keys(app), "r offered while the run is still stopping"
            await pilot.press("s")                   # pressed anyway: says why, nothing else
            await until(pilot, lambda: any("still stopping" in str(n.message) for n in app._notifications),
                        "s said why")
        finally:
            release.set()
        await until(pilot, lambda: app.active is None and "r" in footer_keys(app), "stopped: r offered")
        assert "s" not in footer_keys(app)


async def test_the_backends_heading_says_what_runs_with_none_ticked_only_while_none_is():
    """`backends (none ticked: the preset's; ...)` stayed over a ticked box."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.main.query_one(PickForm)
        box = form.query_one(CheckList)
        words = form.query_one("#backends-heading")

        def heading_holds(part: str, holds: bool = True):
            return lambda: (part in str(words.render())) == holds
        await until(pilot, heading_holds("none ticked: torchscript"), "no preset, none ticked")
        box.select("torchscript")
        await until(pilot, heading_holds("none ticked", False), "a tick: no word of none ticked")
        form.query_one("#preset", Select).value = "stride512"
        await until(pilot, heading_holds("none ticked: the preset's"), "a preset: its ticks cleared")
        box.select("bridge")
        await until(pilot, heading_holds("none ticked", False), "a tick with a preset")
        assert "runs each of the preset's variants" in str(words.render())
        box.deselect_all()
        await until(pilot, heading_holds("none ticked: the preset's"), "none ticked again")
