"""What the fourteenth walk-through of the app by a new user found in the Watch view (at
80x24, on a loaded two-core machine), each on the real app driven by Pilot: the statistics
break a line only where its words do not fit (4).

Runs are recorded or synthetic ones played back (couplescope.core.replay, synthetic): no
worker process."""

from __future__ import annotations

import pytest

from couplescope.core import replay, synthetic
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.protocol.spec import RunSpec
from test_tui_first_use import text
from test_tui_replay import run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def spec(**given) -> RunSpec:
    given = {"model": "simplenet", "warmup": 1, "iterations": 3, "profile_iterations": 0, **given}
    return RunSpec(**given)


def played(made: RunSpec) -> replay.Recording:
    return replay.Recording(synthetic.events_for(made), "simplenet")


# -- 4. the statistics break a line only where it does not fit ------------------------------------

@pytest.mark.parametrize("width", [80, 60])
async def test_the_statistics_keep_n_beside_the_figures_where_they_fit(width):
    """`median 4.5 µs  IQR 190 ns  min 4.3 µs  max 6.14 ms` (50 columns) then `n=3 000
    timed` on a row of its own at 80 columns, where the two took 65: the break was decided
    for the widest figures a run could have (`999.9 µs` four times and `noisy`), not for
    the words shown. At 60 columns they do not fit, and break."""
    app = CoupleScopeApp(load_catalogue=False, recording=played(spec(iterations=3000)))
    async with app.run_test(size=(width, 24)) as pilot:
        await run_replay(pilot)
        await until(pilot, lambda: "n=3 000 timed" in text(app, "#stats"), text(app, "#stats"))
        lines = text(app, "#stats").splitlines()
        room = app.main.query_one("#stats").content_size.width
        at = next(i for i, line in enumerate(lines) if line.startswith("median"))
        figures = lines[at].split("  n=")[0]
        assert all(len(line) <= room for line in lines), (room, lines)
        if len(f"{figures}  n=3 000 timed") <= room:
            assert lines[at] == f"{figures}  n=3 000 timed", (room, lines)
        else:
            assert lines[at] == figures and lines[at + 1] == "n=3 000 timed", (room, lines)
        assert width == 60 or lines[at].endswith("n=3 000 timed"), lines   # the walk's width: it fits


# -- 2. a variant's first calls counted as soon as the app has them -------------------------------

@pytest.fixture
def after_the_warm_up(monkeypatch) -> dict:
    """A played worker sends its events up to its first batch of calls (the warm-up), then
    holds the rest until it is stopped; the Watch view's redraw tick does not come within
    the test (on the walk's loaded machine the count read `0/313 calls` beside a variant
    measuring for seconds)."""
    import threading

    from couplescope.core.replay import PlayedWorker
    from couplescope.frontends.tui.views.watch import WatchView

    monkeypatch.setattr(WatchView, "redraw_seconds", 3600.0)
    play = PlayedWorker.events

    def events(self):
        batches = 0
        for ev in play(self):
            if ev.get("event") == "iterations" and batches == 1:
                while not self._stopped:
                    threading.Event().wait(0.01)
                return
            batches += ev.get("event") == "iterations"
            yield ev
    monkeypatch.setattr(PlayedWorker, "events", events)


async def test_a_variant_s_first_calls_are_counted_once_the_app_has_them(after_the_warm_up):
    """`0/313 calls` stood beside a variant measuring until the view's next redraw (a
    second, two on the loaded machine), though the app had its calls: the first calls of
    the variant shown are drawn at once, the count, the bar, the table and the plot together."""
    from textual.widgets import ProgressBar

    app = CoupleScopeApp(load_catalogue=False, recording=played(spec(warmup=10, iterations=300, profile_iterations=3)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None and any(
            v.calls.count == 10 for v in app.active.builder.variants.values()), "the warm-up's calls in the app")
        await until(pilot, lambda: "10/313 calls" in text(app, "#stats"), text(app, "#stats"))
        bar = app.main.query_one(ProgressBar)
        assert str(bar.query_one("#percentage").render()) == "3%", bar.progress   # 3.2%, rounded down
        assert len(app.main.query_one("#iteration-table").lines) >= 10
        await pilot.press("s")
        await until(pilot, lambda: app.active is None, "the stopped run ended")
