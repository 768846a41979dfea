"""What the twelfth walk-through of the app by a new user found in the compare screen (issue
30, /work/twelfth-walk.md 2b, 2c, 3c): a name cut to `#1 …torchscript` (its start, the
model, cut away) while the others kept theirs, the table's scroll bar against its last
column (`1 000▄`), and one `no steps` row showing a size beside others that did not.

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures)."""

from __future__ import annotations

import threading

import pytest

from couplescope.frontends.tui.name_cuts import cut_names
from test_tui_eighth_walk_compare import sweep_in_rounds
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_walkthrough import open_compare, runs_of, table_rows

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- 2b: a name is cut only where it does not fit, keeping its start ---------------------------------

def test_the_walk_s_six_run_names_keep_their_start_and_every_name_that_fits_is_whole():
    """Six runs compared, 23 columns for the names: `#1 simplenet-torchscript` (24) read
    `#1 …torchscript`, its start gone while it lacked one column. It keeps its start, cut at
    its end; the names that fit (`#3 bridge-torchscript-1`, 23) are whole."""
    titles = {f"#{i} ": "simplenet" for i in range(1, 7)}
    names = ["#1 simplenet-torchscript", "#3 direct-torchscript-1", "#3 bridge-torchscript-1",
             "#3 bridge-python-2", "#6 bridge-torchscript-2"]
    shown = cut_names(names, 23, titles)
    assert shown == ["#1 simplenet-torchscri…", *names[1:]], shown


def test_a_run_s_names_keep_their_start_where_they_stay_apart_and_fitting_names_stay_whole():
    """A start every name of a run has goes only where keeping it would leave two of its
    names alike; a name that fits its room is never cut (it lost its start with the rest)."""
    shown = cut_names(["#1 simplenet-torchscript", "#1 simplenet-bridge-eager", "#2 direct"], 18,
                      {"#1 ": "simplenet", "#2 ": "simplenet"})
    assert [n[:13] for n in shown[:2]] == ["#1 simplenet-", "#1 simplenet…"], shown
    assert shown[2] == "#2 direct" and len(set(shown)) == 3, shown
    # twelve names of one run alike but for their ends: the shared start goes, for them all
    many = [f"simplenet-{b}-2{h}" for b in ("aoti", "torchscript", "bridge-compiled") for h in ("", "-python-host")]
    cut = cut_names(many, 17)
    assert len(set(cut)) == len(cut) and all(len(n) <= 17 for n in cut), cut


async def test_compare_at_80x24_keeps_each_name_s_start_and_shows_names_that_fit_whole():
    """simplenet's two backends beside the compiled run's six variants at 80x24: the names are
    cut (the compile column takes their room). #1's names read `#1 simplenet-...`, not
    `#1 …torchscript`; every name that fits the column is whole; all are told apart."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "two-backends", "compiled")
        screen = await open_compare(pilot)
        rows = dict(zip(screen.all_names, table_rows(screen)))
        table = screen.query_one("#compare-table")
        room = table.columns["variant"].width - 1
        shown = {name: cells[1] for name, cells in rows.items()}
        assert any("…" in s for s in shown.values()), shown       # the shape cuts names
        for name in ("#1 simplenet-torchscript", "#1 simplenet-bridge-eager"):
            assert shown[name].startswith("#1 simplenet"), shown
        for name, text in shown.items():
            assert text == name or len(name) > room, (name, text, room)
            assert len(text) <= room, (text, room)
        assert len(set(shown.values())) == len(shown), shown


# -- 2c: a blank column between the table and its scroll bar -------------------------------------------

async def test_the_compare_table_leaves_a_blank_column_before_its_scroll_bar():
    """`11.1 µs  1 000▄`: ten rows and more, the scroll bar against the last column. At 80x24,
    with the table's scroll bar drawn, every row leaves the column before the bar blank."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "two-backends", "compiled", "two-backends")
        screen = await open_compare(pilot)
        table = screen.query_one("#compare-table")
        await until(pilot, lambda: table.show_vertical_scrollbar, "the table's scroll bar")
        room = table.scrollable_content_region.width
        widths = sum(column.get_render_width(table) for column in table.columns.values())
        assert widths <= room - 1, (widths, room)
        assert table.region.right <= 80


# -- 3c: every `no steps` row says its size, or none does ----------------------------------------------

@pytest.fixture
def held_at_first_steps(monkeypatch) -> dict:
    """From its `held["from"]`-th worker on, a played worker sends its events up to its first
    timed steps and holds them until stopped (a variant stopped after it started, before a
    step: the walk's `bridge-2  2  no steps`)."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    held = {"from": 10 ** 6, "started": 0}

    def events(self):
        held["started"] += 1
        hold = held["started"] >= held["from"]
        for ev in play(self):
            if hold and ev.get("event") == "iterations":
                while not self._stopped:
                    threading.Event().wait(0.01)
                return
            yield ev
    monkeypatch.setattr(PlayedWorker, "events", events)
    return held


async def test_every_no_steps_row_of_a_stopped_sweep_says_its_size(held_at_first_steps):
    """The simplenet sweep (sizes 1 and 2) stopped at its fourth worker, which had started and
    made no call: its row said its size, the rows of the variants not started did not. Every
    `no calls` row says its size, as the rows that made calls do."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        held_at_first_steps["from"] = 4
        app.recording = sweep_in_rounds()
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None
                    and sum(bool(v.spec) for v in app.active.builder.variants.values()) >= 4,
                    "the fourth worker started")
        await pilot.press("s")
        await until(pilot, lambda: app.active is None, "the stopped run ended")
        screen = await open_compare(pilot)
        size = screen.columns().index("size")
        rows = dict(zip(screen.all_names, table_rows(screen)))
        idle = {name: cells for name, cells in rows.items() if "no calls" in cells}
        assert len(idle) >= 2 and len(idle) < len(rows), rows
        for name, cells in rows.items():
            assert cells[size] == name.rsplit("-", 1)[1], (name, cells)


# -- 2e: a series another covers is named on a line of its own in the sweep's key ----------------------

def test_a_covered_series_is_on_a_line_of_its_own_in_the_sweep_s_key():
    """`━ #3 bridge-torchscript ━ #3 bridge-python (under #5 bridge-torchscript)`: which of
    the two is under #5's line? The covered one has the line to itself."""
    from couplescope.frontends.tui.compare_sweep import key_lines

    items = [("━ #3 direct-torchscript (under #5 direct-torchscript)", "cyan"), ("━ #3 bridge-torchscript", "green"),
             ("━ #3 bridge-python (under #5 bridge-torchscript)", "blue"), ("━ #5 direct-torchscript", "red"),
             ("━ #5 bridge-torchscript", "cyan")]
    lines = [[text for text, _ in line] for line in key_lines(items, 78)]
    assert lines == [[items[0][0]], [items[1][0]], [items[2][0]], [items[3][0], items[4][0]]], lines


async def test_the_six_run_sweep_key_names_each_covered_series_alone_on_its_line():
    """The walk's shape: simplenet's two backends and five runs of the sweep in rounds, median
    against size at 80x24: the key names every covered series, each on a line with no other
    series."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "two-backends")
        for _ in range(5):
            app.recording = sweep_in_rounds()
            await run_replay(pilot)
        screen = await open_compare(pilot)
        key = screen.query_one("#compare-legend")
        await until(pilot, lambda: "(under " in str(key.render()), "a covered series named")
        lines = str(key.render()).splitlines()
        covered = [line for line in lines if "(under " in line]
        assert covered and all(line.count("━") == 1 for line in covered), lines
        assert key.region.height == len(lines), (key.region, lines)   # none wrapped


# -- 1a: tab says at once that it is comparing the other task -----------------------------------------

async def test_tab_says_comparing_the_other_task_before_it_draws_it(monkeypatch):
    """On the busy machine `tab` showed nothing for 7 s, the key looking dead. The heading
    says `comparing #1, #2: training steps ...` before the table is drawn again (seen by the
    draw itself), then the new heading."""
    from couplescope.frontends.tui.compare_screen import CompareScreen

    seen = []
    fill = CompareScreen.fill

    def watched(self):
        seen.append(str(self.query_one("#compare-title").render()))
        fill(self)
    monkeypatch.setattr(CompareScreen, "fill", watched)
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "training", "two-backends")
        screen = await open_compare(pilot)
        drawn = len(seen)
        await pilot.press("tab")
        await until(pilot, lambda: len(seen) > drawn and screen.compared_task == "train"
                    and "compare #1" in str(screen.query_one("#compare-title").render()), "training drawn")
        assert seen[drawn] == "comparing #1, #2: training steps ...", seen[drawn:]


async def test_escape_from_compare_takes_its_export_toast_away_from_history(tmp_path):
    """The thirteenth walk: `e` on compare, then escape to History: the export's toast sat over
    History's path and command (`/tmp/walk13/couplescope-runs/20261127-1▌`) for seconds. The
    toasts said over compare go with it; the top line says the same words."""
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "compare")
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app._notifications, "exported, a toast on compare")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, "back to the views")
        await pilot.pause()
        assert not list(app._notifications), [n.message for n in app._notifications]
        assert "exported to" in str(app.main.query_one("#status").render())   # the top line says it
