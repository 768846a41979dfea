"""The worker seam (couplescope.core.workers) with workers that need nothing installed:
synthetic ones that make their events up from the spec, and recordings played back with
`--replay`. The printer, exporters, results and the app run for real on their events;
no torch, C++ compiler, mpi4py or recorded file is needed, for a new event kind either.
Also: the run's native build worked out once in the parent, and the one exit-code rule."""

from __future__ import annotations

import io
import json
import os
import signal
import sys

import pytest

from couplescope.core import pipeline, replay, synthetic
from couplescope.core.runner import LiveWorkers
from couplescope.core.workers import WorkerHandle, Workers
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.protocol import contract, events
from couplescope.protocol.spec import RunSpec
from couplescope.results.saved import iteration_records as records

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def run(specs, script=None, export=None, quiet=False, output=()):
    """A synthetic run through the real pipeline and printer: (outcome, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(specs), out=out, err=err, quiet_iterations=quiet)
    workers = synthetic.SyntheticWorkers(script, output=output)
    outcome = pipeline.run(synthetic.request(specs, export=export), [printer], workers=workers)
    printer.close()
    return outcome, out.getvalue(), err.getvalue()


SIMPLE = RunSpec(model="simplenet", warmup=2, iterations=7, profile_iterations=1)


def test_every_kind_of_worker_is_the_seam():
    spec = SIMPLE.replace(name="v")
    for workers in (LiveWorkers(), replay.replayer([]), synthetic.SyntheticWorkers()):
        assert isinstance(workers, Workers)
    assert isinstance(synthetic.SyntheticWorkers().start(spec, {}), WorkerHandle)
    assert isinstance(replay.replayer([]).start(spec, {}), WorkerHandle)


@pytest.mark.parametrize("spec", [SIMPLE, RunSpec(model="simplenet", backend="mpi", ranks=3, iterations=4)])
def test_synthetic_events_are_what_the_table_allows(spec):
    played = synthetic.events_for(spec.replace(name="v"))
    assert [events.conforms(ev) for ev in played if events.conforms(ev)] == []
    assert played[0].event == "run_started" and played[-1].event == "variant_finished"
    assert played[0].environment["synthetic"] is True


def test_synthetic_call_times_are_the_same_on_every_run():
    one, two = (synthetic.events_for(SIMPLE.replace(name="v")) for _ in range(2))
    assert [c.seconds for ev in one for c in ev.calls] == [c.seconds for ev in two for c in ev.calls]


def test_the_printer_and_results_follow_a_synthetic_run():
    specs = [SIMPLE.replace(name="a"), SIMPLE.replace(name="b", seed=1)]
    outcome, out, _ = run(specs)
    assert outcome.exit_code == 0
    assert out.count("PASSED :: [check iteration") == 10   # the first 5 of each, then a count
    assert out.count("2 more checks PASSED (--verbose prints every one)") == 2
    assert out.count("sample size: 7") == 2
    assert "== a (1/2): simplenet, torchscript (synthetic), cpu, 2 warm-up + 7 iterations ==" in out
    assert "profiled: 1 iteration(s)" in out
    doc = outcome.builder.document()
    assert [v["name"] for v in doc["variants"]] == ["a", "b"]
    assert all(v["verdict"] == "passed" and v["stats"]["n"] == 7 for v in doc["variants"])
    assert {r["name"] for r in doc["comparison"]} == {"a", "b"}


def test_a_multi_process_variant_reports_per_rank_without_mpi():
    """The mpi backend's spec: calls per rank, the per-rank table and the slowest rank's
    statistics, with no mpi4py or mpiexec."""
    spec = RunSpec(model="simplenet", backend="mpi", ranks=3, warmup=1, iterations=4, profile_iterations=0,
                   name="ranks")
    outcome, out, _ = run([spec])
    assert outcome.exit_code == 0
    assert "per rank (timed iterations):" in out and "load imbalance" in out
    (v,) = outcome.builder.document()["variants"]
    assert v["stats"]["n"] == 4 and len(records(v)) == 3 * 5
    assert sorted(v["mpi"]["per_rank"]) == ["0", "1", "2"]


def test_an_event_kind_no_recording_has_reaches_the_printer_and_results():
    """What a script adds (here a compile before the load, which the synthetic worker
    does not make by itself) is shown and saved like a worker's own event."""
    def compiled(spec, played):
        at = next(i for i, ev in enumerate(played) if ev.event == "model_loaded")
        return played[:at] + [events.make("model_compiled", spec.label, status="compiled", seconds=2.5,
                                          compiler="AOTInductor", export_seconds=1.0,
                                          package="/cache/model.pt2")] + played[at:]
    outcome, out, _ = run([SIMPLE.replace(name="c")], script=compiled)
    assert "compiled with AOTInductor in 2.500 s (torch.export 1.000 s); cached for later runs: /cache/model.pt2" in out
    (v,) = outcome.builder.document()["variants"]
    assert v["compile"] == {"status": "compiled", "seconds": 2.5, "compiler": "AOTInductor",
                            "export_seconds": 1.0, "package": "/cache/model.pt2"}


def test_a_worker_that_ends_without_an_ending_event_is_a_crash_with_its_output():
    def dies(spec, played):
        calls = [ev for ev in played if ev.event == "iterations"]
        return played[:played.index(calls[1])]   # after the warm-up batch
    outcome, out, err = run([SIMPLE.replace(name="d")], script=dies, output=["a line it printed"])
    assert outcome.exit_code == 1
    assert "couplescope: d: the synthetic worker ended early" in err
    assert "d | a line it printed" in err   # a variant that did not finish shows its output
    (v,) = outcome.builder.document()["variants"]
    assert v["verdict"] == "error" and v["stats"]["n"] == 0


def test_a_failed_check_fails_the_run():
    def wrong(spec, played):
        return [events.make("iteration", spec.label, index=1, kind="timed", seconds=1e-3, phases={},
                            max_rel_error=2.0, passed=False, error=None) if ev.event == "iterations"
                and ev.kind == "timed" else ev for ev in played]
    outcome, out, _ = run([SIMPLE.replace(name="w")], script=wrong)
    assert outcome.exit_code == 1 and "FAILED :: [check iteration 1" in out


def test_an_exported_synthetic_run_rebuilds_the_same_results(tmp_path):
    outcome, _, _ = run([SIMPLE.replace(name="a"), SIMPLE.replace(name="b")], export=str(tmp_path))
    with open(os.path.join(outcome.run_directory, "results.json")) as f:
        saved = json.load(f)
    rebuilt = replay.document(replay.read(os.path.join(outcome.run_directory, "events.jsonl")), saved["title"])
    assert json.loads(json.dumps(rebuilt)) == {k: v for k, v in saved.items() if k not in ("run_directory", "exit_code")}


# -- typed events: a batch expanded once -----------------------------------------------------

def test_a_parsed_batch_is_expanded_once_and_shared():
    (batch,) = [ev for ev in synthetic.events_for(SIMPLE.replace(name="v")) if ev.event == "iterations"
                and ev.kind == "timed"]
    parsed = events.parse(events.dumps(batch))
    assert isinstance(parsed, events.Iterations) and parsed == batch   # the same JSON object
    assert parsed.calls is parsed.calls and len(parsed.calls) == 7
    first = parsed.calls[0]
    assert isinstance(first, events.Iteration) and first.index == 1 and first.kind == "timed"
    assert first.calls == (first,) and parsed.last_index == 7
    assert list(parsed.calls) == events.expand(dict(batch))   # what a call-by-call worker writes
    assert events.make("log", "v", message="m").verbatim is None   # optional, absent


def test_every_event_type_has_its_class_with_the_tables_fields():
    for name, kind in events.EVENTS.items():
        cls = events.CLASSES[name]
        assert cls.EVENT == name and getattr(events, cls.__name__) is cls
        assert set(cls.FIELDS) == set(kind.fields) and set(cls.OPTIONAL) == set(kind.optional)
        assert all(isinstance(getattr(cls, f), property) for f in (*kind.fields, *kind.optional))
    ev = events.typed({"event": "run_started", "t": 0.0, "variant": "v",
                       "spec": {"model": "simplenet", "iterations": 3, "from_a_later_version": 1},
                       "environment": {}})
    assert ev.run_spec.iterations == 3 and ev.run_spec.backend == "torchscript"


# -- --replay FILE ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, code, header", [
    ("two-backends", 0, "== simplenet-torchscript (1/2): simplenet, torchscript, cpu,"),
    ("layout-c", 1, "== stride-torchscript-16-layout-c (1/1): stride, torchscript, cpu, layout c,"),
    ("dies", 1, "== dies.py-bridge (1/1): ")])
def test_replay_prints_a_recording_as_it_was_shown_with_its_exit_code(command, name, code, header):
    """The recorded variants as they ran, named as they were (no -python-host on a machine
    without a compiler)."""
    r = command("--replay", os.path.join(FIXTURES, f"{name}.jsonl"))
    assert r.returncode == code, r.stderr
    assert header in r.stdout
    if name == "dies":
        assert "worker ended with signal 9 after warm-up iteration 1" in r.stderr
    else:
        assert "comparison (overhead = call minus forward):" in r.stdout


def test_replay_refuses_options_it_would_ignore_and_files_without_a_run(command, tmp_path):
    r = command("--replay", os.path.join(FIXTURES, "two-backends.jsonl"), "--model", "simplenet", "--iterations", "3")
    assert r.returncode == 2 and r.stderr.strip() == (
        "couplescope: --replay plays a recorded run as it was made; it takes no --model, --iterations")
    empty = tmp_path / "events.jsonl"
    empty.write_text("not an event\n")
    r = command("--replay", str(empty))
    assert r.returncode == 2 and "no run in it" in r.stderr and r.stderr.count("\n") == 1
    r = command("--replay", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "No such file" in r.stderr


def test_replay_is_hidden_from_help(command):
    assert "--replay" not in command("--help").stdout


def test_a_replay_gives_the_recorded_runs_document(command):
    r = command("--replay", os.path.join(FIXTURES, "sweep.jsonl"), "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    recorded = replay.document(replay.read(os.path.join(FIXTURES, "sweep.jsonl")), "deep-linear")
    assert doc["title"] == "deep-linear" and len(doc["variants"]) == 6
    assert doc == json.loads(json.dumps(recorded))


# -- the native host, worked out once per run ---------------------------------------------------

def test_the_native_build_key_is_worked_out_once_per_run(monkeypatch, tmp_path):
    from couplescope.backends import native

    keys = []
    monkeypatch.setattr(native, "build_key", lambda: keys.append(1) or "the-key")
    monkeypatch.setattr(native, "ensure_built", lambda say, key: (str(tmp_path / f"{key}.so"), 12.5))
    workers, emitted = LiveWorkers(), []
    specs = [RunSpec(model="simplenet", host=host, name=f"v{i}")
             for i, host in enumerate(("python", "native", "native", "native"))]
    for spec in specs:
        workers.prepare(spec, emitted.append)
    assert len(keys) == 1
    assert [(ev.variant, ev.status) for ev in emitted] == [("v1", "built"), ("v2", "cached"), ("v3", "cached")]
    assert len({ev.directory for ev in emitted}) == 1
    assert workers.env_for(specs[0]) == {}
    assert workers.env_for(specs[2]) == {contract.NATIVE_MODULE_ENV: str(tmp_path / "the-key.so")}


def test_a_failed_native_build_is_not_tried_again_for_the_next_variant(monkeypatch):
    from couplescope.backends import native

    tries = []

    def fails(say, key):
        tries.append(key)
        raise native.NativeBuildError("c++: error: broken", "/cache/build.log")
    monkeypatch.setattr(native, "build_key", lambda: "k")
    monkeypatch.setattr(native, "ensure_built", fails)
    workers = LiveWorkers()
    for name in ("a", "b"):
        with pytest.raises(native.NativeBuildError, match="broken"):
            workers.prepare(RunSpec(model="simplenet", host="native", name=name), lambda ev: None)
    assert tries == ["k"]


# -- the exit code, decided in one place ------------------------------------------------------------

def test_the_exit_code_rule():
    code = contract.exit_code
    assert code() == 0 and code(outcomes={"passed"}) == 0
    assert code(outcomes={"passed", "failed"}) == code(outcomes={"error"}) == code(outcomes={"running"}) == 1
    assert code(outcomes={"failed", "usage"}) == 2
    assert code(outcomes={"failed", "usage", "stopped"}) == 130
    assert code(not_saved=True, outcomes={"stopped"}) == 3
    assert code(signal=signal.SIGTERM, not_saved=True, outcomes={"failed"}) == 143
    assert code(signal=signal.SIGHUP) == 129 and contract.exit_for_signal(signal.SIGINT) == 130
    assert code(refused=True) == 2 and code(output_lost=True) == 1
    assert set(contract.EXIT_CODES) >= {code(signal=s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def test_a_signal_in_the_middle_of_a_run_is_its_exit_code():
    """SIGTERM arriving while events are read (core.ending raises Ended in the main thread):
    what was measured is kept, the variant is stopped, and the run exits 143."""
    from couplescope.core.ending import Ended
    from couplescope.protocol.listener import Listener

    class TermAtTheTimedCalls(Listener):
        def on_event(self, ev):
            if ev.event == "iterations" and ev.kind == "timed":
                raise Ended(signal.SIGTERM)
    outcome = pipeline.run(synthetic.request([SIMPLE.replace(name="s"), SIMPLE.replace(name="never")]),
                           [TermAtTheTimedCalls()], workers=synthetic.SyntheticWorkers())
    assert outcome.exit_code == 143
    (v,) = outcome.builder.document()["variants"]
    assert v["verdict"] == "stopped" and len(records(v)) == 2 + 7   # the warm-up and the timed batch


def test_the_synthetic_and_replay_modules_import_no_torch():
    import subprocess

    code = ("import sys; from couplescope.core import synthetic, replay; "
            "from couplescope.protocol.spec import RunSpec; "
            "synthetic.events_for(RunSpec(model='simplenet', name='v')); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- the app, on events nobody recorded -----------------------------------------------------------

async def test_the_app_plays_a_synthetic_multi_process_variant():
    """The app's watch view and its run record on a variant of the mpi backend's shape,
    made up from its spec: no mpi4py, compiler or recording."""
    from couplescope.frontends.tui.app import CoupleScopeApp

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_tui_replay import SIZE, run_replay

    spec = RunSpec(model="simplenet", backend="mpi", ranks=2, warmup=1, iterations=5, profile_iterations=0,
                   name="two-ranks")
    app = CoupleScopeApp(load_catalogue=False, recording=replay.Recording(synthetic.events_for(spec)))
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        record = app.runs[1]
        assert record.status == "finished" and record.verdict() == "PASSED"
        (variant,) = record.builder.variants.values()
        assert variant.name == "two-ranks" and len(variant.timed) == 2 * 5
        plot = app.query_one("#plot")
        assert [p[1] for p in plot.points].count("timed") == 5   # the slowest rank per step


def test_the_parent_scale_benchmark_feeds_the_real_parent_through_the_seam():
    """benchmarks/parent_scale.py (issue 20's measure of the parent at 1024 ranks) plays its
    simulated job behind the session's worker seam; it broke once when the seam gained an
    argument, with nothing to notice. Run small, it must still reach the table with every
    simulated call counted."""
    import subprocess

    script = os.path.join(os.path.dirname(FIXTURES), os.pardir, "benchmarks", "parent_scale.py")
    done = subprocess.run([sys.executable, script, "--ranks", "16", "--iterations", "5", "--warmup", "2",
                           "--ranks-per-node", "8", "--step-ms", "0", "--no-export"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.split("figures: ", 1)[1].splitlines()[0])
    assert (figures["ranks"], figures["nodes"], figures["calls"], figures["exit"]) == (16, 2, 16 * 7, 0)
