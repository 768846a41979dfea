"""Every documented key works wherever the focus is (docs/tui.md, Keys).

Textual's text fields claim every printable key while focused, which silently disabled
the app's keys (r, q, ?, w ...) once a number had been typed. Here the real app types
into each of its text fields and then presses r, q, ?, w and escape; every other key
from one field of each kind (and every field's claim on every key is checked without
pressing it); a recorded run is played back for the keys that need one (e, c, s).
"""

from __future__ import annotations

import time

import pytest
from textual.widgets import Input, SelectionList, Tabs

from test_tui_replay import compare_shown, replay_app, run_replay, until
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.quit_screen import QuitScreen
from couplescope.frontends.tui.help import HelpScreen

SIZE = (80, 24)


pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py)


def test_the_apps_tests_start_it_without_animations():
    """conftest.py turns them off (a Pilot key press waits for them to end); the setting
    must reach App(), which a variable set after textual was imported did not."""
    assert CoupleScopeApp(load_catalogue=False).animation_level == "none"


def text_fields(app) -> list[str]:
    """Every text field of the form (a field added later is covered too)."""
    ids = [w.id for w in app.query_one("#form").query(Input)]
    assert {"size", "iterations", "warmup", "threads", "profile_iterations"} <= set(ids), ids
    return ids


def word_fields(app) -> list[str]:
    """The fields that take words (a name, a path, a memory limit, launcher arguments):
    letters are text there, and escape leaves them for the keys."""
    return [w.id for w in app.query_one("#form").query(Input) if w.type == "text" and not w.restrict]


def number_fields(app) -> list[str]:
    """The fields that take digits (and commas, semicolons, x): every letter key passes."""
    words = word_fields(app)
    return [f for f in text_fields(app) if f not in words]


async def type_into(pilot, field: str, keep: bool = False) -> None:
    """Focus `field` on the Pick view and type into it, as a user would (a digit; a letter
    and then escape in a field that takes words); `keep` puts the field's value back
    afterwards (not by a key: the focus stays where it is), so the run is the recording's."""
    app = pilot.app
    widget = app.query_one(f"#{field}", Input)
    deadline = time.monotonic() + 60
    while app.focused is not widget:  # (a view switch still under way can take the focus
        assert time.monotonic() < deadline, (field, app.focused)   # to its first field)
        widget.focus()                # the Pick view comes with it
        await pilot.pause()
    before = widget.value
    words = field in word_fields(app)
    typed = "a" if words else "1"
    await pilot.press(typed)
    # it went in (focusing a field may select its text, and then it replaces it)
    await until(pilot, lambda: widget.value == typed or widget.value.count(typed) == before.count(typed) + 1,
                (field, widget.value))
    assert app.focused is widget
    if words:
        await pilot.press("escape")   # letters are text here: escape leaves the field
        await until(pilot, lambda: isinstance(app.focused, Tabs), (field, app.focused))
    if keep:
        widget.value = before


def active(app) -> str:
    """The view shown (its tab)."""
    return app.query_one("#tabs").active


def toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


#: one field of each kind a text field can be: the size list, the input shapes, an integer,
#: a float, words (test_no_number_field_claims_an_app_key covers every field by its kind)
ONE_OF_EACH_KIND = ("size", "input_shape", "iterations", "telemetry_hz", "name")


def app_keys() -> set[str]:
    """The single characters the main screen binds (the run keys, and the views' keys: the
    registry's, bound when an app is made)."""
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.views import view_classes

    return {b.key if len(b.key) == 1 else "?" for b in CoupleScopeApp.BINDINGS
            if len(b.key) == 1 or b.key == "question_mark"} | {v.key for v in view_classes()}


async def test_no_number_field_claims_an_app_key():
    """Every text field, every key the app binds: a number field lets it through to the app,
    a field that takes words keeps letters as text (escape leaves it)."""
    from couplescope.frontends.tui.fields import FieldInput

    app = replay_app("two-backends")
    async with app.run_test(size=SIZE):
        keys = app_keys()
        assert {"r", "s", "e", "c", "q", "?", "p", "w", "t", "h"} <= keys
        words = word_fields(app)
        for field in text_fields(app):
            widget = app.query_one(f"#{field}", Input)
            assert isinstance(widget, FieldInput), field
            claimed = {k for k in keys if widget.check_consume_key(k, k)}
            assert claimed == (keys if field in words else set()), (field, claimed)
            assert widget.check_consume_key("1", "1"), field   # and it takes digits


#: the fields are shared out over PARTS tests, so that two test workers share them
PARTS = 3


def every_text_field() -> list[str]:
    """The form's text fields as its declarations make them (fields.widget_for: an Input for
    what is no flag and has no choices), where the form offers them; the app's own list is
    checked against it (text_fields)."""
    from couplescope.frontends.tui.form import offered
    from couplescope.protocol.options import OPTIONS

    return [o.name for o in OPTIONS if o.kind is not bool and o.choices is None and o.source is None
            and offered(o)]


@pytest.mark.parametrize("part", range(PARTS))
async def test_every_documented_key_works_after_typing_into_every_field(part):
    """After typing into each field: q (asking first once runs that are not exported are
    there; in this app the exit it asks for is recorded, not made, so that one app covers every field; test_q_quits_after_typing_into_a_field ends
    an app for real from one field of each kind), ? and escape, w, escape out of the field,
    and r."""
    app = replay_app("layout-c")
    async with app.run_test(size=SIZE) as pilot:
        assert text_fields(app) == every_text_field()
        quits: list[str] = []
        for n, field in enumerate(text_fields(app)[part::PARTS], 1):
            words = field in word_fields(app)
            await type_into(pilot, field, keep=True)
            app.exit = lambda *a, **k: quits.append(field)   # the real action_quit calls it
            try:
                await pilot.press("q")
                if app.runs:                    # runs not exported: q asks, a second q quits
                    await until(pilot, lambda: isinstance(app.screen, QuitScreen), field)
                    await pilot.press("q")
                    await until(pilot, lambda: app.screen is app.main, field)
            finally:
                del app.exit
            await until(pilot, lambda: quits[-1:] == [field], field)
            if words:                           # escape was pressed: the field is typed again
                await type_into(pilot, field, keep=True)
            focused = app.focused
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), field)
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.main and app.focused is focused, field)
            await pilot.press("w")            # the focus is back where it was
            await until(pilot, lambda: active(app) == "watch", field)
            if not words:                       # (words: type_into pressed escape already)
                await type_into(pilot, field, keep=True)
                await pilot.press("escape")     # leaves the field for the tab bar
                await until(pilot, lambda: isinstance(app.focused, Tabs), (field, app.focused))
                if field in ONE_OF_EACH_KIND:
                    await pilot.press("right")  # where the arrows switch views
                    await until(pilot, lambda: active(app) == "watch", field)
            await type_into(pilot, field, keep=True)
            await run_replay(pilot)                         # presses r
            assert len(app.runs) == n and app.runs[n].status == "finished", (field, app.notes[-1:])
            assert active(app) == "watch", field


#: the keys that act on a run (s, e, c) are pressed after a number field and a field that
#: takes words; every field's claim on them is checked without pressing them
#: (test_no_number_field_claims_an_app_key)
RUN_KEY_FIELDS = ("size", "name")


@pytest.mark.parametrize("field", ONE_OF_EACH_KIND)
async def test_every_key_works_after_typing_into_a_field_of_each_kind(tmp_path, field):
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        for key, tab in (("t", "telemetry"), ("h", "history"), ("p", "pick")):
            await type_into(pilot, field, keep=True)
            await pilot.press(key)
            await until(pilot, lambda: active(app) == tab, (field, key))
        await type_into(pilot, field, keep=True)
        await pilot.press("s")                              # nothing runs: it says so
        await until(pilot, lambda: any(t.startswith("no run is going") for t in toasts(app)), field)
        app.clear_notifications()
        if field in RUN_KEY_FIELDS:
            await type_into(pilot, field, keep=True)
            await run_replay(pilot)
            await type_into(pilot, field, keep=True)
            await pilot.press("e")                          # exports the latest run
            await until(pilot, lambda: app.runs[1].export_path, (field, app.notes[-1:]))
            await type_into(pilot, field, keep=True)
            await pilot.press("c")
            await until(pilot, lambda: compare_shown(app), field)
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.main, field)
            for screen, screen_key in ((CompareScreen, "c"), (HelpScreen, "question_mark")):
                await pilot.press(screen_key)               # a view key from compare or help shows it
                await until(pilot, lambda: isinstance(app.screen, screen), screen_key)
                await pilot.press("h")
                await until(pilot, lambda: app.screen is app.main and active(app) == "history", screen_key)


async def test_the_footer_keeps_the_run_keys_while_a_number_field_has_focus():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        for field in ONE_OF_EACH_KIND[:-1]:
            await type_into(pilot, field)
            shown = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
            # (s while a run goes: the footer offers a key only where it acts)
            assert {"r", "question_mark", "q"} <= shown, (field, shown)   # c and e once a run made a call


async def test_the_footer_is_rebuilt_only_when_the_keys_it_shows_change():
    """Moving between number fields leaves the keys on show as they are: the footer stays
    (Textual's rebuilt itself and laid out the screen on every focus change). Into a field
    that takes words and out again, it shows what the bindings say each time."""
    from textual.widgets._footer import FooterKey

    from couplescope.frontends.tui.footer import SteadyFooter

    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        footer = app.query_one(SteadyFooter)
        rebuilt = []
        recompose = footer.recompose
        footer.recompose = lambda: rebuilt.append(app.focused.id) or recompose()

        def shows(keys):
            return lambda: {k.key for k in footer.query(FooterKey)} == keys

        run_keys = {"r", "question_mark", "q", "ctrl+p"}   # s while a run goes, c and e once one made a call
        numbers = number_fields(app)
        app.query_one(f"#{numbers[0]}", Input).focus()
        await until(pilot, shows(run_keys), "the run keys")
        rebuilt.clear()
        for field in numbers[1:]:
            widget = app.query_one(f"#{field}", Input)
            widget.focus()
            await until(pilot, lambda: app.focused is widget, field)
            await pilot.pause()
        assert rebuilt == [] and shows(run_keys)(), rebuilt
        word = app.query_one(f"#{word_fields(app)[0]}", Input)
        word.focus()   # letters are text there: the footer drops the letter keys, says escape leaves
        await until(pilot, shows({"escape", "ctrl+p"}), "a field that takes words")
        app.query_one(f"#{numbers[0]}", Input).focus()
        await until(pilot, shows(run_keys), "back in a number field")
        assert len(rebuilt) == 2, rebuilt


@pytest.mark.parametrize("field", ONE_OF_EACH_KIND)
async def test_q_quits_after_typing_into_a_field(field):
    """One field of each kind (an app each: q ends it; every field's claim on q is checked
    above, without pressing it). A field that takes words: typed, escape, then q."""
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, field)
        await pilot.press("q")
        await until(pilot, lambda: app._exit, field)


@pytest.mark.parametrize("field", ONE_OF_EACH_KIND)
async def test_ctrl_c_quits_from_inside_a_field(field):
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(f"#{field}", Input).focus()
        await pilot.pause()
        await pilot.press("1", "ctrl+c")                    # without leaving it, whatever it takes
        await until(pilot, lambda: app._exit, field)


async def test_a_field_that_takes_words_keeps_the_letters_until_escape():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        assert {"name", "export"} <= set(word_fields(app))
        for field in word_fields(app):
            widget = app.query_one(f"#{field}", Input)
            widget.focus()
            await pilot.pause()
            await pilot.press("q", "r")                    # text here, not quit and run
            await until(pilot, lambda: widget.value.endswith("qr"), (field, widget.value))
            assert not app.runs and app.is_running, field
            widget.value = ""


async def test_the_first_space_on_the_backends_list_ticks_a_box():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        backends = app.query_one("#backends", SelectionList)
        before = list(backends.selected)
        backends.focus()
        await pilot.pause()
        await pilot.press("space")
        await until(pilot, lambda: backends.selected != before, before)
        await pilot.press("r")                              # and r still runs from the list
        await until(pilot, lambda: len(app.runs) == 1, app.notes[-1:])
