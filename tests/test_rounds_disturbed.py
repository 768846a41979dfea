"""No ranking from disturbed rounds (couplescope.results.paired): a pair of variants is
ranked only from the rounds neither was disturbed in, in the table, results.json, the
app's compare view and the regression gate.

tests/fixtures/busy-rounds.jsonl is a real run of the issue's command (stride 256,
torchscript and bridge, 4 rounds of 12 calls, one thread) made by main at ad75b4d under
a busy loop on a machine other jobs loaded: its telemetry shows other processes at 1.6
to 1.7 cores in every round of both variants, and its rounds put bridge ÷ direct at
0.69 to 0.86 (quiet runs: 0.94 to 1.03), which main ranked (1.38x the other way, 95%
interval 1.16 to 1.45)."""

from __future__ import annotations

import io
import os

from couplescope.core import pipeline, replay
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.protocol import contract
from couplescope.results import paired, regression

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "busy-rounds.jsonl")
BASE, OTHER = "stride-bridge-torchscript-256", "stride-torchscript-256"   # the baseline: the fastest


def replayed(evs):
    """The recording through the real pipeline and printer: (outcome, stdout)."""
    recording = replay.Recording(evs, "stride")
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(recording.specs), out=out, err=err, quiet_iterations=True)
    outcome = pipeline.run(recording.request(), [printer], workers=recording.workers())
    printer.close()
    return outcome, out.getvalue()


def rows(outcome) -> dict:
    return {r["name"]: r for r in outcome.document()["comparison"]}


def only_samples_of(evs, variant: str, rounds: set[int]):
    """The recording with the telemetry samples taken while `variant` measured `rounds`,
    and no other: the other rounds' load unknown, as a sampler that missed them leaves it."""
    kept, current = [], {}
    for ev in evs:
        if ev["event"] == "round_started":
            current[ev["variant"]] = ev["round"]
        if ev["event"] == "telemetry" and not (ev["variant"] == variant and current.get(variant) in rounds):
            continue
        kept.append(ev)
    return kept


def test_the_recorded_rounds_would_rank_the_pair_without_the_rule():
    """What main did with these rounds: an interval that excludes 1."""
    outcome, _ = replayed(replay.read(FIXTURE))
    builder = outcome.builder
    pair = paired.paired_ratio(paired.by_round(builder.variants[BASE].steps),
                               paired.by_round(builder.variants[OTHER].steps))
    assert paired.resolves({"ratio_low": pair["low"], "ratio_high": pair["high"]})
    assert 1.3 < pair["ratio"] < 1.45 and pair["low"] > 1.1


def ranked_row(outcome, out) -> dict:
    """The pair's row, which must not rank them: no interval that excludes 1, no ratio
    with an interval in the table."""
    row = rows(outcome)[OTHER]
    assert not paired.resolves(row), f"ranked on disturbed rounds: {row['ratio']} ({row['ratio_low']}-{row['ratio_high']})"
    table_row = next(line for line in out.splitlines() if line.startswith(OTHER + " "))
    assert "x ±" not in table_row, table_row
    return row


def test_a_pair_disturbed_in_every_round_is_not_ranked():
    outcome, out = replayed(replay.read(FIXTURE))
    row = ranked_row(outcome, out)
    assert row["cannot_rank"] == "4 of 4 rounds disturbed" and row["rounds_disturbed"] == [1, 2, 3, 4]
    assert row["ratio"] is None and row["ratio_low"] is None and row["ratio_high"] is None
    assert row["ratio_spread"] is not None and len(row["ratio_per_round"]) == 4   # what each round said
    assert "cannot rank" in next(line for line in out.splitlines() if line.startswith(OTHER + " "))
    assert (f"note: {OTHER} and {BASE} cannot be ranked: 4 of 4 rounds disturbed (other processes used "
            "25% of a core or more while one of them was timed), which leaves fewer than 2 to pair") in out
    assert "noise: other processes used 1.6 cores during rounds 1–4 of" in out


def test_one_variant_disturbed_in_3_of_4_rounds_is_not_ranked():
    """The same calls, with the samples of the torchscript variant's rounds 2-4 only: it
    is known disturbed in 3 of its 4 rounds, the rest unknown (kept). One round left."""
    evs = only_samples_of(replay.read(FIXTURE), OTHER, {2, 3, 4})
    outcome, out = replayed(evs)
    row = ranked_row(outcome, out)
    noise = outcome.document()["rounds"]["noise"]
    assert noise["disturbed"] == [{"variant": OTHER, "rounds": [2, 3, 4], "others_cpu_percent": noise["disturbed"][0]
                                   ["others_cpu_percent"]}]
    assert row["cannot_rank"] == "3 of 4 rounds disturbed" and row["ratio"] is None
    assert f"note: {OTHER} and {BASE} cannot be ranked: 3 of 4 rounds disturbed" in out


def test_two_undisturbed_rounds_rank_from_those_alone():
    """Disturbed in rounds 3 and 4 only: the ratio, interval and spread are rounds 1 and
    2's, and the noise line says which were left out."""
    evs = only_samples_of(replay.read(FIXTURE), OTHER, {3, 4})
    outcome, out = replayed(evs)
    row = rows(outcome)[OTHER]
    per_round = row["ratio_per_round"]
    assert row["cannot_rank"] is None and row["rounds_disturbed"] == [3, 4] and row["paired_rounds"] == 2
    assert sorted(row["ratio_spread"]) == sorted([per_round["1"], per_round["2"]])
    assert min(per_round["1"], per_round["2"]) <= row["ratio"] <= max(per_round["1"], per_round["2"])
    assert f"rounds 3–4 left out of {OTHER} ÷ {BASE}" in outcome.document()["rounds"]["noise"]["line"]


def test_the_phases_of_the_same_calls_from_two_hosts_follow_the_rule():
    """The recording's torchscript variant made as if the python host had made the bridge's
    calls (its run_started spec: backend and host), so the two variants differ only in
    who makes the calls and the run ends with the per-phase table of results.phase_pairs.
    Disturbed in 3 of its 4 rounds, no phase is ranked there either."""
    from couplescope.protocol import events
    from couplescope.results.phase_pairs import host_comparison

    evs = [events.typed({**ev, "spec": {**ev["spec"], "backend": "bridge", "host": "python"}})
           if ev["event"] == "run_started" and ev["variant"] == OTHER else ev
           for ev in only_samples_of(replay.read(FIXTURE), OTHER, {2, 3, 4})]
    outcome, out = replayed(evs)
    by_host = host_comparison(outcome.builder.comparison(), outcome.builder.variants)
    cells = [row["cells"][OTHER] for row in by_host["phases"]]
    assert by_host["base"] == BASE and [row["phase"] for row in by_host["phases"]][-1] == "call"
    assert all(c.get("cannot_rank") == "3 of 4 rounds disturbed" and c["ratio"] is None for c in cells), cells
    table = out.split("per phase, by host", 1)[1].splitlines()
    rows_of_table = table[3:3 + len(cells)]
    assert all(line.rstrip().endswith("cannot rank") for line in rows_of_table), rows_of_table
    assert table[3 + len(cells)].startswith("cannot rank: other processes loaded the machine")


# -- the regression gate ---------------------------------------------------------------------

def _saved(per_round: dict, loads: dict) -> dict:
    """A saved run in rounds of one variant: its timed calls per round and the load other
    processes put on each round (results.json's `rounds`)."""
    its, index = [], 0
    for r, calls in per_round.items():
        for s in calls:
            index += 1
            its.append({"index": index, "kind": "timed", "seconds": s, "round": r})
    return {"variants": [{"name": "v", "iterations": its, "stats": {"median": 1.0, "iqr": 0.0},
                          "rounds": [{"round": r, "others_cpu_percent": loads.get(r)} for r in per_round]}]}


QUIET = {r: [1.0, 1.01, 0.99] for r in (1, 2, 3, 4)}


def test_the_gate_does_not_call_a_run_slower_on_its_disturbed_rounds():
    """Slower in the 3 rounds another process loaded, as fast as the base in the quiet one:
    main called it slower (exit 1); there is one round left to compare: inconclusive."""
    new = _saved({1: [1.0, 1.0, 1.01], 2: [1.3, 1.31, 1.29], 3: [1.3, 1.3, 1.32], 4: [1.28, 1.3, 1.3]},
                 {1: 3.0, 2: 170.0, 3: 165.0, 4: 172.0})
    doc = regression.compare(_saved(QUIET, {r: 3.0 for r in QUIET}), new)
    (row,) = doc["variants"]
    assert row["verdict"] == regression.INCONCLUSIVE and doc["exit_code"] == contract.EXIT_INCONCLUSIVE
    assert row["rounds_disturbed"] == {"base": [], "new": [2, 3, 4]} and row["ci_low"] is None
    assert row["notes"][0].startswith("cannot rank: 3 of 4 rounds of new disturbed")


def test_the_gate_compares_the_undisturbed_rounds_when_two_are_left():
    new = _saved({1: [1.0, 1.0, 1.01], 2: [1.3, 1.31, 1.29], 3: [0.99, 1.0, 1.0], 4: [1.01, 1.0, 1.0]},
                 {2: 170.0})
    doc = regression.compare(_saved(QUIET, {}), new)
    (row,) = doc["variants"]
    assert row["verdict"] == regression.SAME and doc["exit_code"] == 0
    assert row["new_n"] == 12 and 0.98 < row["ratio"] < 1.02 and row["by_rounds"] is True
    assert "round 2 of new disturbed and left out" in row["notes"]


# -- the app -------------------------------------------------------------------------------

async def test_the_apps_compare_view_says_cannot_rank_where_the_table_does():
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.compare_screen import CompareScreen
    from test_tui_replay import compare_shown, run_replay, until

    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording(replay.read(FIXTURE), "stride"))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        assert any(f"{OTHER} and {BASE} cannot be ranked: 4 of 4 rounds disturbed" in n for n in app.notes)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        assert isinstance(app.screen, CompareScreen)
        table = app.screen.query_one("#compare-table")
        cells = [str(c).strip() for c in table.get_row(f"#1 {OTHER}")]
        assert "cannot rank" in cells and not any(c.endswith("x") and c[:-1].replace(".", "").isdigit()
                                                  for c in cells)
