"""Screen snapshots of the real app (pytest-textual-snapshot).

The runs shown are recorded real runs played back (couplescope.core.replay), so every
number on screen is the recording's and a snapshot compares exactly: layout, labels,
figures, plots. Update with `pytest --snapshot-update` after an intended change, and
look at the new SVGs.
"""

from __future__ import annotations

import time

from test_tui_replay import replay_app, run_replay


async def wait_for(pilot, condition, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)


async def settle(pilot) -> None:
    pilot.app.clear_notifications()
    await pilot.pause(0.3)
    pilot.app._tick(force=True)
    await pilot.pause()


def with_catalogue(name: str):
    app = replay_app(name)
    app._load_catalogue = True   # the form as a user sees it: default sizes, backend reasons
    return app


async def loaded(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.catalogue_ready)
    await settle(pilot)


async def after_a_run(pilot) -> None:
    await loaded(pilot)
    await run_replay(pilot)
    await settle(pilot)


def test_main_screen_before_a_run(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=loaded)


def test_main_screen_before_a_run_small_terminal(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(80, 24), run_before=loaded)


def test_main_screen_after_a_run(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=after_a_run)


def test_compare_view(snap_compare):
    async def before(pilot):
        await after_a_run(pilot)
        await pilot.press("c")
        await settle(pilot)

    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=before)


def test_telemetry_view(snap_compare):
    async def before(pilot):
        await after_a_run(pilot)
        await pilot.press("t")
        await settle(pilot)

    assert snap_compare(with_catalogue("telemetry"), terminal_size=(120, 40), run_before=before)


def test_help_screen(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(80, 24), press=["question_mark"])
