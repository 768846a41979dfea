"""The parent's side on recorded real runs: Session, printer, exporters and results,
fed by couplescope.core.replay instead of worker processes (tests/fixtures/record.py
made the recordings). Fast: no torch, no worker."""

from __future__ import annotations

import io
import json
import os

import pytest

from couplescope.core import pipeline, replay
from couplescope.core.request import RunRequest
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.protocol import events
from couplescope.results.saved import iteration_records as records

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
NAMES = ("two-backends", "layout-c", "mpi", "telemetry", "dies", "compiled", "nodes", "many-ranks")


def recorded(name: str) -> list[dict]:
    return replay.read(os.path.join(FIXTURES, f"{name}.jsonl"))


def replay_run(name: str, export=None, quiet=False):
    """Replay a recording through the pipeline with the headless printer; (outcome, stdout, stderr)."""
    evs = recorded(name)
    specs = replay.specs_of(evs)
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(specs), out=out, err=err, quiet_iterations=quiet)
    req = RunRequest(title=name, specs=tuple(specs), export=export, telemetry_hz=0)
    outcome = pipeline.run(req, [printer], workers=replay.replayer(evs))
    printer.close()
    return outcome, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_recorded_runs_emit_only_what_the_protocol_table_documents(name):
    evs = recorded(name)
    assert evs, name
    assert [events.conforms(ev) for ev in evs if events.conforms(ev)] == []


def test_the_printer_shows_the_reference_lines_statistics_and_the_comparison():
    outcome, out, err = replay_run("two-backends")
    assert outcome.exit_code == 0
    assert out.count("PASSED :: [check iteration") == 10          # the first 5 of 12 per variant
    assert out.count("7 more checks PASSED (--verbose prints every one)") == 2
    assert "FAILED" not in out
    assert out.count("sample size: 12") == 2
    assert "== simplenet-torchscript (1/2): simplenet, torchscript, cpu, 1 warm-up + 12 iterations ==" in out
    assert "== simplenet-bridge-eager (2/2): simplenet, bridge, bridge model eager, cpu" in out
    assert "profiled: 2 iteration(s)" in out and "trace: top operators by self time" in out
    table = out.split("comparison (overhead = call minus forward):")[1]
    assert "simplenet-torchscript" in table and "simplenet-bridge-eager" in table and "1.00x" in table
    assert "telemetry: worker CPU" in out


def test_compile_times_are_printed_apart_from_the_load_and_compared():
    """aoti compiled by the native variant and found in the cache by the python one, the
    bridge's torch.compile: a line each under the heading, never in the load time, and a
    compile column in the comparison."""
    outcome, out, _ = replay_run("compiled")
    assert outcome.exit_code == 0
    after_heading = out.split("== simplenet-aoti-2 (3/6)")[1].splitlines()
    compiled, loaded = after_heading[1:3]
    assert compiled.startswith("compiled with AOTInductor in ") and "(torch.export " in compiled
    assert "; cached for later runs: " in compiled and compiled.endswith("/model.pt2")
    assert loaded.startswith("model loaded in ") and " ms " in loaded
    assert out.count("AOTInductor package from the cache, compile 0 s: ") == 1
    assert out.count("compiled with torch.compile in ") == 2
    table = out.split("comparison (overhead = call minus forward):")[1].splitlines()
    assert table[1].split() == ["variant", "median", "IQR", "vs", "fastest", "forward", "overhead",
                                "compile", "checks"]
    cells = {line.split()[0]: line.split()[-2] for line in table[3:] if line.strip()}
    assert cells["simplenet-torchscript-2"] == "-" and cells["simplenet-aoti-2-python-host"] == "cached"
    doc = outcome.builder.document()
    by_name = {v["name"]: v for v in doc["variants"]}
    aoti = by_name["simplenet-aoti-2"]
    assert aoti["compile"]["status"] == "compiled" and aoti["compile"]["seconds"] > aoti["load_seconds"]
    assert by_name["simplenet-aoti-2-python-host"]["compile"]["seconds"] == 0.0
    assert "compile" not in by_name["simplenet-torchscript-2"]
    rows = {r["name"]: r for r in doc["comparison"]}
    assert rows["simplenet-bridge-compiled-2"]["compile_status"] == "compiled"
    assert rows["simplenet-torchscript-2"]["compile_seconds"] is None


def test_quiet_prints_only_failed_iterations():
    outcome, out, _ = replay_run("layout-c", quiet=True)
    assert outcome.exit_code == 1
    timed = [line for line in out.splitlines() if line.startswith("FAILED :: [check iteration")]
    assert len(timed) == 4 and "PASSED ::" not in out
    assert "warm-up FAILED :: [check iteration 1" in out   # a failed warm-up is always shown


def test_a_transposing_layout_fails_every_check_and_exits_1():
    outcome, out, _ = replay_run("layout-c")
    assert outcome.exit_code == 1
    assert len([line for line in out.splitlines() if line.startswith("FAILED :: [check iteration")]) == 4
    assert "layout c" in out and "maximum relative error = " in out


def test_mpi_replay_prints_the_reference_example_and_the_per_rank_table():
    outcome, out, _ = replay_run("mpi")
    assert outcome.exit_code == 0
    assert ("input on rank 0: [  0.0,  1.0,  2.0,  3.0,  4.0]\ninput on rank 1: [  1.0,  2.0,  3.0,  4.0,  5.0]\n"
            "output on rank 0: [  0.0,  2.0,  4.0,  6.0,  8.0]\noutput on rank 1: [  2.0,  4.0,  6.0,  8.0, 10.0]") in out
    assert "2 ranks of torchscript" in out and "per rank (timed iterations):" in out
    assert "load imbalance (max/mean across ranks)" in out
    doc = outcome.builder.document()
    (v,) = doc["variants"]
    assert v["mpi"]["ranks"] == 2 and v["stats"]["n"] == 6


def test_a_two_node_run_is_grouped_by_node_and_its_telemetry_is_per_node():
    """A real run on the two-node Slurm (n1, n2), played back: the table and results.json
    name the nodes; each node's samples came from its own sampler, holding its own rank."""
    outcome, out, _ = replay_run("nodes")
    assert outcome.exit_code == 0
    table = out.split("per rank (timed iterations):\n", 1)[1].splitlines()
    assert table[0].split()[:3] == ["rank", "node", "local"]
    assert [row.split()[:3] for row in table[2:4]] == [["0", "n1", "0"], ["1", "n2", "0"]]
    assert table[4].startswith("per node: n1 (rank 0, 1 CPU), step median ")
    assert "telemetry (sampled on each of 2 nodes, ranks summed): ranks CPU mean" in out
    assert "\n  n1: ranks CPU mean" in out and "\n  n2: ranks CPU mean" in out
    (v,) = outcome.builder.document()["variants"]
    assert [(r["rank"], r["node"]) for r in v["ranks"]] == [(0, "n1"), (1, "n2")]
    assert v["mpi"]["nodes"]["n2"]["ranks"] == [1] and v["mpi"]["nodes"]["n1"]["cpus"] == 1
    telemetry = v["telemetry"]
    assert telemetry["summary"]["nodes"] == 2 and set(telemetry["nodes"]) == {"n1", "n2"}
    for node, rank in (("n1", 0), ("n2", 1)):
        series = {k for entry in telemetry["nodes"][node]["timeline"] for k in entry}
        assert {f"rank{rank}/cpu_percent", f"rank{rank}/rss_mib", "load"} <= series, series
        assert f"rank{1 - rank}/rss_mib" not in series
    # the job's figures are the nodes' sums: its RSS peak is at least each node's
    peaks = [telemetry["nodes"][n]["summary"]["rss_peak"] for n in ("n1", "n2")]
    assert telemetry["summary"]["rss_peak"] >= max(peaks)


def test_many_ranks_print_a_check_line_per_step_and_keep_every_call():
    """10 real ranks (mpiexec --oversubscribe): rank 0 sent each rank's calls as one
    `iterations` event per flush; the printer gives one line per step, not per rank; the
    results hold every rank's every call."""
    evs = recorded("many-ranks")
    assert any(e["event"] == "iterations" and e.get("rank") is not None for e in evs)
    outcome, out, _ = replay_run("many-ranks")
    assert outcome.exit_code == 0
    steps = [line for line in out.splitlines() if line.startswith("PASSED :: [check iteration")]
    assert len(steps) == 5 and all(" on 10 ranks (slowest: rank " in line for line in steps), steps
    assert "1 more check PASSED (--verbose prints every one)" in out
    assert "check iteration 1 on rank" not in out
    (v,) = outcome.builder.document()["variants"]
    timed = [it for it in records(v) if it["kind"] == "timed"]
    assert sorted((it["rank"], it["index"]) for it in timed) == [(r, i) for r in range(10) for i in range(1, 7)]
    assert v["stats"]["n"] == 6 and v["mpi"]["ranks"] == 10 and "iterations_kept" not in v


def test_results_json_keeps_each_step_s_slowest_call_past_its_bound(monkeypatch):
    from couplescope.results import builder as builder_mod

    monkeypatch.setattr(builder_mod, "RANKED_CALLS_KEPT", 20)
    outcome, _, _ = replay_run("many-ranks")
    (v,) = outcome.builder.document()["variants"]
    timed = [it for it in records(v) if it["kind"] == "timed"]
    assert [it["index"] for it in timed] == [1, 2, 3, 4, 5, 6]
    assert v["iterations_kept"].startswith("each step's slowest rank: 7 of 70 calls")
    steps = {row["index"]: row for row in v["mpi"]["per_iteration"]}
    assert all(it["rank"] == steps[it["index"]]["slowest_rank"] for it in timed)
    assert len(v["mpi"]["per_rank"]) == 10   # every rank's statistics still


def test_a_worker_that_died_is_a_failed_variant_with_its_reason():
    outcome, out, err = replay_run("dies")
    assert outcome.exit_code == 1
    assert "worker ended with signal 9 after warm-up iteration 1" in err
    # what the module printed, under the variant's name, before the line saying it died
    printed = err.index("dies.py-bridge | [compute] call 1")
    assert printed < err.index("dies.py-bridge | [compute] call 3") < err.index("worker ended with")
    (v,) = outcome.builder.document()["variants"]
    assert v["status"] == "failed" and v["error_kind"] == "error" and v["verdict"] == "error"


def test_diagnostics_in_a_recording_reach_the_printer():
    _, _, err = replay_run("telemetry")
    assert "warning: 4 torch threads on" in err


@pytest.mark.parametrize("name", NAMES)
def test_an_export_of_a_replay_writes_the_events_and_rebuilds_the_same_results(name, tmp_path):
    outcome, _, _ = replay_run(name, export=str(tmp_path))
    run_dir = outcome.run_directory
    assert run_dir and os.path.dirname(run_dir) == str(tmp_path)
    written = replay.read(os.path.join(run_dir, "events.jsonl"))
    assert written == recorded(name)
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    rebuilt = json.loads(json.dumps(replay.document(written, name), default=str, allow_nan=False))
    assert results == rebuilt


def test_trace_written_events_say_where_the_traces_went_in_results():
    evs = recorded("two-backends")
    doc = replay.document(evs)
    for v in doc["variants"]:
        profile = v["profile"]
        assert profile["trace_dir"] == f"traces/{v['name']}"
        assert profile["trace_files"] and all(f.startswith(profile["trace_dir"] + "/")
                                              for f in profile["trace_files"])


def test_specs_of_a_recording_are_its_variants_in_order():
    specs = replay.specs_of(recorded("two-backends"))
    assert [s.label for s in specs] == ["simplenet-torchscript", "simplenet-bridge-eager"]
    assert specs[1].bridge_model == "eager" and specs[0].iterations == 12


def test_worker_output_is_shown_for_a_users_module_or_a_variant_that_did_not_finish():
    """couplescope's own models print only the profiler's chatter: kept, not shown, unless
    the variant broke; a user's module's print()s are always shown."""
    import io

    from couplescope.frontends.cli.printer import HeadlessPrinter
    from couplescope.protocol import events

    def printed(model, finished):
        err = io.StringIO()
        printer = HeadlessPrinter(1, out=io.StringIO(), err=err)
        spec = {"model": model, "backend": "bridge", "device": "cpu", "layout": "fortran",
                "warmup": 1, "iterations": 3}
        printer.on_event(events.make("run_started", "v", spec=spec, environment={}))
        if finished:
            printer.on_event(events.make("variant_finished", "v", summary={}))
        printer.on_event(events.make("worker_output", "v", lines=["profiler_start"], total=1))
        return "v | profiler_start" in err.getvalue()

    assert not printed("simplenet", finished=True)
    assert printed("simplenet", finished=False)
    assert printed("/home/me/mine.py", finished=True)


def test_a_run_directory_is_named_by_the_runs_start_not_its_first_model_load(tmp_path, monkeypatch):
    """The directory appears at the first model_loaded (a native build may come first, for
    minutes), but its name is the time the run started."""
    import time as real_time

    from couplescope.export import run_dir

    started = real_time.mktime((2001, 2, 3, 4, 5, 6, 0, 0, -1))
    calls = []

    class Clock:   # run_dir's clock: the run starts in 2001, everything after is now
        def __getattr__(self, name):
            return getattr(real_time, name)

        def time(self):
            calls.append(1)
            return started if len(calls) == 1 else real_time.time()

    monkeypatch.setattr(run_dir, "time", Clock())
    outcome, _, _ = replay_run("two-backends", export=str(tmp_path))
    assert os.path.basename(outcome.run_directory) == "20010203-040506-two-backends"


def test_a_staged_run_copied_is_what_export_wrote(tmp_path):
    """How the app exports: the pipeline's own run directory, copied (Pipeline.copy_to)."""
    import time

    evs = recorded("two-backends")
    req = RunRequest(title="simplenet", specs=tuple(replay.specs_of(evs)), export=str(tmp_path / "staging"),
                     telemetry_hz=0)
    run = pipeline.Pipeline(req, workers=replay.replayer(evs), summary_plot=False)
    outcome = run.run()
    copied = run.copy_to(str(tmp_path / "kept"))
    path = copied.path
    assert copied.summary_error is None and copied.missing == []
    assert os.path.getsize(os.path.join(path, "summary.png")) > 10_000
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(run.exporter.started))
    assert os.path.basename(path) == f"{stamp}-simplenet"             # the run's start, not now
    with open(os.path.join(outcome.run_directory, "results.json")) as a, open(os.path.join(path, "results.json")) as b:
        assert a.read() == b.read()
    # a replay's traces were written by the recorded run, not into the staging directory, so
    # its events copy unchanged (test_tui.py's export test moves real traces)
    assert replay.read(os.path.join(path, "events.jsonl")) == evs


def test_a_copy_keeps_results_first_and_names_what_it_could_not_copy(tmp_path, monkeypatch):
    """A full disk (every copy fails): results.json is written first, the files that could
    not be copied are removed and named; without room for results.json nothing is left."""
    import shutil

    from couplescope.export import run_copy

    outcome, _, _ = replay_run("two-backends", export=str(tmp_path / "staging"))
    document = json.load(open(os.path.join(outcome.run_directory, "results.json")))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copy2", full)
    copied = run_copy.copy_run(outcome.run_directory, str(tmp_path / "kept"), "two-backends", None, document)
    scalars = [m for m in copied.missing if "tfevents" in m]
    assert scalars and all(not os.path.exists(os.path.join(copied.path, m)) for m in copied.missing)
    assert json.load(open(os.path.join(copied.path, "results.json"))) == document
    monkeypatch.setattr(run_copy, "write_json_atomic", full)
    with pytest.raises(OSError):
        run_copy.copy_run(outcome.run_directory, str(tmp_path / "none"), "two-backends", None, document)
    assert os.listdir(tmp_path / "none") == []


def test_a_copied_runs_trace_events_point_into_the_copy(tmp_path):
    from couplescope.export import run_copy

    source = tmp_path / "staged"
    (source / "traces" / "v").mkdir(parents=True)
    (source / "traces" / "v" / "w.pt.trace.json.gz").write_bytes(b"trace")
    trace = str(source / "traces" / "v" / "w.pt.trace.json.gz")
    lines = [events.make("log", "v", message="first"),
             events.make("trace_written", "v", path=trace, relative_path="traces/v/w.pt.trace.json.gz")]
    (source / "events.jsonl").write_text("".join(events.dumps(ev) + "\n" for ev in lines))
    (source / "results.json").write_text('{"variants": []}')
    path = run_copy.copy_run(str(source), str(tmp_path / "kept"), "t", None, {"variants": []}).path
    copied = replay.read(os.path.join(path, "events.jsonl"))
    assert copied[0] == lines[0]
    assert copied[1]["path"] == os.path.join(path, "traces", "v", "w.pt.trace.json.gz")
    assert open(copied[1]["path"], "rb").read() == b"trace"
