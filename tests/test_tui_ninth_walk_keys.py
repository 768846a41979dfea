"""The keys a ninth walk-through of the app found acting out of order (issue 30, at 80x24),
mended: each test failed on main before its mend. Driven by Pilot on the real app; the keys
of one terminal read are posted to the app together (`one_read`, as its driver posts what
one read parsed to); every wait is for a state."""

from __future__ import annotations

import os
import signal

import pytest
from textual import events
from textual.widgets import Input

from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
from test_tui_replay import replay_app, run_replay, until

PRESET = "simplenet"

#: the fields the walk's keys reach (the run's name and the form's numbers next to it)
FIELDS = ("input_shape", "name", "warmup", "iterations", "threads", "baseline", "profile_max_ops",
          "export", "launcher_args")


def one_read(app, *keys: str) -> None:
    """The keys as one read delivers them: posted to the app at once, none handled yet (a
    space with its character, as the terminal's driver sends it)."""
    for key in keys:
        app.post_message(events.Key(key, " " if key == "space" else key if len(key) == 1 else None))


def state(app) -> tuple:
    """Where the focus is, each field's text and the backends ticked."""
    values = tuple(app.main.query_one(f"#{name}", Input).value for name in FIELDS)
    return getattr(app.focused, "id", None), values, tuple(app.main.query_one("#backends").selected)


async def field_typed(pilot, name: str, typed: str = "", value: str = "") -> Input:
    """The field focused, holding `value` (selected, as on focus), then `typed` one key at a
    time after it, as a user fills a field."""
    app = pilot.app
    field = app.main.query_one(f"#{name}", Input)
    field.value = value
    field.focus()
    await until(pilot, lambda: app.focused is field, f"{name} focused")
    for key in typed:
        await pilot.press(key)
    await until(pilot, lambda: field.value == value + typed if not value else True, f"{typed} typed")
    await pilot.pause()
    return field


async def lands(pilot, keys, expected) -> None:
    """The keys in one read leave the state expected (a failure names what they left)."""
    one_read(pilot.app, *keys)
    try:
        await until(pilot, lambda: state(pilot.app) == expected, "")
    except AssertionError:
        raise AssertionError(f"{keys} left {state(pilot.app)}, not {expected}") from None
    await pilot.pause()
    assert state(pilot.app) == expected, keys


def with_fields(app, focused: str, **values) -> tuple:
    """The state now, with the focus on `focused` and the fields named set to their values."""
    _, now, ticked = state(app)
    return focused, tuple(values.get(name, value) for name, value in zip(FIELDS, now)), ticked


def blank_fields(app) -> None:
    for name in FIELDS:
        app.main.query_one(f"#{name}", Input).value = ""


# -- 1a: the app's letters typed in a burst into a field that takes words -----------------

#: (the field focused, its text typed before, the keys of one read, the text they leave), the walk's own
WORDS = [("name", "", "stream", "stream"),
         ("name", "stream", "xrte", "streamxrte"),
         ("name", "myruns", " test", "myruns test"),
         ("name", "myruns test", " reset", "myruns test reset"),
         ("export", "", "kept", "kept"),
         ("baseline", "", "restart", "restart"),
         ("launcher_args", "", "--bind-to core --report-bindings", "--bind-to core --report-bindings")]


async def test_letters_typed_in_one_read_into_a_words_field_keep_their_order():
    """`s t r e a m` in one read into the name field gave `sramet`, `x r t e` then gave
    `xret`, ` r e s e t` gave ` rstee`: the letters that are app keys (r, e, s, t, w) were
    moved behind the letters read after them (a key held while the keys before it settled
    was put back behind the keys read after it)."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        blank_fields(app)
        for name, before, typed, then in WORDS:
            await field_typed(pilot, name, before)
            keys = ["space" if c == " " else c for c in typed]
            await lands(pilot, keys, with_fields(app, name, **{name: then}))
        assert not app.runs


#: (the field before the one the Tab reaches, the keys after the Tab, that field, its text)
TAB_THEN_WORDS = [("profile_max_ops", "outruns", "export", "outruns"),
                  ("profile_max_ops", "datesx", "export", "datesx"),
                  ("profile_max_ops", "warped", "export", "warped"),
                  ("profile_max_ops", "myruns", "export", "myruns"),
                  ("input_shape", "stream", "name", "stream")]


async def test_tab_then_letters_in_one_read_land_in_order_in_the_next_field():
    """`Tab o u t r u n s` in one read into the export field gave `outunrs`, `Tab w a r p e
    d` gave `apdrwe`, `Tab s t r e a m` into the name field gave `tsamer`."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for before, typed, name, then in TAB_THEN_WORDS:
            blank_fields(app)
            await field_typed(pilot, before)
            await lands(pilot, ["tab", *typed], with_fields(app, name, **{name: then}))
        assert not app.runs


# -- 1b: a BSpace, then a Tab, in one read ----------------------------------------------------

async def test_a_correction_then_tab_in_one_read_stays_in_the_field_it_was_typed_in():
    """Warm-up empty, `4 0 BSpace Tab 8 8` gave warm-up 40 and iterations 8; warm-up 300
    (selected on focus), `BSpace BSpace BSpace Tab 3 0 0` typed the 300 into iterations and
    deleted it there; iterations 86, `BSpace Tab 9` left 86 and deleted the 9 from threads:
    the Tab moved the focus before the BSpace read with it acted, which then acted on the
    field focused when it did."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        blank_fields(app)
        await field_typed(pilot, "warmup")
        await lands(pilot, ["4", "0", "backspace", "tab", "8", "8"],
                    with_fields(app, "iterations", warmup="4", iterations="88"))
        blank_fields(app)
        await field_typed(pilot, "warmup", value="300")
        await lands(pilot, ["backspace", "backspace", "backspace", "tab", "3", "0", "0"],
                    with_fields(app, "iterations", warmup="", iterations="300"))
        blank_fields(app)
        await field_typed(pilot, "iterations", "86")
        await lands(pilot, ["backspace", "tab", "9"], with_fields(app, "threads", iterations="8", threads="9"))
        assert not app.runs


# -- every key in the order typed, whatever the mix: one read against one key at a time -------

#: (the field focused, its text typed before, the keys)
MIXES = [("warmup", "12", ["backspace", "tab", "5", "backspace", "7", "shift+tab", "9", "tab", "tab", "3"]),
         ("name", "ab", ["backspace", "s", "t", "tab", "shift+tab", "r", "e", "backspace", "w"]),
         ("name", "x", ["e", "tab", "space", "tab", "4", "backspace", "6", "shift+tab", "space", "shift+tab", "t"]),
         ("baseline", "", ["w", "a", "t", "c", "h", "backspace", "e", "s", "tab", "tab", "escape"]),
         ("launcher_args", "-", ["-", "r", "e", "p", "backspace", "space", "s", "tab", "shift+tab", "t"])]


@pytest.mark.parametrize("focused,before,keys", MIXES, ids=[" ".join(m[2]) for m in MIXES])
async def test_a_mixed_burst_in_one_read_acts_as_its_keys_sent_one_at_a_time(focused, before, keys):
    """Letters, digits, BSpace, Tab/BTab, space and escape in one read leave what the same
    keys leave sent one at a time (each pressed once the one before has acted)."""
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        blank_fields(app)
        start = state(app)
        await field_typed(pilot, focused, before)
        for key in keys:
            await pilot.press(key)
            await until(pilot, lambda: app._held is None, "the key acted")
        await pilot.pause()
        one_at_a_time = state(app)
        for name, value in zip(FIELDS, start[1]):
            app.main.query_one(f"#{name}", Input).value = value
        backends = app.main.query_one("#backends")
        backends.deselect_all()
        for value in start[2]:
            backends.select(value)
        await field_typed(pilot, focused, before)
        await lands(pilot, keys, one_at_a_time)
        assert not app.runs


# -- 1c: ctrl+c (and SIGTERM, a hang-up) save to the export field's folder ------------------

@pytest.mark.parametrize("ending", ["ctrl+c", "SIGTERM"])
async def test_the_endings_save_to_the_folder_typed_in_the_export_field(ending):
    """With the export field reading `myruns` (which `e` honoured), ctrl+c saved the runs
    not exported to ./couplescope-runs: only a folder given with --export was used."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("p")
        await field_typed(pilot, "export", "myruns")
        if ending == "ctrl+c":
            await pilot.press("ctrl+c")
        else:
            app.end_on_signal(signal.SIGTERM)   # what the loop's SIGTERM handler calls
        await until(pilot, lambda: app._exit, "the app closing")
    path = app.runs[1].export_path
    assert path and os.path.dirname(path) == os.path.abspath("myruns"), (path, app.farewell)
    assert path in app.farewell, app.farewell
    assert not os.path.exists("couplescope-runs")
