"""What a seventh walk-through of the app by a new user found in the compare screen (issue
30, /work/seventh-walk.md 2d, 3c, 3f and 3a): `direct-python-host` cut to `direct…` beside
`direct`, a stopped run's rows out of its Run line's order, the only variant left out
keeping its box, and the log calling the range of five rounds a 95% interval.

The app is the real one driven by Pilot over recorded real runs played back
(tests/fixtures); the wording is tested on the recorded rounds' own ratios."""

from __future__ import annotations

import os

import pytest

from couplescope.core import replay
from couplescope.frontends.cli.comparison import comparison_table
from couplescope.frontends.tui.box_rows import BoxRows
from couplescope.frontends.tui.compare_table import NARROWEST_NAME, unranked_why
from couplescope.frontends.tui.notes import ratio_line
from couplescope.results import paired
from couplescope.results.builder import ResultsBuilder
from test_tui_replay import FIXTURES, replay_app, run_replay, until
from test_tui_walkthrough import held_from, open_compare

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

#: the preset's variants in its Run line's order (the recording's rounds shuffle them)
RUN_LINE = ["direct", "direct-python-host", "bridge", "bridge-python-host"]


def prefixed(name: str, prefix: str) -> replay.Recording:
    """The recorded preset-train run as a run named `prefix` makes it (`my-direct`, ...)."""
    def renamed(n):
        return f"{prefix}-{n}"

    events = []
    for ev in replay.read(os.path.join(FIXTURES, f"{name}.jsonl")):
        ev = dict(ev)
        if ev.get("variant"):
            ev["variant"] = renamed(ev["variant"])
        if ev.get("event") == "rounds_planned":
            ev.update(variants=[renamed(n) for n in ev["variants"]],
                      orders=[[renamed(n) for n in order] for order in ev["orders"]],
                      **({"baseline": renamed(ev["baseline"])} if ev.get("baseline") else {}))
        events.append(ev)
    return replay.Recording(events, "simplenet-train")


def reads_as(name: str, other: str) -> bool:
    """`name` the same as `other`, or its start and an ellipsis (`#1 direct…` beside `#1 direct`)."""
    return name == other or (name.endswith("…") and other.startswith(name[:-1]))


async def stopped(pilot, held: list[str], recording, workers: int) -> None:
    """`recording` played, stopped once `workers` of its workers have started (held_from)."""
    count = len(held)
    pilot.app.recording = recording
    await pilot.press("r")
    await until(pilot, lambda: len(held) == count + workers, "the held worker started")
    await pilot.press("s")
    await until(pilot, lambda: pilot.app.active is None, "the stopped run ended")


# -- 2d: every name shown apart from the others, at every width the table gives them -------------

async def test_a_several_run_training_compare_keeps_every_name_apart_at_every_width(monkeypatch):
    """The walk's case: a finished simplenet-train run and one named `my` stopped before its
    first step, compared at 80 columns: `#1 direct-python-host` was cut to `#1 direct…`
    beside `#1 direct`. Narrower, the table gives the names less, down to the narrowest."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        held = held_from(monkeypatch, 1)
        await stopped(pilot, held, prefixed("preset-train", "my"), 1)
        await pilot.press("h")
        screen = await open_compare(pilot)
        table = screen.query_one("#compare-table")
        assert sorted(screen.all_names) == sorted([f"#1 {n}" for n in RUN_LINE] + [f"#2 my-{n}" for n in RUN_LINE])
        widths = set()
        for width in range(80, 58, -3):
            await pilot.resize_terminal(width, 24)
            await until(pilot, lambda: screen.app.size.width == width, "resized")
            await pilot.pause()
            shown = [str(table.get_row(n)[1]).strip() for n in screen.all_names]
            widths.add(max(map(len, shown)))
            clashes = [(a, b) for a in shown for b in shown if a is not b and reads_as(a, b)]
            assert not clashes, (width, shown)
            assert all(len(s) >= 4 for s in shown), shown
        assert min(widths) <= NARROWEST_NAME   # down to the narrowest the table cuts names to


# -- 3c: a stopped run's rows in its Run line's order ------------------------------------------

async def test_a_stopped_run_s_rows_follow_its_run_line(monkeypatch):
    """Stopped in its first round (its first variant of the round measured, the second's
    worker started), and stopped before its first step: the rows read the variants that
    had begun first, then the others (`my-bridge, my-direct, ...`)."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        held = held_from(monkeypatch, 2)
        await stopped(pilot, held, app.recording, 2)
        await stopped(pilot, held, prefixed("preset-train", "my"), 1)
        assert [r.status for r in app.runs.values()] == ["stopped", "stopped"]
        assert app.runs[1].builder.variants   # the first variant of round 1 measured
        await pilot.press("h")
        screen = await open_compare(pilot)
        assert screen.all_names == [f"#1 {n}" for n in RUN_LINE] + [f"#2 my-{n}" for n in RUN_LINE]
        table = screen.query_one("#compare-table")
        assert list(table.rows) and [k.value for k in table.rows] == screen.all_names


# -- 3f: the only variant left out leaves an empty plot that says so -------------------------

async def test_leaving_out_the_only_variant_empties_the_plot_and_says_so():
    app = replay_app("layout-c")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        screen = await open_compare(pilot)
        boxes = screen.query_one(BoxRows)
        assert any(line.split("│")[0].strip() == "1" for line in str(boxes.render()).splitlines())
        await pilot.press("space")
        await until(pilot, lambda: screen.left_out, "the variant left out")
        await pilot.resize_terminal(81, 24)   # drawn again at another width (the table's moved it)
        await until(pilot, lambda: screen.app.size.width == 81, "resized")
        await pilot.pause()
        plot = str(boxes.render())
        assert "│" not in plot and "every variant left out; space puts one back" in plot, plot
        await pilot.press("space")
        await until(pilot, lambda: not screen.left_out and "│" in str(boxes.render()), "put back, drawn")


# -- 3a: a range of five rounds is not called a 95% interval -----------------------------------

def recorded_rows(name: str) -> list[dict]:
    builder = ResultsBuilder(name)
    for ev in replay.read(os.path.join(FIXTURES, f"{name}.jsonl")):
        builder.on_event(ev)
    return builder.comparison()


def test_a_pair_of_five_rounds_is_said_as_its_range_not_a_95_percent_interval():
    """The recorded preset-train run's pairs (5 rounds): the bootstrap's ends are the lowest
    and highest round's ratio, as the walk found on every pair (`95% interval 2.13–4.70, by
    round 2.13–4.70`); the words say the range and why, never 95%."""
    rows = [r for r in recorded_rows("preset-train") if r["baseline"] != r["name"]]
    assert len(rows) == 3
    for row in rows:
        clean = [v for k, v in row["ratio_per_round"].items() if int(k) not in row["rounds_disturbed"]]
        assert row["paired_rounds"] == len(clean) <= 5
        assert (row["ratio_low"], row["ratio_high"]) == pytest.approx((min(clean), max(clean)))  # the statistic
        line = ratio_line(row)
        assert "95%" not in line, line
        assert line.endswith(f"(by round {row['ratio_low']:.2f}–{row['ratio_high']:.2f}; {len(clean)} rounds: "
                             "too few for a narrower interval)"), line
        # the same rounds about 1 (the ratios over the pair's own): not ranked, and not 95% either
        about_one = {**row, "ratio_low": row["ratio_low"] / row["ratio"], "ratio_high": row["ratio_high"] / row["ratio"],
                     "ratio_per_round": {k: v / row["ratio"] for k, v in row["ratio_per_round"].items()}}
        assert unranked_why(about_one) == (f"by round {about_one['ratio_low']:.2f}–{about_one['ratio_high']:.2f} "
                                           f"holds 1 ({len(clean)} rounds)")
    closing = comparison_table(recorded_rows("preset-train"))
    assert "too few for a narrower interval (5 or fewer): not 95%" in closing, closing
    # of nine rounds the percentile interval is narrower than their range: a 95% interval, said so
    nine = {r: [1e-6 * (1 + r % 3)] * 3 for r in range(1, 10)}
    other = {r: [2e-6 * (1 + 0.1 * r) * (1 + r % 3)] * 3 for r in range(1, 10)}
    pair = paired.paired_ratio(nine, other)
    row = {"name": "b", "baseline": "a", "ratio": pair["ratio"], "ratio_low": pair["low"],
           "ratio_high": pair["high"], "ratio_spread": pair["spread"], "ratio_per_round": pair["per_round"],
           "rounds_disturbed": [], "paired_rounds": pair["rounds"]}
    assert pair["low"] > pair["spread"][0]
    assert "(95% interval " in ratio_line(row), ratio_line(row)
