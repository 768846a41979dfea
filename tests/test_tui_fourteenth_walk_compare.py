"""What the fourteenth walk-through of the app by a new user found in the compare screen (at
80x24): comparing every run (History, then `c` with none marked) left out a run that
measured nothing without a word; its heading's `not compared:` line says which runs it
left out and why (3).

Runs are recorded runs played back (couplescope.core.replay): no worker process."""

from __future__ import annotations

import threading

import pytest

from couplescope.frontends.tui.compare_screen import CompareScreen
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_twelfth_walk_compare import recorded

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


@pytest.fixture
def held_from(monkeypatch) -> dict:
    """From its `held["from"]`-th worker on, a played worker sends nothing until it is
    stopped: a run stopped before its first call (`started` counts the workers)."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    held = {"from": 10 ** 6, "started": 0}

    def events(self):
        held["started"] += 1
        if held["started"] >= held["from"]:
            while not self._stopped:
                threading.Event().wait(0.01)
            return
        yield from play(self)
    monkeypatch.setattr(PlayedWorker, "events", events)
    return held


async def stopped_before_its_first_call(pilot, held: dict) -> None:
    """r, then s once the run's first worker has started (and holds every event)."""
    app = pilot.app
    held["from"] = held["started"] + 1
    await pilot.press("r")
    await until(pilot, lambda: held["started"] >= held["from"], "the held worker started")
    await pilot.press("s")
    await until(pilot, lambda: app.active is None, "the stopped run ended")
    assert not app.runs[len(app.runs)].measured()


async def heading(pilot) -> list[str]:
    """History, c with no run marked: the compare heading's lines."""
    app = pilot.app
    await pilot.press("h")
    await until(pilot, lambda: app.main.query_one("#tabs").active == "history", "History")
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(app), "compare")
    title = app.screen.query_one("#compare-title")
    await until(pilot, lambda: str(title.render()).strip(), "the heading")
    lines = str(title.render()).splitlines()
    assert all(len(line) <= title.content_size.width for line in lines), lines   # one row each
    assert title.region.height == len(lines), (title.region, lines)
    return lines


async def test_compare_says_it_left_out_a_run_stopped_before_its_first_call(held_from):
    """#1 measured, #2 stopped before its first call: the heading compared `#1 simplenet, #2
    simplenet`, and nothing said why #2 had nothing in the ratios or the plot."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await stopped_before_its_first_call(pilot, held_from)
        lines = await heading(pilot)
        assert lines[0].startswith("compare #1 simplenet: inference calls"), lines
        assert lines[-1] == "not compared: #2 simplenet stopped before its first call", lines
        table = app.screen.query_one("#compare-table")   # its rows still listed (the fifth walk)
        assert [str(table.get_row_at(i)[2]).strip() for i in range(table.row_count)][2:] == ["no calls"] * 2


async def test_the_left_out_line_names_a_run_of_nothing_and_one_of_the_other_task_in_80_columns(held_from):
    """A training run, an inference run, then one stopped before its first call: compare
    opens on the inference calls, and its one `not compared:` line names the training run
    (what tab compares) and the stopped one, with why, within 80 columns."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        app.recording = recorded("preset-train", "simplenet-train")
        await run_replay(pilot)
        app.recording = recorded("two-backends", "simplenet")
        await run_replay(pilot)
        await stopped_before_its_first_call(pilot, held_from)
        lines = await heading(pilot)
        assert lines[0].startswith("compare #2 simplenet: inference calls"), lines
        left = lines[-1]
        assert left.startswith("not compared: #3 ") and "stopped" in left, lines
        assert "#1" in left and left.endswith("tab compares those"), lines


async def test_compare_opens_on_the_task_a_run_measured_not_on_a_stopped_run_s(held_from):
    """An inference run, then a training run stopped before its first step: compare opened
    on the training steps (the latest run's task), a table of nothing, and said the run that
    measured was not compared."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = recorded("preset-train", "simplenet-train")
        await stopped_before_its_first_call(pilot, held_from)
        lines = await heading(pilot)
        assert lines[0].startswith("compare #1 simplenet: inference calls"), lines
        assert lines[-1] == "not compared: #2 simplenet-train stopped before its first step", lines


@pytest.mark.parametrize("count", [1, 3, 12])
def test_the_left_out_line_fits_78_columns_with_many_runs_of_nothing_and_of_the_other_task(count):
    """Runs stopped before their first call (the catalogue's longest title, two digits of run
    number) beside three runs of the other task: lines of at most the 78 columns compare
    gives them at 80 (one, or where both do not fit one, a line each: one cut across two
    rows was the eleventh walk's), naming every run or saying how many made nothing, and
    what tab does."""
    from types import SimpleNamespace

    from couplescope.frontends.tui.compare_table import title_lines

    def run(i, status="stopped"):
        return SimpleNamespace(id=i, title="deep-linear-cudagraph", name=f"#{i} deep-linear-cudagraph",
                               status=status, unit=lambda: "call", first_call=lambda: "its first call")

    measured = [run(40, "finished")]
    empty = [run(10 + i) for i in range(count)]
    others = [run(i, "finished") for i in (1, 2, 3)]
    lines = title_lines(measured + empty, "infer", others, 78, empty=empty)
    assert all(len(line) <= 78 for line in lines), lines
    assert lines[0].startswith("compare #40 deep-linear-cudagraph: "), lines
    left = [line for line in lines if line.startswith("not compared: ")]
    assert 1 <= len(left) <= 2 and lines[-len(left):] == left, lines
    assert any(line.endswith("tab compares those") and all(f"#{i}" in line for i in (1, 2, 3)) for line in left), lines
    said = " ".join(left)
    assert all(f"#{r.id}" in said for r in empty) or f"{count} runs made no call" in said, lines
