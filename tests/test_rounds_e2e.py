"""Interleaved rounds with real workers: each variant's worker starts once and warms up once,
its calls numbered on across rounds; MPI ranks take their rounds from rank 0; a run stopped
in the middle of its rounds keeps every round measured and leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal

import pytest
from conftest import ROUNDS, ROUNDS_TIMED, ROUNDS_WARMUP
from test_endings import QUIET, assert_nothing_left, ended, family, start, wait_for

from couplescope.protocol import events
from couplescope.results.saved import iteration_records as records

pytestmark = pytest.mark.e2e


def run_dir(root) -> str:
    [name] = os.listdir(root)
    return os.path.join(root, name)


@pytest.mark.xdist_group("rounds-run")   # (conftest.rounds_run: made once, on one worker)
def test_each_worker_starts_once_warms_up_once_and_numbers_its_calls_on(rounds_run):
    where, doc, stdout = rounds_run.directory, rounds_run.results, rounds_run.stdout
    recorded = events.read_jsonl(os.path.join(where, "events.jsonl"))
    assert (ROUNDS_TIMED, ROUNDS_WARMUP, ROUNDS) == (6, 2, 3)   # what the counts below are of
    for v in doc["variants"]:
        started = [ev for ev in recorded if ev.event == "run_started" and ev.variant == v["name"]]
        assert len(started) == 1, "one worker per variant, whatever the rounds"
        kinds = [it["kind"] for it in records(v)]
        assert kinds.count("warmup") == 2
        timed = [it for it in records(v) if it["kind"] == "timed"]
        assert [it["index"] for it in timed] == [1, 2, 3, 4, 5, 6]
        assert [it["round"] for it in timed] == [1, 1, 2, 2, 3, 3]
        assert [r["n"] for r in v["rounds"]] == [2, 2, 2]
        assert v["verdict"] == "passed"
    finished = [ev.variant for ev in recorded if ev.event == "round_finished"]
    assert len(finished) == 6
    assert "vs base" in stdout and "interleaved: 3 rounds" in stdout
    assert doc["rounds"]["orders"] == [ev.orders for ev in recorded if ev.event == "rounds_planned"][0]
    rows = {r["name"]: r for r in doc["comparison"]}
    assert sum(1 for r in rows.values() if r["ratio_low"] is not None) == 1


@pytest.mark.mpi
def test_mpi_ranks_take_their_rounds_from_rank_0(cli, tmp_path):
    pytest.importorskip("mpi4py")
    runs = tmp_path / "runs"
    proc = cli("--model", "simplenet", "--backend", "torchscript,mpi", "--ranks", "2", "--rounds", "2",
               "--iterations", "4", *QUIET, "--export", runs)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(open(os.path.join(run_dir(runs), "results.json")).read())
    mpi = next(v for v in doc["variants"] if v["spec"]["backend"] == "mpi")
    timed = [it for it in records(mpi) if it["kind"] == "timed"]
    assert sorted({(it["rank"], it["index"], it["round"]) for it in timed}) == \
        [(r, i, (i + 1) // 2) for r in (0, 1) for i in (1, 2, 3, 4)]
    assert mpi["verdict"] == "passed"


@pytest.mark.parametrize("to", ["couplescope", "every process"])
def test_a_run_stopped_in_its_rounds_keeps_them_and_leaves_nothing(tmp_path, to):
    runs = tmp_path / "runs"
    proc = start("--model", "simplenet", "--backend", "torchscript,bridge", "--rounds", "2000",
                 "--iterations", "1000000", "--threads", "1", *QUIET, "--export", runs, tmp_path=tmp_path)

    def both_in_round_two():
        found = [p for p in runs.glob("*/events.jsonl")]
        if not found:
            return False
        seen = {(ev.variant, ev.round) for ev in events.read_jsonl(str(found[0])) if ev.event == "round_started"}
        return len({v for v, r in seen if r >= 2}) == 2

    wait_for(both_in_round_two, what="both variants in their second round")
    processes = family(proc)
    assert len(processes) >= 3, "two workers alive (one measuring, one waiting)"
    for p in (processes if to == "every process" else processes[:1]):
        p.send_signal(signal.SIGTERM)
    out, err = ended(proc, processes, timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    doc = json.loads(open(os.path.join(run_dir(runs), "results.json")).read())
    for v in doc["variants"]:
        assert v["verdict"] == "stopped", (v["name"], v["verdict"], v["error"])
        assert [r["round"] for r in v["rounds"]][:2] == [1, 2]
        assert v["stats"]["n"] == sum(1 for it in records(v) if it["kind"] == "timed") > 0
    assert "comparison (overhead" in out
    assert_nothing_left(processes, tmp_path)
