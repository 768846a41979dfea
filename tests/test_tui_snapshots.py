"""Screen snapshots of the real app (pytest-textual-snapshot).

The runs are real (worker processes, real timings), so the app is started in redacted
mode: every measured number is drawn as a fixed mask and the time plot's values are
flattened, while everything else (layout, labels, iteration counts, PASSED/FAILED,
progress, legends, axes) is compared exactly. Update with `pytest --snapshot-update`.
"""

from __future__ import annotations

import time

from couplescope.cli import build_parser
from couplescope.tui.app import CoupleScopeApp

RUN = ["--model", "simplenet", "--iterations", "20", "--warmup", "2", "--profile-iterations", "0",
       "--telemetry-hz", "0"]


def make_app(*argv) -> CoupleScopeApp:
    return CoupleScopeApp(build_parser().parse_args(list(argv)), redact=True)


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


async def run_once(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.catalogue_ready)
    count = len(app.runs)
    await pilot.press("r")
    await wait_for(pilot, lambda: len(app.runs) == count + 1 and app.active is None)
    await settle(pilot)


def test_main_screen_before_a_run(snap_compare):
    async def before(pilot):
        await wait_for(pilot, lambda: pilot.app.catalogue_ready)
        await settle(pilot)

    assert snap_compare(make_app(*RUN), terminal_size=(120, 40), run_before=before)


def test_main_screen_before_a_run_small_terminal(snap_compare):
    async def before(pilot):
        await wait_for(pilot, lambda: pilot.app.catalogue_ready)
        await settle(pilot)

    assert snap_compare(make_app(*RUN), terminal_size=(80, 24), run_before=before)


def test_main_screen_after_a_run(snap_compare):
    assert snap_compare(make_app(*RUN), terminal_size=(120, 40), run_before=run_once)


def test_compare_view(snap_compare):
    async def before(pilot):
        await run_once(pilot)
        pilot.app.main.query_one("#backends").select("bridge")
        await run_once(pilot)
        await pilot.press("c")
        await settle(pilot)

    assert snap_compare(make_app(*RUN), terminal_size=(120, 40), run_before=before)


def test_help_screen(snap_compare):
    assert snap_compare(make_app(*RUN), terminal_size=(80, 24), press=["question_mark"])
