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

from textual.widgets import Input

from couplescope.core.request import RunOptions
from couplescope.frontends.tui.app import CoupleScopeApp
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


# -- T3. a path longer than the export field is written whole under it -------------------------------

def screen_joined(app) -> str:
    return "".join(line.strip() for line in on_screen(app).splitlines())


async def test_an_export_path_longer_than_its_field_is_written_whole_under_it():
    """The field showed `ry-name-for-exports/.../that-goes-on-and-on`, its start gone with
    nothing saying so. Longer than the field, the whole folder is written under it; a short
    one fits, and nothing more is written."""
    app = CoupleScopeApp(RunOptions(model="simplenet", export=LONG), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field = app.main.query_one("#export", Input)
        app.main.query_one("#pinned").focus()   # as the walk's: the focus under the field
        await until(pilot, lambda: field.region.height > 0 and field.content_size.width, "the field laid out")
        assert len(LONG) > field.content_size.width
        await until(pilot, lambda: LONG in screen_joined(app), "the whole folder on the screen")
        field.value = "/tmp/walk15"
        await until(pilot, lambda: screen_joined(app).count("/tmp/walk15") == 1, "one /tmp/walk15: the field's")


# -- M1. a sweep's key: `not drawn` on a line of its own ---------------------------------------------

async def test_the_sweep_key_says_not_drawn_on_a_line_of_its_own():
    """`━ #6 myrun-bridge not drawn: 1, 2 (one size in its run; ...)` read as #6's bridge
    not drawn, where boxes 1 and 2 were the ones. The note is a line of its own."""
    from test_tui_replay import compare_shown

    app = replay_app("two-backends")                   # #1: one size
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = replay_app("sweep").recording   # #2: a sweep of sizes 8, 16, 32
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        legend = app.screen.query_one("#compare-legend")
        await until(pilot, lambda: "not drawn" in str(legend.render()), "the sweep's key")
        lines = str(legend.render()).splitlines()
        note = next(line for line in lines if "not drawn" in line)
        assert note.startswith("not drawn: 1, 2"), lines
        assert all("━" not in line for line in lines[lines.index(note):]), lines
        # the walk's key (#4, #5 at one size, #6 a sweep): the last series short enough for
        # the note to fit after it on its line
        walk = [("━ #6 myrun-torchscript (under #6 myrun-bridge)", "cyan"), ("━ #6 myrun-bridge", "magenta"),
                ("not drawn: 1, 2 (one size in its run; v draws every box)", "white")]
        legend.show(walk)
        await until(pilot, lambda: "myrun" in str(legend.render()), "the walk's key")
        lines = str(legend.render()).splitlines()
        assert lines[-2:] == ["━ #6 myrun-bridge", walk[-1][0]], lines


# -- M2. one blank size reads one size, however far the run went -------------------------------------

@pytest.mark.parametrize("ran", [0, 1])
async def test_runs_that_asked_for_the_same_blank_size_read_the_same_size(ran):
    """simplenet-train at 300 steps, run to the end (#1), then stopped with `ran` of its
    variants having loaded the model (#2): History read `size 1` beside `size model's own`
    (none loaded) or `size 1,model's own` (one). Both asked for the model's own size, 1."""
    from test_tui_ninth_walk_words import records
    from test_tui_thirteenth_walk_words import loaded

    first, second = records(*[("--preset", "simplenet-train", "--iterations", "300")] * 2)
    loaded(first)
    if ran:   # one variant loaded its model before the stop
        from couplescope.core import replay
        from test_tui_replay import FIXTURES

        event = next(e for e in replay.read(f"{FIXTURES}/two-backends.jsonl") if e.get("event") == "model_loaded")
        second.builder.on_event({**event, "variant": second.specs[0].label, "size": 1})
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        table = app.main.query_one("#runs")
        for record, status in ((first, "finished"), (second, "stopped")):
            record.status = status
            app.runs[record.id] = record
            table.add_run(record)
        await until(pilot, lambda: "#2 simplenet-train" in on_screen(app), "both rows")
        shown = on_screen(app)
        assert "model's own" not in shown and "size 1," not in shown.replace("size 1, ", ""), shown
