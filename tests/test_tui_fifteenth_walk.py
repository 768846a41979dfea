"""What the fifteenth walk-through of the app by a new user found (at 80x24 in tmux):
History broke a long export path mid-word, `that-goe|s-on-and-on` (T2); the export field
showed the end of a long path with its start cut and nothing saying so (T3); a sweep's key
put `not drawn: 1, 2 (...)` after a series, which then read as the one not drawn (M1);
History gave `size 1` and `size model's own` (or `size 1,model's own`) to runs that asked
for the same blank size, one of them stopped early (M2).

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures); no worker process."""

from __future__ import annotations

import pytest

from test_tui_replay import replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

LONG = "/tmp/walk15/a-very-long-directory-name-for-exports/with-nested-levels/that-goes-on-and-on"


# -- T2. History breaks an export path only between its parts ----------------------------------------

async def test_history_breaks_a_long_export_path_between_its_parts_never_mid_word():
    """The walk's path read `.../that-goe` / `s-on-and-on/...`: a double-click copied half a
    name. Each line of the path, and of the command under it, ends at a `/`."""
    path = f"{LONG}/20261127-190910-simplenet"
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 40)) as pilot:   # (tall: the note whole, 80 columns as the walk's)
        await run_replay(pilot)
        await pilot.press("h")
        app.runs[1].export_path = path
        app.main.query_one("HistoryView").show_export_note(app.runs[1])
        await until(pilot, lambda: "simplenet\n" in on_screen(app).split("was exported to", 1)[-1], "the export note")
        shown = [line.strip() for line in on_screen(app).splitlines()]
        at = next(i for i, line in enumerate(shown) if line.endswith("was exported to")) + 1
        lines = shown[at:shown.index(next(line for line in shown[at:] if line.startswith("open its")))]
        assert "".join(lines) == path, lines
        assert all(line.endswith("/") for line in lines[:-1]), lines
        command = shown[shown.index("couplescope --tensorboard \\") + 1:-1]
        assert "".join(line.rstrip("\\") for line in command) == path, command
        assert all(line.endswith("/\\") for line in command[:-1]), command
