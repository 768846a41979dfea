"""What a twelfth look at the eleventh walk's keys found (issue 30, at 80x24): keys that a
terminal delivers in one read, as its bytes come through the parser Textual's driver reads them
with, and posted to the real app together (as the driver's input thread posts them).

- `Down Enter t` in the model's open list picked cgdrag and showed Telemetry, then Pick again:
  the pick put the focus back on the list's field, and the focus's own messages (Focus, then
  DescendantFocus bubbling to the Pick pane, whose TabPane.Focused sets the tab shown) arrived
  after the t had shown Telemetry. Pilot's earlier test waited for Telemetry and saw it, for
  the moment it lasted.
- `Escape Tab` in one read reached the app as shift+tab (Textual's table reads ESC TAB so),
  `Escape Enter` as enter, `Escape Space` as space: the escape was lost.

And the endings: a stop's words counted the variants whose workers had started only (`2
variants stopped, 3 still ending` in a run of 6), and while ctrl+c stopped the run and saved
before closing, the footer offered `c compare ? help q quit`. Those are played runs (recorded
events, the later workers' words arriving after the stop, as a real worker's do)."""

from __future__ import annotations

import os
import re
import signal

import pytest
from test_tui_fourth_walk_form import footer_keys
from test_tui_fourth_walk_run import stopped_in_round_one, top_lines  # noqa: F401 (a fixture)
from test_tui_keys import active
from test_tui_replay import replay_app, run_replay, until
from textual import events
from textual.drivers import linux_driver
from textual.widgets import Select

from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.fields import EndingList

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def terminal_read(app, data: str) -> list[str]:
    """The bytes of one terminal read through the parser the app's terminal driver reads with
    (its ESCAPE_DELAY's end stood for by the read's end), the keys posted to the app at once,
    none handled yet, as the driver's input thread posts them; the keys' names."""
    parser = linux_driver.XTermParser()
    keys = [*parser.feed(data), *parser.feed("")]
    for key in keys:
        app.post_message(key)
    return [key.key for key in keys]


def queues_quiet(widget) -> bool:
    """Whether the widget and every ancestor have nothing queued: what the keys set going,
    the focus's messages up to the tabs included, has all landed."""
    return not any(node._message_queue.qsize() for node in widget.ancestors_with_self)


async def opened(pilot, field_id: str):
    """The field focused and its list opened with enter: (the field, its list)."""
    app = pilot.app
    field = app.main.query_one(f"#{field_id}", Select)
    field.focus()
    await until(pilot, lambda: app.focused is field, f"the {field_id} field focused")
    await pilot.press("enter")
    shown = field.query_one(EndingList)
    await until(pilot, lambda: app.focused is shown and shown.highlighted is not None, "the list open")
    return field, shown


async def test_down_enter_t_in_one_read_on_the_model_list_picks_the_next_model_and_stays_on_telemetry():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field, shown = await opened(pilot, "model")
        wanted = shown.get_option_at_index(shown.highlighted + 1).prompt
        assert terminal_read(app, "\x1b[B\rt") == ["down", "enter", "t"]
        await until(pilot, lambda: field.value == str(wanted) and app._held is None
                    and not field.expanded and queues_quiet(field), "the pick and the t landed")
        assert active(app) == "telemetry", (active(app), field.value)


#: escape, then a key: the key's bytes after the ESC, and its name
AFTER_ESCAPE = {"tab": "\t", "enter": "\r", "space": " ", "1": "1", "backspace": "\x7f",
                "ctrl+h": "\x08", "r": "r", "down": "\x1b[B", "shift+tab": "\x1b[Z"}


def where(app) -> tuple:
    """The view shown, the focused widget, the size field's text, the runs."""
    focused = app.focused
    return (active(app), getattr(focused, "id", None) or type(focused).__name__,
            app.main.query_one("#size").value, len(app.runs))


async def settled(pilot, *keys_of_a_read: str) -> None:
    """Each read through the terminal's parser, the next once the keys before it (and what
    they set going) have landed."""
    app = pilot.app
    for data in keys_of_a_read:
        terminal_read(app, data)
        await until(pilot, lambda: app._held is None and not app._message_queue.qsize()
                    and queues_quiet(app.focused or app.screen), f"{data!r} landed")


async def test_escape_and_a_key_in_one_read_act_as_escape_then_the_key():
    """Each key after an escape, from the size field: the same where the two came in one read
    as where they came one at a time (one app for all: each starts it anew, 3 s a key)."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        size = app.main.query_one("#size")

        async def from_the_size_field(*reads: str) -> tuple:
            size.value = "12"
            size.focus()
            await until(pilot, lambda: app.focused is size and active(app) == "pick", "in the size field")
            await settled(pilot, *reads)
            return where(app)

        differ = {}
        for key, after in AFTER_ESCAPE.items():
            apart = await from_the_size_field("\x1b", after)
            assert apart[1] != "size", apart                 # escape left the field
            together = await from_the_size_field("\x1b" + after)
            if together != apart:
                differ[key] = (together, apart)
        assert not differ, differ


# -- the endings: every variant counted, a footer that offers what acts ----------------------------

def stop_by(app, how: str) -> None:
    """Stop the run going as `how` does: s, ctrl+c, or SIGTERM (what the loop's handler calls)."""
    if how == "SIGTERM":
        app.end_on_signal(signal.SIGTERM)
    else:
        app.post_message(events.Key(how, None))


COUNTED = re.compile(r"(\d+) (?:of (?:its )?\d+ )?(?:variants? )?(?:stopped|still ending|ending|not started)\b")


@pytest.mark.parametrize("how", ["s", "ctrl+c", "SIGTERM"])
async def test_a_stop_counts_every_variant_of_the_run_those_not_started_too(how, stopped_in_round_one, tmp_path):
    """The training preset's 4 variants, stopped in round one as its second variant's worker
    starts: the two later variants' workers never start, and the words count them."""
    app = replay_app("preset-train")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        record, shown = app.runs[1], top_lines(app)
        stop_by(app, how)
        await until(pilot, lambda: record.stopping, "stopping")
        stopped_in_round_one[0].set()   # direct's last words: interrupted
        await until(pilot, lambda: any("stopped," in line for line in shown), "a variant stopped")
        counted = [line for line in shown if "stopped," in line]
        assert all(sum(map(int, COUNTED.findall(line))) == len(record.specs) == 4 for line in counted), counted
        assert all(len(line) <= 80 for line in counted), counted
        stopped_in_round_one[1].set()
        await until(pilot, lambda: record.done.is_set() or app._exit, "the run ended")


async def test_while_ctrl_c_stops_the_run_and_closes_the_footer_offers_no_key_that_would_not_act(
        stopped_in_round_one, tmp_path):
    app = replay_app("preset-train")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.runs[1].current == "direct", "direct's turn")
        await until(pilot, lambda: "c" in footer_keys(app), "c offered while the run goes")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.runs[1].stopping, "stopping")
        await until(pilot, lambda: not {"c", "?", "q", "e", "s", "r"} & set(footer_keys(app)),
                    f"the footer offering none of r s e c ? q: {sorted(footer_keys(app))}")
        for key in ("c", "question_mark", "q"):
            await pilot.press(key)
        await pilot.pause()
        assert len(app.screen_stack) == 1, app.screen_stack   # no compare, help or quit question
        for gate in stopped_in_round_one:
            gate.set()
        await until(pilot, lambda: app._exit, "the app closing")


def test_the_linux_driver_still_builds_its_parser_by_the_name_the_app_replaces():
    """escape_apart.read_escape_apart gives the Linux driver module's name XTermParser the app's
    parser; that works only while the driver builds its parser by that name, at run time. A
    Textual that builds it otherwise would silently read ESC TAB as shift+tab again: fail here."""
    import inspect

    source = inspect.getsource(linux_driver.LinuxDriver)
    assert re.search(r"\bXTermParser\(", source), "LinuxDriver no longer calls XTermParser(...)"


async def test_a_hang_up_saves_a_run_whose_calls_the_blocked_app_had_not_drawn(tmp_path, monkeypatch):
    """On a hang-up the app's loop may be blocked (its terminal gone) with the run's events
    still queued: the app's own record had no calls, and the hang-up said `measured nothing:
    not saved` of a run whose session and run directory had them (test_endings' hang-up
    without SIGHUP, under load). The run is saved by what its session measured."""
    from couplescope.results.builder import ResultsBuilder

    monkeypatch.chdir(tmp_path)
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        record = app.runs[1]
        assert record.measured() == 2 and record.session.builder is not None
        record.builder = ResultsBuilder(record.title)   # its events queued, not yet drawn
        app._export_unsaved(unfinished=True)
        assert record.export_path and os.path.exists(os.path.join(record.export_path, "results.json")), app.farewell
        assert not any("measured nothing" in line for line in app.farewell), app.farewell
