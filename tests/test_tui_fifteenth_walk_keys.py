"""What the fifteenth walk-through of the app by a new user found (at 80x24 in tmux, on a
loaded 2-core machine): `s` on the compare screen stopped the run and said nothing there
(K1); `e` during a stop said the run was still running and offered `s`, refused then (K2);
`--tui` dropped `--host native,python` (M4); and smaller words (M8).

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures); a worker or a stop that takes its time is held by a test gate."""

from __future__ import annotations

import threading

import pytest

from test_tui_first_use import text
from test_tui_keys import toasts
from test_tui_replay import replay_app, until
from test_tui_walkthrough import held_from

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def status(app) -> str:
    return text(app, "#status")


async def slow_stop_begun(pilot, app, release: threading.Event) -> None:
    """r, its first worker held, then s with the stop held till `release`: the run stopping."""
    session = app.active.session
    stop = session.stop

    def slow_stop() -> None:                   # a worker that takes its time to end
        release.wait(300)                      # (bounds a failure only)
        stop()
    session.stop = slow_stop
    await pilot.press("s")
    await until(pilot, lambda: app.active is not None and app.active.stopping, "the stop begun")


# -- K2: e during a stop says it is still stopping, as r and s do -----------------------------------

async def test_e_during_a_stop_says_the_run_is_still_stopping_not_running_and_offers_no_s(monkeypatch):
    """`s e` during a run: `e` said `#1 ... is still running: e exports it once it ends (s
    stops it)`, while `s` was refused then. It says the run is still stopping, as `r` does."""
    held = held_from(monkeypatch, 1)
    app = replay_app("two-backends")
    release = threading.Event()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: len(held) == 1, "the first worker started")
        try:
            await slow_stop_begun(pilot, app, release)
            await pilot.press("e")
            await until(pilot, lambda: any("export" in t for t in toasts(app)), toasts(app))
            said = [t for t in toasts(app) if "export" in t]
            assert said and all("still stopping" in t and "running" not in t and "s stops" not in t
                                for t in said), said
        finally:
            release.set()
        await until(pilot, lambda: app.active is None, "stopped")


# -- K1: s on the compare screen says the stop, and compare shows it stopped ------------------------

@pytest.fixture
def held_after_first_calls(monkeypatch) -> dict:
    """A played worker sends its events up to and with its first timed calls, then holds
    until stopped: a variant running, with calls to compare."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    held = {"calls": 0}

    def events(self):
        seen = 0
        for ev in play(self):
            yield ev
            seen += ev.get("event") == "iteration"
            if seen == 4:   # (its warm-up call and three timed)
                held["calls"] += 1
                while not self._stopped:
                    threading.Event().wait(0.01)
                return
    monkeypatch.setattr(PlayedWorker, "events", events)
    return held


async def test_s_on_compare_says_it_stops_the_run_and_compare_then_reads_stopped(held_after_first_calls):
    """`s` on compare stopped the run with no word there (the top line is under compare's
    title), and the table kept saying `running` until `c`. A toast says the run is being
    stopped; once it has stopped, compare is drawn again: no row says running."""
    from couplescope.frontends.tui.compare_screen import CompareScreen
    from test_tui_replay import compare_shown

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: held_after_first_calls["calls"] == 1 and app.active.measured(), "first calls")
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "compare")

        def cells() -> str:
            screen = app.screen
            if not isinstance(screen, CompareScreen) or not screen.filled:
                return ""
            rows = screen.query_one("#compare-table")
            return " ".join(str(c) for i in range(rows.row_count) for c in rows.get_row_at(i))
        assert "running" in cells(), cells()
        await pilot.press("s")
        await until(pilot, lambda: any("stopping" in t for t in toasts(app)), toasts(app))
        await until(pilot, lambda: app.active is None, "stopped")
        await until(pilot, lambda: "STOPPED" in cells(), cells())
        assert isinstance(app.screen, CompareScreen) and "running" not in cells(), cells()
        assert any("stopped" in t for t in toasts(app)), toasts(app)


# -- M8: one check is `1 check passed` --------------------------------------------------------------

def test_one_check_passed_is_singular_on_watch_s_status_line(monkeypatch):
    """cgdrag-train's Watch read `bridge running  1 checks passed  round 1`. (A variant of
    one call, its call counts left aside: the status line is the one read.)"""
    from types import SimpleNamespace

    from couplescope.frontends.tui import stats_panel
    from couplescope.frontends.tui.stats_panel import StatsPanel

    monkeypatch.setattr(stats_panel, "call_counts", lambda variant, spec: "")
    figures = dict(median=1e-3, iqr=0.0, min=1e-3, max=1e-3, n=1, noisy=False)
    variant = SimpleNamespace(stats=lambda: figures, calls=SimpleNamespace(count=1), failed_checks=lambda: 0, rank_info={},
                              name="bridge", verdict="running", status="running", learning_not_judged=lambda: False,
                              round_positions=[], training=None)
    words = StatsPanel._words(SimpleNamespace(), variant, None, False)
    assert "1 check passed" in words[0] and "checks" not in words[0], words


# -- M4: --host native,python held by the form, as a preset's two hosts are -------------------------

ARGV = ["--model", "simplenet", "--size", "1,8,64", "--backend", "torchscript,bridge",
        "--host", "native,python", "--iterations", "100"]


async def test_the_form_holds_two_hosts_given_on_the_command_line_and_the_run_line_counts_them():
    """`--tui ... --host native,python`: the host field showed its default, and the Run line
    said 6 variants where the same options headless run 12 (each on both hosts)."""
    from couplescope.core import request
    from couplescope.frontends.cli.parser import build_parser, options_from
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.form import PickForm

    options = options_from(build_parser().parse_args(ARGV))
    headless = len(request.build(options).specs)
    app = CoupleScopeApp(options_from(build_parser().parse_args(ARGV)))
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.main.query_one(PickForm)
        await until(pilot, lambda: "variants" in text(app, "#preview"), text(app, "#preview"))
        assert form.options().hosts == ["native", "python"], form.options().hosts
        assert str(form.query_one("#host").value) == "native,python"
        assert text(app, "#preview").startswith(f"{headless} variants"), (headless, text(app, "#preview"))


# -- M8: after an export, the top line says what r runs once the form describes another run ---------

async def test_after_an_export_a_form_change_says_what_r_runs_or_why_not(tmp_path):
    """The top line kept `#1 ... exported ...; h shows where` through iterations 0, 50 and
    300: it never said what r would run, or that it would not run at 0. It says it, as
    after a run (`r runs ..., as Pick (p) shows`; `r will not run: ...`)."""
    from textual.widgets import Input

    from couplescope.frontends.tui.form import PickForm
    from test_tui_replay import run_replay

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = None                     # r runs the form from now on
        form = app.main.query_one(PickForm)
        app.runs[1].request = form.build()       # as after a run of the form's
        form.query_one("#export", Input).value = str(tmp_path)
        await until(pilot, lambda: form.export_dir() == str(tmp_path), "the export folder typed")
        await pilot.press("w", "e")
        await until(pilot, lambda: "exported" in status(app), status(app))
        iterations = form.query_one("#iterations", Input)
        iterations.value = "7"
        await until(pilot, lambda: "Pick (p) shows" in status(app), "r runs ... as Pick (p) shows")
        assert len(status(app)) <= 78 and "exported" in status(app), status(app)   # one row at 80
        iterations.value = "0"
        await until(pilot, lambda: "r will not run" in status(app), "r will not run")
        assert len(status(app)) <= 78, status(app)
