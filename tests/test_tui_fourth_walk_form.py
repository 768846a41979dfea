"""What a fourth walk-through of the app by a new user found (issue 30, at 80x24), each
driven by Pilot on the real app: keys typed together all reach a field, `v` is offered on
the compare screen, the focused field stays in sight, the tables keep their gaps, an open
list looks apart from the form, History's command is written whole, the iterations table
counts calls as the plot does, and the smaller words (digit groups, one-variant compares,
footers that offer only what acts).

Runs are recorded real runs played back (tests/fixtures) or made up by
couplescope.core.synthetic; no worker process, no catalogue (no torch import)."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input

from couplescope.frontends.tui.app import CoupleScopeApp
from test_tui_replay import until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- 1. backspace and a character sent together ----------------------------------------------------

@pytest.mark.parametrize("field, before, keys, after", [
    ("iterations", "123456", [("backspace", "\x7f"), ("7", "7")], "123457"),
    ("name", "abc", [("backspace", "\x7f"), ("x", "x")], "abx"),
    ("iterations", "123", [("left", None), ("9", "9")], "1293"),
])
async def test_keys_that_arrive_together_all_reach_the_field(field, before, keys, after):
    """A terminal sends "\\x7f7" in one read when backspace and 7 are typed together: the
    driver posts both keys at once. Textual runs a field's own bound keys (backspace, the
    arrows) only once the key has bubbled up to the app, so the 7 was typed first and the
    backspace then took it away: both keys lost."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.main.query_one(f"#{field}", Input)
        box.focus()
        await until(pilot, lambda: app.focused is box, "the field focused")
        box.value = before
        box.cursor_position = len(before)        # (the focus selected all the field held)
        values: list[str] = []
        def changed(value: str) -> None:
            values.append(value)
        box.watch(box, "value", changed, init=False)
        for key, character in keys:          # as the driver posts what one read parsed to
            app.post_message(events.Key(key, character))
        changes = sum(key != "left" for key, _ in keys)
        await until(pilot, lambda: len(values) == changes, "the keys acted")
        assert values[-1] == after, values
