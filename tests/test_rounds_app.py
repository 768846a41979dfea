"""A run in interleaved rounds played in the real app (a synthetic run, recorded by the real
exporter, replayed through the real session): the status names each variant's round as it
starts, and the watch view always holds the calls of the variant it names."""

from __future__ import annotations

from test_rounds import A, B, run
from test_tui_replay import SIZE, run_replay

from couplescope.core import replay, rounds
from couplescope.frontends.tui.app import CoupleScopeApp


async def test_the_app_shows_the_rounds_as_they_come(tmp_path):
    """A run in rounds played in the real app: the log says it is interleaved, the status
    line names each variant's round as it starts, the watch view follows each turn with the
    variant's calls so far, and the end gives what the ratios cannot rank."""
    outcome, _ = run([A, B], export=str(tmp_path), rounds=4, order_seed=3)
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording.read(outcome.run_directory))
    statuses, shown = [], []
    real_status = app.set_status

    def status(text):
        statuses.append(text)
        real_status(text)
    app.set_status = status
    async with app.run_test(size=SIZE) as pilot:
        watch = app.query_one("#watch")
        real_resume = watch._resume

        def resume(record, name):
            real_resume(record, name)
            variant = record.builder.variants.get(name)
            if variant is not None and variant.iterations:   # its second round on
                shown.append((name, len(variant.iterations), watch._progress, watch.query_one("#plot").variant))
        watch._resume = resume
        await run_replay(pilot)
        record = app.runs[1]
        assert record.status == "finished" and record.builder.rounds["orders"] == outcome.builder.rounds["orders"]
        assert any(n.startswith("interleaved: 4 rounds") for n in app.notes)
        rounds_seen = [s.split(": ", 1)[1] for s in statuses if ": round " in s]
        planned = rounds.plan([A, B], 4, seed=3).orders
        assert rounds_seen == [f"round {r}/4: {name}" for r, order in enumerate(planned, 1) for name in order]
        # from its second round on, a variant's turn starts with its calls so far drawn back
        # (6 turns), and so do its profiled calls after the last round (one per variant)
        assert len(shown) == 6 + 2
        assert all(progress == calls and plotted == name for name, calls, progress, plotted in shown)
        assert any("cannot be ranked" in n for n in app.notes)
        # the paired ratio itself, which the compare view (ratio to the fastest median) lacks
        row = {r["name"]: r for r in outcome.builder.comparison()}
        other = next(r for r in row.values() if r["baseline"] != r["name"])
        assert (f"{other['name']}: {other['ratio']:.2f}x {other['baseline']} from same-round pairs "
                f"(95% interval {other['ratio_low']:.2f}–{other['ratio_high']:.2f}, by round ") in app.notes[-2]


async def test_the_watch_view_shows_only_the_followed_variants_calls(tmp_path):
    """Whatever arrives, the plot and the table hold the calls of one variant, the one the
    status names: at a variant's first round (its worker still starting, no call yet) they
    are emptied under its name, not left with the previous variant's calls; after the last
    round, when each variant makes its profiled calls with no round_started before them,
    the view follows each in turn instead of adding them to another variant's."""
    outcome, _ = run([A, B], export=str(tmp_path), rounds=4, order_seed=3)
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording.read(outcome.run_directory))
    wrong, checked = [], []
    async with app.run_test(size=SIZE) as pilot:
        watch = app.query_one("#watch")
        real_follow = watch.follow

        def follow(record, evs):
            real_follow(record, evs)
            if evs[0]["event"] not in ("round_started", "iteration"):
                return
            plot, table = watch.query_one("#plot"), watch.query_one("#iteration-table")
            variant = record.builder.variants.get(record.current)
            calls = len(variant.iterations) if variant is not None else 0
            shown = (plot.variant, len(plot.points), len(table.checks) + len(table._pending))
            checked.append(evs[0]["event"])
            if shown != (record.current, calls, calls):
                wrong.append((evs[0]["event"], record.current, calls, shown))
        watch.follow = follow
        await run_replay(pilot)
        assert app.runs[1].status == "finished"
        assert checked.count("round_started") == 8 and "iteration" in checked
        assert wrong == []
        # the last variant to finish is the one shown, with its own calls only
        last = outcome.builder.last_ended
        assert "[b]" not in last and last in str(app.query_one("#stats").render())
        assert list(app.query_one("#iteration-table").checks) == ["PASSED"] * (1 + 12 + 1)
