"""What the fourteenth walk-through of the app by a new user found (at 80x24 in tmux, on a
loaded 2-core machine): `c` on History showed nothing for seconds before compare came (1);
a second `s` while a stop went on said nothing (2); Watch said `starting
simplenet-torchscript-2` while the top line said the run was stopping (3); after a preset
was picked over the last run's, the top line still said `r runs again` (4).

The app is the real one driven by Pilot at 80x24 over recorded real runs played back
(tests/fixtures); a worker or a stop that takes its time is held by a test gate."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import Input, Select

from couplescope.core.session import Session
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.form import PickForm
from test_tui_first_use import text
from test_tui_keys import toasts
from test_tui_ninth_walk_keys import one_read
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_walkthrough import held_from, runs_of

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def status(app) -> str:
    return text(app, "#status")


# -- 1: c from the views says comparing at once, before compare is built ----------------------------

async def test_c_from_history_says_comparing_before_it_builds_compare_and_not_after(monkeypatch):
    """On the busy machine `c` on History showed nothing for seconds, then compare. The top
    line says `comparing #1, #2 ...` before the compare screen is built (seen by its
    building), and back from compare it says what it said before `c`."""
    seen = []
    build = CompareScreen.__init__

    def watched(self, *args, **kwargs):
        seen.append(status(app))
        build(self, *args, **kwargs)
    monkeypatch.setattr(CompareScreen, "__init__", watched)
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "two-backends", "training")
        await pilot.press("h")
        await until(pilot, lambda: app.main.query_one("#tabs").active == "history", "History")
        before = status(app)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), "compare")
        assert seen == ["comparing #1, #2 ..."], seen
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, "back from compare")
        assert status(app) == before, status(app)


async def test_keys_read_with_c_go_to_compare_once_it_shows():
    """`c` says so on the top line first and builds compare after: a key read with it (`c
    escape` in one read) still goes to compare (it closes it), not to the view under it."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await until(pilot, lambda: app.main.query_one("#tabs").active == "history", "History")
        opened = []
        push = app.push_screen

        def pushed(screen, *args, **kwargs):
            opened.append(type(screen).__name__)
            return push(screen, *args, **kwargs)
        app.push_screen = pushed
        one_read(app, "c", "escape")
        await until(pilot, lambda: opened and app.screen is app.main, "compare opened, then closed")
        assert opened == ["CompareScreen"], opened
        assert app.focused is app.main.query_one("#runs"), app.focused   # (escape on History: the tab bar)


# -- 2: a second s says the stop is under way, and the top line keeps saying it ----------------------

async def test_a_second_s_says_the_run_is_still_stopping_while_its_workers_end(monkeypatch):
    """A run in rounds (six variants) stopped while its third worker starts: its workers end
    one after the other (held here). `s` again says `still stopping`, as `r` does, and the
    top line keeps saying it when the next worker ends (that end's `stopping ...: 2 of 6
    stopped` took it off at once, the answer never seen)."""
    held = held_from(monkeypatch, 3)
    gates = [threading.Event(), threading.Event()]
    closed: list[str] = []
    close = Session._close

    def one_at_a_time(self, spec, proc, ended):   # the waiting workers end slowly, in turn
        closed.append(spec.label)
        if 2 <= len(closed) <= 3:
            gates[len(closed) - 2].wait(300)     # (bounds a failure only)
        close(self, spec, proc, ended)
    monkeypatch.setattr(Session, "_close", one_at_a_time)
    app = replay_app("sweep-rounds")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("r")
            await until(pilot, lambda: len(held) == 3, "the third worker started")
            await pilot.press("s")
            await until(pilot, lambda: "1 of " in status(app), status(app))   # the held worker ended
            await pilot.press("s")
            await until(pilot, lambda: any("stopping" in t for t in toasts(app)), toasts(app))
            assert any("still stopping" in t for t in toasts(app)), toasts(app)
            assert "still stopping" in status(app), status(app)
            gates[0].set()                                   # the next worker ends
            record = app.active
            await until(pilot, lambda: sum(v.status != "running" for v in record.builder.variants.values()) == 2,
                        "the second worker's end arrived")
            await pilot.pause()
            assert app.active is record and "still stopping" in status(app), status(app)
            gates[1].set()
            await until(pilot, lambda: app.active is None, "stopped")
            assert "stopped" in status(app) and "still stopping" not in status(app), status(app)
    finally:
        for gate in gates:
            gate.set()


# -- 3: Watch says the run is stopping, not that a variant starts ------------------------------------

async def test_watch_says_the_run_is_stopping_where_it_said_a_variant_was_starting(monkeypatch):
    """Stopped before any variant reported (its worker still starting), Watch said `starting
    simplenet-torchscript-2 (worker, model)` beside the top line's `stopping`: the variants
    not started will not start. It says the run is stopping, and so does its plot."""
    held = held_from(monkeypatch, 1)
    app = replay_app("two-backends")
    release = threading.Event()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: len(held) == 1, "the first worker started")
        await until(pilot, lambda: "starting" in text(app, "#stats"), text(app, "#stats"))
        session = app.active.session
        stop = session.stop

        def slow_stop() -> None:                   # a worker that takes its time to end
            release.wait(300)                      # (bounds a failure only)
            stop()
        session.stop = slow_stop
        try:
            await pilot.press("s")
            await until(pilot, lambda: status(app).startswith("stopping #1"), status(app))
            await pilot.pause()
            stats = " ".join(text(app, "#stats").split())
            assert "starting" not in stats and stats.startswith("stopping #1 simplenet"), stats
            assert len(stats) <= 78, stats                # one line at 80 columns
            plot = app.main.query_one("#plot")
            assert plot.empty == "run #1 stopping", plot.empty
        finally:
            release.set()
        await until(pilot, lambda: app.active is None, "stopped")
        assert "before its first call: nothing measured" in text(app, "#stats"), text(app, "#stats")


# -- 4: the top line says what r runs once the form describes another run ---------------------------

async def test_the_top_line_says_what_r_runs_once_the_form_no_longer_describes_the_last_run(tmp_path):
    """After a run, another preset picked: the top line kept `r runs again`, while r ran the
    preset (the footer's `r run`). It says what r runs, in one row at 80 columns; a change
    that leaves the run as it was (the export folder: where e writes) keeps `r runs again`."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = None                     # r runs the form from now on
        form = app.main.query_one(PickForm)
        app.runs[1].request = form.build()       # as after a run of the form's
        form.query_one("#export", Input).value = str(tmp_path)
        await until(pilot, lambda: form.export_dir() == str(tmp_path), "the export folder typed")
        await pilot.press("w")
        await until(pilot, lambda: "r runs again" in status(app), status(app))
        form.query_one("#preset", Select).value = "cgdrag"
        await until(pilot, lambda: "give way to the preset's" in status(app) or "gives way" in status(app),
                    status(app))
        await pilot.press("h")                   # (a key takes the form's note off)
        await until(pilot, lambda: "gives way" not in status(app), status(app))
        assert status(app) == "#1 simplenet finished: e exports, c compares, r runs cgdrag, as Pick (p) shows", \
            status(app)


# -- the helper's find: srun put on PATH while the app is open ------------------------------------

async def test_srun_appearing_while_the_app_is_open_changes_no_field_and_r_still_reads_the_form(monkeypatch):
    """slurm-client was installed while an app was open: `r` then failed with `No nodes match
    '#nodes'` (the form was built without the --nodes field, and reading it asked for srun
    again). The form reads the fields it built; a Slurm appearing later is for the next app.
    Whether srun is on PATH is what slurm.present() reads: here it answers as before and
    after the install."""
    from couplescope.backends.mpi import slurm

    installed = []
    monkeypatch.setattr(slurm, "present", lambda: bool(installed))
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one(PickForm)
        assert not form.query("#nodes")
        installed.append("srun")   # slurm-client installed now
        assert "nodes" not in form.options().overrides   # what r reads
        form.query_one("#preset", Select).value = "simplenet"   # the preset's fields shown again
        await until(pilot, lambda: "simplenet" in text(app, "#preview"), "the Run line for the preset")
        assert "nodes" not in form.options().overrides
        await pilot.press("r")
        await until(pilot, lambda: len(app.runs) == 1, "the run started")
