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

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
NAMES = ("two-backends", "layout-c", "mpi", "telemetry", "dies", "compiled")


def recorded(name: str) -> list[dict]:
    return replay.read(os.path.join(FIXTURES, f"{name}.jsonl"))


def replay_run(name: str, export=None, quiet=False):
    """Replay a recording through the pipeline with the headless printer; (outcome, stdout, stderr)."""
    evs = recorded(name)
    specs = replay.specs_of(evs)
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(specs), out=out, err=err, quiet_iterations=quiet)
    req = RunRequest(title=name, specs=tuple(specs), export=export, telemetry_hz=0)
    outcome = pipeline.run(req, [printer], start_worker=replay.replayer(evs))
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
    assert out.count("PASSED :: [check iteration") == 24          # 12 timed per variant
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
