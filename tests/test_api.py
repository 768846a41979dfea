"""The library API and the run directory, with real worker processes."""

import json
import os

import pytest

import couplescope
from couplescope import RunSpec
from couplescope.protocol import events
from couplescope.results.saved import iteration_records as records



@pytest.mark.e2e
def test_run_returns_the_results_document_and_writes_the_run_dir(tmp_path):
    specs = couplescope.load_preset("stride512", size=8, iterations=3, profile_iterations=0)
    doc = couplescope.run(specs, export=str(tmp_path))
    assert doc["exit_code"] == 0
    assert [v["name"] for v in doc["variants"]] == ["direct-torchscript", "bridge-torchscript",
                                                    "bridge-python"]
    run_dir = doc["run_directory"]
    on_disk = json.loads(open(os.path.join(run_dir, "results.json")).read())
    for v in on_disk["variants"]:
        assert set(v) >= {"name", "spec", "load_seconds", "iterations", "stats"}
        assert set(v["stats"]) == {"n", "min", "median", "mean", "max", "stddev", "iqr"}
        assert v["stats"]["n"] == 3
        for it in records(v):
            assert set(it) >= {"index", "warmup", "seconds", "phases", "max_rel_error", "passed"}
            assert set(it["phases"]) >= {"marshal_in", "forward", "marshal_out"}
    env = on_disk["environment"]
    for key in ("couplescope", "torch", "numpy", "torch_threads", "cpu_model", "cores", "hostname",
                "start_time"):
        assert key in env
    calls = [one for ev in events.read_jsonl(os.path.join(run_dir, "events.jsonl"))
             for one in events.expand(ev) if one["event"] == "iteration"]
    assert len(calls) == 3 * 4  # 1 warm-up + 3 each (in batches on the native host)
    # a second export never reuses the directory
    again = couplescope.run(RunSpec(model="simplenet", iterations=1, profile_iterations=0),
                            export=str(tmp_path))
    assert again["run_directory"] != run_dir and len(os.listdir(tmp_path)) == 2


@pytest.mark.e2e
def test_cgdrag_makes_two_calls_per_iteration_and_passes():
    doc = couplescope.run(RunSpec(model="cgdrag", size=32, iterations=2, profile_iterations=0,
                                  backend="bridge", bridge_model="eager"))
    v = doc["variants"][0]
    assert v["checks_passed"] and v["model"]["outputs"] == {"drag_u": [32, 40], "drag_v": [32, 40]}


def test_bad_spec_raises_before_running():
    with pytest.raises(couplescope.UsageError, match="unknown backend"):
        couplescope.run(RunSpec(model="simplenet", backend="carrier-pigeon"))
