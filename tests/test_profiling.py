"""The profiled window, its traces and their summary, on real runs (real worker, real torch.profiler).

One exported run (simplenet through torchscript and through the bridge, 4 timed and 3
profiled iterations: conftest's `exported`, which the trace servers' tests share) is shared
by most tests here; the rest run their own small variants.
The GPU part of the trace summary is checked on a small hand-written trace, because no
GPU trace can be produced on a machine without one.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import statistics

import pytest

from conftest import EXPORTED_PROFILE, EXPORTED_TIMED, EXPORTED_VARIANTS
from couplescope.protocol.contract import TRACE_DIR_ENV
from couplescope.worker.profiling import window_shape
from couplescope.core.session import Listener
from couplescope.protocol.spec import RunSpec
from couplescope.frontends.cli.trace_lines import format_lines
from couplescope.worker.trace_summary import self_times, summarize_events, summarize_files
from couplescope.results.saved import iteration_records as records

VARIANTS = EXPORTED_VARIANTS
TIMED, PROFILED = EXPORTED_TIMED, EXPORTED_PROFILE


@pytest.fixture
def run(exported):
    """(run directory, results.json, stdout) of conftest's real exported two-variant run (the
    tests that take it are in its xdist group, on the worker that makes it)."""
    return exported.directory, exported.results, exported.stdout


def variant(results, name):
    return next(v for v in results["variants"] if v["name"] == name)


def trace_file(run_dir, name):
    (path,) = glob.glob(os.path.join(run_dir, "traces", name, "*.pt.trace.json.gz"))
    return path


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_profiled_iterations_are_reported_but_never_in_the_statistics(run):
    _, results, _ = run
    for name in VARIANTS:
        v = variant(results, name)
        kinds = [it["kind"] for it in records(v)]
        assert kinds == ["warmup"] + ["timed"] * TIMED + ["profiled"] * PROFILED
        profiled = [it for it in records(v) if it["kind"] == "profiled"]
        assert all(it["profiled"] and it["passed"] for it in profiled)
        timed = [it["seconds"] for it in records(v) if it["kind"] == "timed"]
        assert v["stats"]["n"] == TIMED
        assert v["stats"]["median"] == pytest.approx(statistics.median(timed))
        assert v["stats"]["max"] == max(timed)  # a slower profiled iteration would show here
        warm, rec = window_shape(PROFILED)
        assert v["profile"]["status"] == "ok"
        assert (v["profile"]["warmup_iterations"], v["profile"]["recorded_iterations"]) == (warm, rec)


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_trace_layout_is_one_tensorboard_run_per_variant(run):
    run_dir, results, _ = run
    assert sorted(os.listdir(os.path.join(run_dir, "traces"))) == sorted(VARIANTS)
    for name in VARIANTS:
        path = trace_file(run_dir, name)
        assert os.path.basename(path).startswith(name + ".")   # the worker is the variant
        profile = variant(results, name)["profile"]
        assert profile["trace_dir"] == f"traces/{name}"
        assert profile["trace_files"] == [os.path.relpath(path, run_dir)]
        assert glob.glob(os.path.join(run_dir, "traces", name, "events.out.tfevents.*"))
    with open(os.path.join(run_dir, "events.jsonl"), encoding="utf-8") as f:
        written = [json.loads(line) for line in f if '"trace_written"' in line]
    assert sorted(ev["variant"] for ev in written) == sorted(VARIANTS)
    assert all(os.path.exists(ev["path"]) for ev in written)


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_phase_ranges_and_metadata_are_in_the_trace_by_name(run):
    run_dir, _, _ = run
    for name in VARIANTS:
        with gzip.open(trace_file(run_dir, name), "rt", encoding="utf-8") as f:
            trace = json.load(f)
        names = {ev.get("name") for ev in trace["traceEvents"] if ev.get("cat") == "user_annotation"}
        assert {"couplescope/marshal_in", "couplescope/forward", "couplescope/marshal_out"} <= names
        assert trace["distributedInfo"] == {"rank": 0, "world_size": 1, "backend": "none"}
        assert trace["couplescope_spec"]["model"] == "simplenet"
        assert trace["record_shapes"] == 1 and trace["profile_memory"] == 1


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_trace_summary_is_stored_and_printed(run):
    _, results, stdout = run
    for name in VARIANTS:
        summary = variant(results, name)["trace_summary"]
        _, recorded = window_shape(PROFILED)
        assert summary["iterations"] == recorded
        assert summary["phases"]["forward"]["count"] == recorded
        assert any(op["name"] == "aten::linear" or op["name"] == "aten::addmm" or op["name"] == "aten::mm"
                   for op in summary["top_operators"])
        assert summary["gpu"] is None
    assert stdout.count("trace: top operators by self time: ") == len(VARIANTS)
    assert stdout.count("trace: time per phase under the profiler (per iteration; not the timings): ") \
        == len(VARIANTS)
    assert f"traces: couplescope --tensorboard {run[0]}" in stdout


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_scalars_hold_every_iteration(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, results, _ = run
    for name in VARIANTS:
        acc = EventAccumulator(os.path.join(run_dir, "traces", name))
        acc.Reload()
        timed = [s.value for s in acc.Scalars("iteration_seconds/timed")]
        expected = [it["seconds"] for it in records(variant(results, name)) if it["kind"] == "timed"]
        assert timed == pytest.approx(expected, rel=1e-6)   # float32 in the event file
        assert len(acc.Scalars("iteration_seconds/profiled")) == PROFILED
        assert len(acc.Scalars("phase_seconds/forward")) == 1 + TIMED + PROFILED


@pytest.mark.e2e
@pytest.mark.xdist_group("exported-run")
def test_trace_summary_from_a_real_trace_file(run):
    run_dir, _, _ = run
    path = trace_file(run_dir, "simplenet-torchscript")
    summary = summarize_files([path])
    ops = summary["top_operators"]
    assert ops and [o["self_seconds"] for o in ops] == sorted((o["self_seconds"] for o in ops), reverse=True)
    assert all(0 <= o["self_seconds"] <= o["total_seconds"] + 1e-12 for o in ops)
    assert sum(o["self_share"] for o in ops) <= 1.0 + 1e-9
    # a phase range contains the model's operators, so it cannot be shorter than them
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    forward = [e for e in events if e.get("name") == "couplescope/forward"]
    assert summary["phases"]["forward"]["total_seconds"] == pytest.approx(sum(e["dur"] for e in forward) / 1e6)
    lines = format_lines(summary)
    assert lines[0].startswith("trace: top operators by self time: " + ops[0]["name"])


@pytest.mark.parametrize("ranges", ["clock's", "record_function"])
def test_the_python_clock_s_phase_ranges_are_user_annotations_around_their_operators(ranges, tmp_path,
                                                                                      monkeypatch):
    """The phase clock's ranges are the kind of event record_function (and the native host's
    at::RecordFunction(USER_SCOPE)) makes, whichever way it opens them, with the phase's
    operators inside; with profiling off it opens none."""
    import torch
    from torch.profiler import profile

    from couplescope.backends import clock as clock_module

    if ranges == "record_function":   # what the clock falls back to without torch's bindings
        monkeypatch.setattr(clock_module, "_RANGE", clock_module._record_function_range())
    clock = clock_module.PhaseClock()
    with profile() as prof:
        clock.profiling = True
        with clock("forward"):
            torch.ones(4).add_(1)
        clock.profiling = False
        with clock("marshal_out"):
            torch.ones(4).add_(1)
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with open(tmp_path / "trace.json", encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    (phase,) = [e for e in events if e["name"].startswith("couplescope/")]
    assert phase["name"] == "couplescope/forward" and phase["cat"] == "user_annotation"
    adds = sorted((e for e in events if e["name"] == "aten::add_"), key=lambda e: e["ts"])
    assert len(adds) == 2
    assert phase["ts"] <= adds[0]["ts"] and adds[0]["ts"] + adds[0]["dur"] <= phase["ts"] + phase["dur"]
    assert not phase["ts"] <= adds[1]["ts"] <= phase["ts"] + phase["dur"]
    assert set(clock.phases) == {"forward", "marshal_out"}


def test_self_time_subtracts_direct_children_only():
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "mid", "pid": 1, "tid": 1, "ts": 1, "dur": 6},
        {"ph": "X", "cat": "cpu_op", "name": "leaf", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
        {"ph": "X", "cat": "cpu_op", "name": "other-thread", "pid": 1, "tid": 2, "ts": 1, "dur": 8},
    ]
    own = {ev["name"]: s for ev, s in self_times(events)}
    assert own == {"outer": 4, "mid": 3, "leaf": 3, "other-thread": 8}


def test_gpu_figures_busy_idle_gaps_and_cuda_graph_flag():
    """Hand-written GPU events (no GPU here): two kernels on a stream in a 100 us step."""
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}
    kernels = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 20},
               {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 40, "dur": 20}]
    gpu = summarize_events([step, *kernels])["gpu"]
    assert gpu["busy_share"] == pytest.approx(0.4) and gpu["idle_share"] == pytest.approx(0.6)
    assert gpu["launch_gaps"]["count"] == 1 and gpu["launch_gaps"]["median_seconds"] == pytest.approx(10e-6)
    assert gpu["reliable"] is True
    replay = {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 5, "dur": 2}
    gpu = summarize_events([step, replay, *kernels])["gpu"]
    assert gpu["reliable"] is False and gpu["cuda_graph_replays"] is True
    assert "unreliable" in format_lines(summarize_events([step, replay, *kernels]))[-1]
    assert summarize_events([step])["gpu"] is None


class EnvPerVariant(Listener):
    """Gives a worker extra environment variables, by variant label."""

    def __init__(self, env_by_label):
        self.env_by_label = env_by_label

    def worker_env(self, spec):
        return self.env_by_label.get(spec.label, {})


@pytest.mark.e2e
def test_profiler_failure_keeps_the_timings(tmp_path):
    from couplescope.frontends.api import run as run_specs

    blocker = tmp_path / "a-file"
    blocker.write_text("the trace directory cannot be created under a file\n")
    spec = RunSpec(model="simplenet", warmup=1, iterations=3, profile_iterations=2, name="broken")
    doc = run_specs([spec], listeners=[EnvPerVariant({"broken": {TRACE_DIR_ENV: str(blocker / "traces")}})])
    (v,) = doc["variants"]
    assert v["status"] == "finished" and v["checks_passed"]
    assert v["stats"]["n"] == 3
    assert v["profile"]["status"] == "failed" and v["profile"]["error"]
    assert any("profiling failed" in d["message"] for d in v["diagnostics"])


@pytest.mark.e2e
def test_operator_budget_shortens_or_skips_the_window(tmp_path):
    """StrideNet at N = 16 dispatches about 1,600 operators per iteration."""
    from couplescope.frontends.api import run as run_specs

    specs = [RunSpec(model="stride", size=16, iterations=2, profile_iterations=3, profile_max_ops=500,
                     name="skipped"),
             RunSpec(model="stride", size=16, iterations=2, profile_iterations=3, profile_max_ops=2500,
                     name="shortened")]
    doc = run_specs(specs)
    skipped, shortened = doc["variants"]
    assert skipped["profile"]["status"] == "skipped"
    assert not [it for it in records(skipped) if it["kind"] == "profiled"]
    assert any("profiling skipped" in d["message"] for d in skipped["diagnostics"])
    assert skipped["stats"]["n"] == 2 and skipped["status"] == "finished"
    assert shortened["profile"]["status"] == "ok"
    assert shortened["profile"]["recorded_iterations"] == 1 and shortened["profile"]["reduced_from"] == 2
    assert len([it for it in records(shortened) if it["kind"] == "profiled"]) == 2
    assert 1000 < shortened["profile"]["operators_per_iteration"] <= 2500
    assert shortened["trace_summary"]["iterations"] == 1


@pytest.mark.e2e
def test_without_export_the_summary_stays_and_no_trace_is_left(tmp_path):
    from couplescope.frontends.api import run as run_specs

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    spec = RunSpec(model="simplenet", iterations=2, profile_iterations=2)
    doc = run_specs([spec], listeners=[EnvPerVariant({spec.label: {"TMPDIR": str(scratch)}})])
    (v,) = doc["variants"]
    assert v["profile"]["status"] == "ok" and v["profile"]["trace_files"] == []
    assert v["trace_summary"]["phases"]["forward"]["count"] == 1
    assert not glob.glob(str(scratch / "couplescope-trace-*"))


@pytest.mark.e2e
@pytest.mark.xdist_group("rounds-run")   # (conftest.rounds_run: made once, on one worker)
def test_profile_iterations_zero_turns_profiling_off(rounds_run):
    """conftest's run in rounds, made with --profile-iterations 0."""
    for v in rounds_run.results["variants"]:
        assert "profile" not in v and "trace_summary" not in v
        assert {it["kind"] for it in records(v)} == {"warmup", "timed"}


def test_unwritable_export_directory_exits_2_and_writes_nothing(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = cli("--model", "simplenet", "--iterations", "1", "--export", blocker / "runs",
               env={"TMPDIR": str(scratch)})
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "cannot be written" in proc.stderr or "not a directory" in proc.stderr
    assert proc.stdout == ""
    assert os.listdir(scratch) == []


@pytest.mark.mpi
def test_under_mpi_each_rank_is_a_worker_of_the_variant(tmp_path, monkeypatch):
    from couplescope.frontends.api import run as run_specs

    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    spec = RunSpec(model="simplenet", backend="mpi", ranks=2, iterations=2, profile_iterations=2)
    doc = run_specs([spec], export=str(tmp_path), telemetry_hz=0)
    (v,) = doc["variants"]
    assert v["status"] == "finished", v["error"]
    assert v["name"] == "simplenet-mpi-torchscriptx2"   # the request names the variant
    (run_dir,) = glob.glob(str(tmp_path / "*"))
    pattern = os.path.join(run_dir, "traces", v["name"], "*.pt.trace.json.gz")
    files = sorted(os.path.basename(p) for p in glob.glob(pattern))
    assert [f.split(".")[0] for f in files] == ["rank0", "rank1"]
    for rank, name in enumerate(files):
        with gzip.open(os.path.join(run_dir, "traces", v["name"], name), "rt", encoding="utf-8") as f:
            assert json.load(f)["distributedInfo"] == {"rank": rank, "world_size": 2, "backend": "mpi"}
