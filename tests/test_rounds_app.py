"""A run in interleaved rounds played in the real app (a synthetic run, recorded by the real
exporter, replayed through the real session): the status names each variant's round, and
the watch view always holds the calls of the variant it names, its plot drawn."""

from __future__ import annotations

import re
import threading

import pytest
from test_rounds import A, B, run
from test_tui_replay import SIZE, run_replay, until

from couplescope.core import replay, rounds
from couplescope.core.replay import PlayedWorker
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.top_line import forms
from couplescope.frontends.tui.views.watch import WatchView
from couplescope.frontends.tui.watch_widgets import calls_done, progress_shown

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def test_the_app_shows_the_rounds_as_they_come(tmp_path):
    """A run in rounds played in the real app: the log says it is interleaved, the last
    variant to end is the one shown, with its own calls only, and the end gives the paired
    ratio and what the ratios cannot rank."""
    outcome, _ = run([A, B], export=str(tmp_path), rounds=4, order_seed=3)
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording.read(outcome.run_directory))
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        record = app.runs[1]
        assert record.status == "finished" and record.builder.rounds["orders"] == outcome.builder.rounds["orders"]
        assert any(n.startswith("interleaved: 4 rounds") for n in app.notes)
        last = outcome.builder.last_ended
        assert last in str(app.query_one("#stats").render())
        assert list(app.query_one("#iteration-table").checks) == ["PASSED"] * (1 + 12 + 1)
        assert any("cannot be ranked" in n for n in app.notes)
        # the paired ratio itself, which the compare view (ratio to the fastest median) lacks
        row = {r["name"]: r for r in outcome.builder.comparison()}
        other = next(r for r in row.values() if r["baseline"] != r["name"])
        # of 4 rounds (fewer when disturbed) the interval is their range: said so, not called
        # 95% (results.paired.range_only)
        assert (f"{other['name']}: {other['ratio']:.2f}x {other['baseline']} from same-round pairs "
                f"(by round {other['ratio_low']:.2f}–{other['ratio_high']:.2f}; {other['paired_rounds']} rounds: "
                "too few for a narrower interval)") in app.notes[-2]


def one_round_at_a_time(monkeypatch) -> threading.Semaphore:
    """From now on, played workers stop after each round until the test lets the next one
    go (the semaphore's release), as a live run's rounds come one after the other."""
    gate = threading.Semaphore(0)
    play = PlayedWorker.events

    def events(self):
        for ev in play(self):
            yield ev
            if ev.event == "round_finished":
                while not gate.acquire(timeout=0.01):
                    if self._stopped:
                        return
    monkeypatch.setattr(PlayedWorker, "events", events)
    return gate


async def test_every_figure_of_the_watch_view_names_the_variant_measuring_now(tmp_path, monkeypatch):
    """After each round, at the view's next redraw on its own timer: the status line's round
    and variant, the statistics, the progress bar, the table and the plot all show the
    variant of that round with every call it made so far, and the plot is drawn (it stayed
    empty until the last round: each round's switch drew the new variant's empty plot at
    once, and the rate limit held its calls back until the next switch emptied it again).
    The status names the rounds of the plan, in its order."""
    monkeypatch.setattr(WatchView, "redraw_seconds", 0.05)   # the view's timer, fast: no test waits 0.5 s
    outcome, _ = run([A, B], export=str(tmp_path), rounds=3, order_seed=3)
    planned = rounds.plan([A, B], 3, seed=3).orders
    gate = one_round_at_a_time(monkeypatch)   # (the recording above was made without it)
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording.read(outcome.run_directory))
    statuses: list[str] = []
    real_status = app.set_status

    def status(text, **kwargs):
        statuses.append(forms(text)[0])   # (its fullest form: the top line says the first that fits)
        real_status(text, **kwargs)
    app.set_status = status
    redraws = [0]
    real_redraw = WatchView.redraw

    def counted(self, force=False):
        real_redraw(self, force)
        redraws[0] += not force
    monkeypatch.setattr(WatchView, "redraw", counted)   # (the timer holds the method it was given)
    async with app.run_test(size=(80, 24)) as pilot:
        watch = app.query_one("#watch")
        await pilot.press("r")
        await until(pilot, lambda: app.runs, "the run started")
        record = app.runs[1]
        for number, order in enumerate(planned, 1):
            for name in order:
                await until(pilot, lambda: record.builder.variants.get(name) is not None
                            and record.builder.variants[name].round_finished == number, (number, name))
                seen = redraws[0]
                await until(pilot, lambda: redraws[0] >= seen + 2, "two redraws on the view's timer")
                variant = record.builder.variants[name]
                calls = len(variant.iterations)
                plot, table = watch.query_one("#plot"), watch.query_one("#iteration-table")
                stats = str(watch.query_one("#stats").render())
                assert record.current == name and plot.variant == name, (number, name)
                where = f"round {number}/3: {name}" if number < 3 else f"rounds done: {name}: finishing"
                assert where in app.main.query_one("#status").render().plain
                assert f"{sum(calls_done(variant).values())}/" in stats and f"{name} running" in stats
                bar = watch.query_one("#progress")   # (its percentage rounded down: progress_shown)
                assert bar.progress == progress_shown(sum(calls_done(variant).values()), bar.total)
                assert len(plot.points) == calls and len(table.checks) == calls, (number, name)
                assert "time per iteration" in str(plot.render()), (number, name, str(plot.render())[:200])
                gate.release()
        await until(pilot, lambda: app.active is None, "the run ended")
        # each round named once, in the plan's order (the last: whichever its redraws caught)
        named = [s.split(": ", 1)[1] for s in statuses if re.search(r": round \d/3: \w+$", s)]
        plan = [f"round {r}/3: {name}" for r, order in enumerate(planned, 1) for name in order]
        assert named == [p for p in plan if p in named] and plan[:4] == named[:4], named
