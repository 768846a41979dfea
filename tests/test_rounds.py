"""Interleaved rounds (--rounds, couplescope.core.rounds): the order shuffled per round and
recorded, ratios from same-round pairs, a variant that fails in a round, the noise
verdict (--compare of runs measured at different times: tests/test_compare_load.py).
Synthetic workers (the real session, printer, builder and exporters, no torch) for the
bookkeeping; real workers in tests/test_rounds_e2e.py, the app in tests/test_rounds_app.py."""

from __future__ import annotations

import io
import json
import math

import pytest

from couplescope.core import pipeline, replay, rounds, synthetic
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.protocol import events
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import RunSpec
from couplescope.results import noise, paired
from couplescope.results.saved import iteration_records as records

A = RunSpec(model="simplenet", backend="torchscript", host="python", warmup=1, iterations=12,
            profile_iterations=1, name="a")
B = A.replace(backend="bridge", name="b")
C = A.replace(grad_mode="inference", name="c")


def run(specs, script=None, export=None, **settings):
    """A synthetic run in rounds through the real pipeline and printer: (outcome, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(specs), out=out, err=err)
    outcome = pipeline.run(synthetic.request(specs, export=export, **settings), [printer],
                           workers=synthetic.SyntheticWorkers(script))
    printer.close()
    return outcome, out.getvalue()


# -- the plan ----------------------------------------------------------------------------

def test_the_iterations_are_shared_out_larger_shares_first():
    assert rounds.shares_of(10, 4) == (3, 3, 2, 2)
    assert rounds.shares_of(12, 4) == (3, 3, 3, 3)
    assert sum(rounds.shares_of(10_001, 7)) == 10_001


def test_a_comparison_is_interleaved_by_default_and_one_variant_is_not():
    assert rounds.resolve(None, [A]) == 1
    assert rounds.resolve(None, [A.replace(iterations=100), B.replace(iterations=100)]) == 5
    assert rounds.resolve(None, [A, B]) == 4                          # 12 calls: 3 a round at the least
    assert rounds.resolve(None, [A.replace(iterations=10), B]) == 3
    assert rounds.resolve(None, [A.replace(iterations=5), B]) == 1    # too few to share out
    assert rounds.resolve(1, [A, B]) == 1                             # today's behaviour, asked for


def test_more_rounds_than_iterations_is_refused_naming_the_variant():
    with pytest.raises(UsageError, match=r"--rounds 20: .* a makes 12; use --rounds 12 or fewer"):
        rounds.resolve(20, [A, B])


def test_the_order_is_shuffled_per_round_and_repeated_from_its_seed():
    specs = [A, B, C]
    plan = rounds.plan(specs, 8, seed=7)
    assert all(sorted(order) == ["a", "b", "c"] for order in plan.orders)
    assert len(set(plan.orders)) > 1, "every round ran in the same order"
    assert rounds.plan(specs, 8, seed=7).orders == plan.orders
    assert any(rounds.plan(specs, 8, seed=s).orders != plan.orders for s in (8, 9, 10))
    assert rounds.plan(specs, 1) is None and rounds.plan(specs, None) is None


def test_the_baseline_must_name_a_variant():
    with pytest.raises(UsageError, match="--baseline nope is not a variant of this run; its variants: a, b"):
        rounds.check_baseline("nope", [A, B])


def test_a_baseline_is_refused_for_a_comparison_in_one_round_not_ignored():
    """With --rounds 1 (or too few calls for rounds) the table ranks against the fastest:
    a --baseline there was dropped without a word."""
    with pytest.raises(UsageError, match=r"--baseline b needs a run in rounds .* \(--rounds 1\), .* "
                                         r"give --rounds 2 or more, or leave out --baseline"):
        rounds.check_baseline("b", [A, B], rounds=1, asked=1)
    with pytest.raises(UsageError, match=r"\(5 iterations give fewer than 3 calls a round\)"):
        rounds.check_baseline("b", [A.replace(iterations=5), B.replace(iterations=5)], rounds=1)
    rounds.check_baseline("b", [A, B], rounds=4)          # in rounds: fine
    rounds.check_baseline("a", [A], rounds=1, asked=1)    # one variant: nothing to rank


# -- a run in rounds -----------------------------------------------------------------------

def test_a_run_in_rounds_records_its_order_and_each_calls_round(tmp_path):
    outcome, out = run([A, B, C], export=str(tmp_path), rounds=4, order_seed=11)
    assert outcome.exit_code == 0
    planned = rounds.plan([A, B, C], 4, seed=11)
    recorded = events.read_jsonl(f"{outcome.run_directory}/events.jsonl")
    [plan_ev] = [ev for ev in recorded if ev.event == "rounds_planned"]
    assert plan_ev.seed == 11 and plan_ev.orders == [list(o) for o in planned.orders]
    started = [(ev.round, ev.variant) for ev in recorded if ev.event == "round_started"]
    assert started == [(r, name) for r, order in enumerate(planned.orders, 1) for name in order]
    doc = json.loads((tmp_path / outcome.run_directory.split("/")[-1] / "results.json").read_text())
    assert doc["rounds"]["orders"] == plan_ev.orders and doc["rounds"]["seed"] == 11
    for v in doc["variants"]:
        timed = [it for it in records(v) if it["kind"] == "timed"]
        assert [it["index"] for it in timed] == list(range(1, 13))   # numbered on across rounds
        assert [it["round"] for it in timed] == [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3
        assert [r["position"] for r in v["rounds"]] == [o.index(v["name"]) + 1 for o in planned.orders]
        assert [r["n"] for r in v["rounds"]] == [3, 3, 3, 3]
        assert sum(1 for it in records(v) if it["kind"] == "warmup") == 1   # warmed up once
    assert "interleaved: 4 rounds" in out and "-- b: round 2/4, 3 iterations --" in out
    # results.json is the events' own: rebuilt from events.jsonl alone, rounds and all
    rebuilt = replay.document(recorded, doc["title"])
    assert rebuilt["rounds"] == doc["rounds"] and rebuilt["comparison"] == doc["comparison"]


def rounds_written(tmp_path, write_seconds: float) -> tuple[list[int], dict]:
    """The rounds after which results.json was written, in a run of 20 rounds where each
    round takes a second of the exporter's clock and each write `write_seconds`; and the
    results.json the run ends with."""
    run_ = pipeline.Pipeline(synthetic.request([A.replace(iterations=40), B.replace(iterations=40)],
                                               export=str(tmp_path), rounds=20, order_seed=1),
                             workers=synthetic.SyntheticWorkers())
    exporter, now, current, written = run_.exporter, [0.0], [None], []
    exporter.clock = lambda: now[0]
    round_done, save = exporter.round_done, exporter._save_results

    def timed_round_done(builder, number):
        now[0] += 1.0
        current[0] = number
        round_done(builder, number)
        current[0] = None

    def timed_save(builder):
        if current[0] is not None:
            written.append(current[0])
            now[0] += write_seconds
        return save(builder)
    exporter.round_done, exporter._save_results = timed_round_done, timed_save
    outcome = run_.run()
    assert outcome.exit_code == 0
    return written, json.loads(open(f"{outcome.run_directory}/results.json").read())


def test_results_json_is_rewritten_after_a_round_while_that_costs_at_most_a_tenth_of_the_time(tmp_path):
    """A run of hundreds of rounds spent nine tenths of its parent's time rewriting a
    results.json that grows with every round: a write now waits until the last one took at
    most a tenth of the time since. The file the run ends with has every round."""
    quick, _ = rounds_written(tmp_path / "quick", write_seconds=0.01)
    assert quick == list(range(1, 21))
    slow, doc = rounds_written(tmp_path / "slow", write_seconds=1.0)
    assert slow == [1, 10, 19]
    for v in doc["variants"]:
        assert [r["round"] for r in v["rounds"]] == list(range(1, 21)) and v["stats"]["n"] == 40


def test_a_recorded_run_in_rounds_replays_in_its_own_order(tmp_path):
    outcome, _ = run([A, B], export=str(tmp_path), rounds=3, order_seed=5)
    recording = replay.Recording.read(outcome.run_directory)
    again = pipeline.run(recording.request(), workers=recording.workers())
    assert again.builder.rounds["orders"] == outcome.builder.rounds["orders"]
    assert again.builder.document()["comparison"] == outcome.builder.document()["comparison"]


def _times(times_by_round: dict[str, list[float]]):
    """A script giving each variant's timed calls the seconds of their round."""
    def script(spec, played):
        out, round_number = [], 1
        for ev in played:
            if ev.event == "iterations" and ev.kind == "timed":
                seconds = times_by_round[spec.label][round_number - 1]
                ev = events.make("iterations", spec.label, **{**{k: ev[k] for k in ev if k not in ("event", "t", "variant")},
                                                              "ns": [round(seconds * 1e9)] * ev.count})
            if ev.event == "round_finished":
                round_number += 1
            out.append(ev)
        return out
    return script


def test_the_ratio_pairs_each_round_with_the_baselines_same_round():
    """The machine drifts tenfold between rounds; b is 1.2x a in every round. Paired by
    round the ratio is exactly 1.2, its spread a point; a round of b paired with another
    round of a would give 12 or 0.12."""
    script = _times({"a": [1e-3, 1e-2], "b": [1.2e-3, 1.2e-2]})
    outcome, out = run([A.replace(iterations=6), B.replace(iterations=6)], script, rounds=2, baseline="a")
    row = {r["name"]: r for r in outcome.builder.comparison()}
    assert row["a"]["ratio"] == 1.0 and row["b"]["baseline"] == "a"
    assert row["b"]["ratio"] == pytest.approx(1.2)
    assert row["b"]["ratio_spread"] == pytest.approx([1.2, 1.2])
    assert row["b"]["ratio_per_round"] == pytest.approx({"1": 1.2, "2": 1.2})
    assert row["b"]["ratio_low"] == pytest.approx(1.2) and row["b"]["ratio_high"] == pytest.approx(1.2)
    assert "1.20x ±0%" in out and "base" in out


def test_a_sweep_in_rounds_pairs_each_size_with_a_baseline_of_that_size():
    """a and b at sizes 16 and 32, the larger size ten times slower: each ratio is to a
    variant of its own size (b 1.2x a at 16, 1.5x at 32), never the whole sweep's fastest
    (a ratio of 12 or 15), and the table's ratio is the paired one, not the medians' ratio
    with the interval of another pair beside it. A named baseline stands for its series."""
    a16, b16 = A.replace(size=16, iterations=6, name="a16"), B.replace(size=16, iterations=6, name="b16")
    a32, b32 = a16.replace(size=32, name="a32"), b16.replace(size=32, name="b32")
    script = _times({"a16": [1e-3, 2e-3], "b16": [1.2e-3, 2.4e-3], "a32": [1e-2, 2e-2], "b32": [1.5e-2, 3e-2]})
    outcome, out = run([a16, b16, a32, b32], script, rounds=2)
    row = {r["name"]: r for r in outcome.builder.comparison()}
    assert {n: r["baseline"] for n, r in row.items()} == {"a16": "a16", "b16": "a16", "a32": "a32", "b32": "a32"}
    assert row["b16"]["ratio"] == pytest.approx(1.2) and row["b32"]["ratio"] == pytest.approx(1.5)
    assert row["b32"]["ratio_spread"] == pytest.approx([1.5, 1.5])
    assert "1.20x ±0%" in out and "1.50x ±0%" in out and "1.50–1.50" in out
    assert "vs base: the ratio to the variant marked base at the same size" in out
    assert "vs fastest" not in out
    named, out = run([a16, b16, a32, b32], script, rounds=2, baseline="b16")
    row = {r["name"]: r for r in named.builder.comparison()}
    assert row["a32"]["baseline"] == "b32" and row["a32"]["ratio"] == pytest.approx(1 / 1.5)
    assert row["a16"]["baseline"] == "b16" and row["a16"]["ratio"] == pytest.approx(1 / 1.2)


def test_paired_ratio_is_the_median_of_the_round_ratios_with_an_interval_around_it():
    base = {1: [1.0, 1.1, 0.9], 2: [2.0, 2.2, 1.8], 3: [1.0, 1.0, 1.0], 4: [3.0, 3.1, 2.9]}
    other = {r: [v * f for v in vs] for (r, vs), f in zip(base.items(), (1.5, 1.4, 1.5, 5.0))}
    pair = paired.paired_ratio(base, other)
    assert pair["ratio"] == pytest.approx(math.exp((math.log(1.5) + math.log(1.5)) / 2))
    assert pair["spread"] == pytest.approx([1.4, 5.0]) and pair["rounds"] == 4
    assert pair["low"] <= pair["ratio"] <= pair["high"]
    assert paired.paired_ratio({1: [1.0]}, {1: [2.0]}) is None   # one round pairs nothing


def _fail_in_round_2(crash: bool):
    """b makes one call of round 2, then fails (variant_failed) or its worker dies (no
    ending event at all)."""
    def script(spec, played):
        if spec.label != "b":
            return played
        out, finished = [], 0
        for ev in played:
            if finished == 1 and ev.event == "iterations" and ev.kind == "timed":
                cols = {k: ev[k][:1] if isinstance(ev[k], list) else ev[k]
                        for k in ev if k not in ("event", "t", "variant")}
                out.append(events.make("iterations", "b", **cols))
                if not crash:
                    out.append(events.make("variant_failed", "b", reason="RuntimeError: boom",
                                           kind="error", traceback=""))
                return out
            finished += ev.event == "round_finished"
            out.append(ev)
        return out
    return script


@pytest.mark.parametrize("crash", [False, True], ids=["fails", "dies"])
def test_a_variant_that_fails_in_round_2_ends_there_keeping_rounds_1_and_2(tmp_path, crash):
    outcome, _ = run([A, B], _fail_in_round_2(crash), export=str(tmp_path), rounds=4)
    assert outcome.exit_code == 1
    doc = outcome.document()
    a, b = (next(v for v in doc["variants"] if v["name"] == n) for n in ("a", "b"))
    assert b["verdict"] == "error" and a["verdict"] == "passed"
    assert [it["round"] for it in records(b) if it["kind"] == "timed"] == [1, 1, 1, 2]
    assert [r["round"] for r in b["rounds"]] == [1, 2]           # never started again
    assert [r["n"] for r in a["rounds"]] == [3, 3, 3, 3]          # the others go on
    if crash:
        assert "after timed iteration 4 (round 2)" in b["error"]
    on_disk = json.loads(open(f"{outcome.run_directory}/results.json").read())
    assert [r["round"] for r in next(v for v in on_disk["variants"] if v["name"] == "b")["rounds"]] == [1, 2]


def _stopped_in_round_1(spec, played):
    """b makes one call of round 1, then is stopped (as Ctrl-C reports it)."""
    if spec.label != "b":
        return played
    out = []
    for ev in played:
        if ev.event == "iterations" and ev.kind == "timed":
            cols = {k: ev[k][:1] if isinstance(ev[k], list) else ev[k] for k in ev if k not in ("event", "t", "variant")}
            return out + [events.make("iterations", "b", **cols),
                          events.make("variant_failed", "b", reason="interrupted", kind="interrupted", traceback="")]
        out.append(ev)
    return out


def test_a_variant_with_one_round_in_common_is_shown_unpaired_and_stopped():
    """A variant stopped in its first round shares one round with the base: its ratio is
    the two medians', and the table says so instead of putting it under "from same-round
    pairs" as if it were one; its block says it stopped, not "finished"."""
    outcome, out = run([A, B], _stopped_in_round_1, rounds=4, baseline="a")
    row = {r["name"]: r for r in outcome.builder.comparison()}
    assert row["b"]["ratio_low"] is None and row["b"]["ratio"] is not None
    assert f"{row['b']['ratio']:.2f}x unpaired" in out
    assert "unpaired: fewer than two rounds in common with the base" in out
    assert "-- b: stopped --" in out and "-- b: finished --" not in out and "-- a: finished --" in out


# -- the noise verdict -----------------------------------------------------------------------

def _sample(others: float, tree: float = 100.0) -> dict:
    """A telemetry sample of a timed call: two cores, the worker's tree at `tree`%, the
    parent at 2%, other processes at `others`%."""
    total = tree + 2.0 + others
    return {"iteration": {"kind": "timed", "index": 1}, "tree": {"cpu_percent": tree, "processes": 1,
                                                                  "rss": 1, "threads": 1},
            "sampler": {"pid": 1, "cpu_percent": 2.0},
            "system": {"cpu_percent": [total / 2, total / 2]}, "processes": [], "gpu": "n/a"}


def _loaded(busy_rounds: dict, sampled=None):
    """A script adding a telemetry sample to each round of each variant (only to the
    rounds in `sampled`, when given): other processes at 90% of a core in the (variant,
    round)s of `busy_rounds`, 3% elsewhere."""
    def script(spec, played):
        out, number = [], 1
        for ev in played:
            if ev.event == "round_finished" and sampled is not None and number not in sampled:
                number += 1
            elif ev.event == "round_finished":
                others = 90.0 if number in busy_rounds.get(spec.label, ()) else 3.0
                out.append(events.make("telemetry", spec.label, sample=_sample(others)))
                number += 1
            out.append(ev)
        return out
    return script


def test_the_noise_verdict_names_the_disturbed_rounds_and_is_silent_when_quiet():
    outcome, out = run([A, B], _loaded({"a": (2, 3)}), rounds=4, baseline="a")
    found = outcome.document()["rounds"]["noise"]
    assert found["disturbed"] == [{"variant": "a", "rounds": [2, 3], "others_cpu_percent": 90.0}]
    assert found["line"].startswith("other processes used 0.9 of a core during rounds 2–3 of a; "
                                    "rounds 2–3 left out of b ÷ a; the ratio's interval is ±")
    assert "noise: other processes used 0.9 of a core during rounds 2–3 of a" in out
    quiet, out = run([A, B], _loaded({}), rounds=4)
    assert quiet.document()["rounds"]["noise"]["line"] is None and "noise:" not in out
    a = next(v for v in outcome.document()["variants"] if v["name"] == "a")
    assert {r["round"]: r["others_cpu_percent"] for r in a["rounds"]} == {1: 3.0, 2: 90.0, 3: 90.0, 4: 3.0}


def test_the_noise_verdict_says_which_rounds_no_sample_fell_in_instead_of_calling_them_quiet():
    """Rounds shorter than the sampling interval (microsecond calls) get no telemetry
    sample: the verdict named the one sampled round as the disturbed one and said nothing
    of the others, which read as a quiet machine in them."""
    outcome, out = run([A, B], _loaded({"a": (2,), "b": (2,)}, sampled={2}), rounds=4)
    found = outcome.document()["rounds"]["noise"]
    assert found["unsampled"] == [{"variant": "a", "rounds": [1, 3, 4]}, {"variant": "b", "rounds": [1, 3, 4]}]
    assert ("no telemetry sample fell in 6 of the variants' 8 rounds (rounds shorter than the sampling "
            "interval): other processes' load during them is unknown") in found["line"]
    assert found["line"].startswith("other processes used 0.9 of a core during round 2 of a")
    quiet, out = run([A, B], _loaded({}, sampled={1, 2, 3}), rounds=4)
    assert "no telemetry sample fell in 2 of the variants' 8 rounds" in quiet.document()["rounds"]["noise"]["line"]
    assert "noise: no telemetry sample fell in 2" in out
    # telemetry off (no sample at all): nothing was measured, nothing is claimed
    off, out = run([A, B], rounds=4)
    assert off.document()["rounds"]["noise"]["unsampled"] == [] and "noise:" not in out


def test_a_run_whose_interval_holds_one_says_it_cannot_rank():
    outcome, out = run([A, B], rounds=4)   # synthetic calls: the same within 10% noise
    unranked = outcome.document()["rounds"]["noise"]["unranked"]
    assert len(unranked) == 1 and "cannot be ranked" in unranked[0] and "holds 1" in unranked[0]
    assert "note: " + unranked[0] in out


def test_rounds_text():
    assert noise.rounds_text([2, 3, 5]) == "rounds 2–3, 5" and noise.rounds_text([4]) == "round 4"


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["--rounds", "20", "--iterations", "10"], "--rounds 20: every round measures at least one timed iteration"),
    (["--rounds", "0"], "--rounds must be at least 1 (got 0)"),
    (["--baseline", "nope"], "--baseline nope is not a variant of this run; its variants: "),
    (["--baseline", "simplenet-torchscript-python-host", "--rounds", "1"],
     "--baseline simplenet-torchscript-python-host needs a run in rounds"),
])
def test_bad_rounds_are_refused_in_one_line(command, args, words):
    # on the python host, so that the variants' names (-python-host) are the same with or
    # without a C++ compiler (without one, the default host is python)
    result = command("--model", "simplenet", "--backend", "torchscript,bridge", "--host", "python", *args)
    assert result.returncode == 2 and words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
