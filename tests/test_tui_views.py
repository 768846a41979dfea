"""Views plug in: a new app view is one module and one registration line.

The module is the walkthrough's own code, taken from docs/architecture.md ("Adding an app
view"), so the page cannot drift from what works; it is registered with one line and
driven through the real app on a recorded run.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from textual.widgets import Static

from couplescope.frontends.tui import views

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "architecture.md")


def walkthrough_module() -> str:
    text = open(DOCS, encoding="utf-8").read()
    section = text.split("### Adding an app view", 1)[1].split("\n### ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return "\n".join(line[3:] if line.startswith("   ") else line for line in code.splitlines())


@pytest.fixture
def app_with_loads_view(tmp_path, monkeypatch):
    """The walkthrough's view registered (one line); an app made then has its tab."""
    (tmp_path / "loads.py").write_text(walkthrough_module())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(views, "REGISTRY", (*views.REGISTRY, "loads"))   # the registration line
    from couplescope.frontends.tui.app import CoupleScopeApp

    yield CoupleScopeApp
    sys.modules.pop("loads", None)


async def test_the_walkthrough_view_gets_its_tab_key_help_and_events(app_with_loads_view):
    from test_tui_replay import replay_app, run_replay
    from couplescope.frontends.tui.help import HelpScreen

    app = replay_app("two-backends")
    app = app_with_loads_view(app.options, load_catalogue=False, recording=app.recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.query_one("#iterations").focus()                 # from a text field, as a user might
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert app.query_one("#tabs").active == "loads"
        lines = str(app.query_one("#load-times", Static).content).splitlines()
        assert [line.split(":")[0] for line in lines] == [
            "#1 simplenet simplenet-torchscript", "#1 simplenet simplenet-bridge-eager"]
        assert all(line.endswith("ms") for line in lines)   # the recorded load times
        await pilot.press("question_mark")
        help_text = app.screen.query_one("Markdown").source
        assert isinstance(app.screen, HelpScreen)
        registered = views.view_classes()
        assert registered[-1].title == "Loads" and len(registered) > 1
        said = " ".join(f"`{v.key}`" for v in registered) + " views: " + ", ".join(v.title for v in registered)
        assert said in help_text
        assert "**Loads**: each variant's model load time" in help_text


def _bound(bindings) -> set[str]:
    return {key.strip() for b in bindings for key in b.key.split(",")}


def test_the_registered_views_keys_are_distinct_and_leave_the_run_keys_alone():
    """A view's key is an app binding with priority, so it works over the screens too: it
    must be none of the app's keys and none of a screen's (the quit screen's y, the compare
    screen's v), which it would take from them."""
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.keys_doc import screens

    classes = views.view_classes()
    keys = [v.key for v in classes]
    taken = _bound(CoupleScopeApp.BINDINGS) | {k for s in screens() for k in _bound(s.BINDINGS)}
    assert len(set(keys)) == len(keys) and not set(keys) & taken, set(keys) & taken
    assert {"y", "v", "n"} <= taken   # the screens' keys are in it
    assert len({v.tab_id() for v in classes}) == len(classes)
    assert all(v.help for v in classes)
