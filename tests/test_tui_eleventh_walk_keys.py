"""What an eleventh walk-through of the app by a new user found (issue 30, at 80x24): `Enter`
and a letter in one read in an open list. The letter went to the list's search before the
Enter's pick had landed, so the list picked the item the letter searched to, and the letter's
own action was lost (`Down Enter t` on the preset list picked `toy-resnet` and stayed on
Pick; `Enter r` picked `real-ftorch`). The real app driven by Pilot, the keys posted to it
together as one terminal read delivers them."""

from __future__ import annotations

import pytest
from test_tui_fourth_walk_form import preset_list_opened
from test_tui_keys import active
from test_tui_ninth_walk_keys import one_read
from test_tui_replay import until

from couplescope.frontends.tui.app import CoupleScopeApp

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def test_enter_then_a_view_letter_in_one_read_picks_the_highlighted_item_then_shows_the_view():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field, opened = await preset_list_opened(pilot)
        await until(pilot, lambda: opened.display and opened.highlighted is not None, "the list open")
        await pilot.press("down")
        await until(pilot, lambda: opened.highlighted is not None, "a highlighted item")
        wanted = opened.get_option_at_index(opened.highlighted).prompt
        one_read(app, "enter", "t")
        await until(pilot, lambda: active(app) == "telemetry", "t shows Telemetry")
        assert str(field.selection if hasattr(field, "selection") else field.value) in str(wanted), (field.value, wanted)
