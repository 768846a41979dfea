"""--compare of two runs measured at different times: drift between them cannot cancel, so
where other processes loaded the machine differently the verdict is "inconclusive" (its
own exit code), judged by other processes' CPU and not the worker's own; two runs in
rounds are resampled by whole rounds (couplescope.results.regression)."""

from __future__ import annotations

from couplescope.protocol import contract
from couplescope.results import regression


def _doc(median: float, others, worker_cpu=100.0, by_round=False) -> dict:
    """A results document of one variant whose timed calls sit around `median`."""
    calls = [median * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(40)]
    its = [{"index": i + 1, "kind": "timed", "seconds": s, **({"round": i // 10 + 1} if by_round else {})}
           for i, s in enumerate(calls)]
    return {"variants": [{"name": "v", "iterations": its, "stats": {"median": median, "iqr": 0.0},
                          "telemetry": {"summary": {"others_cpu_percent_mean_timed": others,
                                                    "cpu_percent_mean_timed": worker_cpu}}}]}


def test_compare_says_inconclusive_when_other_processes_loaded_one_run():
    doc = regression.compare(_doc(1.0, others=5.0), _doc(1.3, others=95.0))
    (row,) = doc["variants"]
    assert row["verdict"] == regression.INCONCLUSIVE and doc["exit_code"] == contract.EXIT_INCONCLUSIVE == 5
    assert any("other processes used 0.1 of a core while base was timed and 0.9" in n for n in row["notes"])


def test_compare_judges_the_load_by_other_processes_not_the_workers_own_share():
    """A module that sleeps in its calls uses little CPU: its worker's share says nothing of
    the machine's load, so a slower run with the same other load is slower."""
    doc = regression.compare(_doc(1.0, others=5.0, worker_cpu=100.0), _doc(1.3, others=8.0, worker_cpu=10.0))
    (row,) = doc["variants"]
    assert row["verdict"] == regression.SLOWER and doc["exit_code"] == 1 and row["notes"] == []


def test_compare_of_two_runs_in_rounds_resamples_whole_rounds():
    from couplescope.frontends.cli.saved_runs import report

    doc = regression.compare(_doc(1.0, 5.0, by_round=True), _doc(1.0, 5.0, by_round=True))
    assert doc["variants"][0]["by_rounds"] is True and doc["exit_code"] == 0
    # and its header says so (it said "block bootstrap" whatever was resampled)
    assert "(ratio of medians, bootstrap of whole rounds) lies above 1.05" in report(doc, {})
    plain = regression.compare(_doc(1.0, 5.0), _doc(1.0, 5.0))
    assert plain["variants"][0]["by_rounds"] is False
    assert "(ratio of medians, block bootstrap) lies above" in report(plain, {})
