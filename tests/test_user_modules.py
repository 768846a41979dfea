"""Debugging a user's bridge module (--model mine.py --backend bridge), end to end with real
workers: what it prints reaches the user, a crash says how far it got, and the variant's
name, heading and hints say that the user's own Python ran (not TorchScript)."""

import glob
import json
import os
import textwrap

import pytest

from conftest import run_cli
from fixtures.record import DIES
from couplescope.results.saved import iteration_records as records

pytestmark = pytest.mark.e2e

CHATTY = textwrap.dedent('''
    import time
    import numpy as np
    calls = 0
    def initialize(config):
        print("hello from initialize")
    def compute(inputs, output):
        global calls
        calls += 1
        print(f"call {calls} [not markup]")
        if calls in (2, 3):        # the first two timed calls (after one warm-up) are slow
            time.sleep(0.05)
        output[...] = 3.0 * inputs[0]
    def reference(inputs):
        return 3.0 * np.asarray(inputs[0])
''')

#: the recorded dying module (tests/fixtures/record.py), ending its process with os._exit
#: after two passing warm-up calls instead of SIGKILL after one
EXITS = DIES.replace("_calls == 3", "_calls == 4").replace("os.kill(os.getpid(), signal.SIGKILL)", "os._exit(3)")


@pytest.fixture(scope="module")
def chatty(tmp_path_factory):
    """(the command's result, its run directory) of CHATTY's run, its calls timed and
    profiled, exported: for the tests of what a module prints."""
    tmp_path = tmp_path_factory.mktemp("chatty")
    (tmp_path / "mine.py").write_text(CHATTY)
    runs = tmp_path / "runs"
    r = run_cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4",
                "--warmup", "1", "--iterations", "8", "--profile-iterations", "2", "--telemetry-hz", "0",
                "--export", runs, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [run] = list(runs.iterdir())
    return r, run


def test_prints_reach_the_user_and_the_run_directory_labelled_as_the_users_module(chatty):
    r, run = chatty
    # shown on stderr, each line under the variant's name, after the measurements
    assert "mine.py-bridge | hello from initialize" in r.stderr
    assert "mine.py-bridge | call 9 [not markup]" in r.stderr
    assert "mine.py-bridge | call" not in r.stdout
    # named and described by what ran: the user's module, not couplescope's TorchScript bridge
    assert "torchscript" not in r.stdout.lower(), r.stdout
    assert "== mine.py-bridge (1/1): " in r.stdout and "mine.py, bridge, user module, native host" in r.stdout
    # the warm-up hint, without blaming TorchScript
    assert "the model was still warming up; use --warmup" in r.stdout
    doc = json.loads((run / "results.json").read_text())
    variant = doc["variants"][0]
    log = (run / "mine.py-bridge.output.log").read_text().splitlines()
    # every line it printed, in order: a line per call (at least one per iteration)
    assert log[0] == "hello from initialize"
    assert log[1:] == [f"call {n} [not markup]" for n in range(1, len(log))]
    assert len(log) - 1 >= len(records(variant)) == 1 + 8 + 2
    assert variant["name"] == "mine.py-bridge" and variant["model"]["torchscript"] is False
    assert not any("TorchScript" in w for w in variant["warnings"])


def test_a_module_that_exits_says_how_far_it_got_and_keeps_its_warmup(cli, tmp_path):
    (tmp_path / "exits.py").write_text(EXITS)
    r = cli("--model", tmp_path / "exits.py", "--backend", "bridge", "--input-shape", "4",
            "--warmup", "2", "--iterations", "5", "--profile-iterations", "0", "--telemetry-hz", "0",
            "--export", tmp_path / "runs")
    assert r.returncode == 1, r.stderr
    assert ("exits.py-bridge: worker ended with exit code 3 after warm-up iteration 2; "
            "its last output: [compute] call 4") in r.stderr
    assert "warm-up: 2 iteration(s)" in r.stdout and "checks passed" in r.stdout
    doc = json.loads(next((tmp_path / "runs").glob("*/results.json")).read_text())
    v = doc["variants"][0]
    assert v["verdict"] == "error" and [it["kind"] for it in records(v)] == ["warmup", "warmup"]


#: a user module that writes a line to calls.log beside itself for every initialize and
#: counts its compute calls; its reference uses what initialize set up, as a module whose
#: initialize loads the model would
COUNTS = textwrap.dedent('''
    import os
    import numpy as np
    _LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log")
    _factor = None
    _phase = None
    with open(_LOG, "a") as f:
        f.write(f"import {os.getpid()}\\n")
    def initialize(config):
        global _factor, _phase
        _factor, _phase = 3.0, config["phase"]
        with open(_LOG, "a") as f:
            f.write(f"initialize {os.getpid()} {config['device']} {config.get('grad_mode')} "
                    f"{type(config['phase']).__name__}\\n")
    def compute(inputs, output):
        with _phase("forward"):
            output[...] = _factor * inputs[0]
    def reference(inputs):
        return _factor * np.asarray(inputs[0])
''')


@pytest.mark.parametrize("reload", [False, True], ids=["once", "reload-every-call"])
def test_initialize_runs_once_per_variant_with_the_runs_config(cli, tmp_path, reload):
    """docs/bridge.md: initialize is called once (or before every call with
    --reload-every-call). The worker used to initialise a user's module for its reference
    and the coupling import and initialise it again: twice per variant, the first time with
    a config that was not the run's. Two variants (both hosts), one worker each."""
    (tmp_path / "counts.py").write_text(COUNTS)
    extra = ["--reload-every-call"] if reload else []
    r = cli("--model", tmp_path / "counts.py", "--backend", "bridge", "--input-shape", "4",
            "--host", "native,python", "--grad-mode", "inference", "--warmup", "1", "--iterations", "3",
            "--profile-iterations", "0", "--telemetry-hz", "0", "--json", *extra)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [v["verdict"] for v in doc["variants"]] == ["passed", "passed"]
    lines = (tmp_path / "calls.log").read_text().splitlines()
    workers = {}
    for line in lines:
        what, pid, *rest = line.split()
        workers.setdefault(pid, []).append((what, rest))
    assert len(workers) == 2, lines   # one worker per variant
    calls = 1 + 1 + 3   # the load, then one warm-up and three timed calls, each reloading
    for record in workers.values():
        initialised = [rest for what, rest in record if what == "initialize"]
        # the run's own config: its device, grad mode and phase clock (not a stand-in)
        assert all(rest == ["cpu", "inference", "PhaseClock"] for rest in initialised), record
        if reload:
            assert len(initialised) == calls, record
        else:
            assert len(initialised) == 1, record
            assert [what for what, _ in record] == ["import", "initialize"], record
    # the load time is the module's initialize (and the host's set-up), measured
    assert all(v["load_seconds"] > 0 for v in doc["variants"])
    # phases the module timed reached the results
    assert all(v["phases"]["forward"]["median"] > 0 for v in doc["variants"]), doc["variants"][0]["phases"]


def test_the_profilers_markers_are_not_shown_as_output_nor_kept(chatty):
    """torch's profiler writes `USDT: ... profiler_start` / `profiler_stop` to stderr each
    time it runs: not the module's output (not shown, not in <variant>.output.log)."""
    r, run = chatty
    assert "mine.py-bridge | hello from initialize" in r.stderr
    assert "USDT" not in r.stderr and "profiler_st" not in r.stderr, r.stderr
    log = (run / "mine.py-bridge.output.log").read_text()
    assert "call 11" in log and "USDT" not in log and "profiler_st" not in log   # 1 + 8 + 2 calls
    assert list(run.glob("traces/*/*.pt.trace.json*"))   # the profiler did run


@pytest.mark.xdist_group("exported-run")   # (conftest.exported: made once, on one worker)
def test_a_built_in_model_profiled_prints_nothing_and_keeps_no_output(exported):
    """A built-in model prints nothing of its own: the profiler's markers are not shown and
    no <variant>.output.log is written (TorchScript directly and through the bridge)."""
    assert "USDT" not in exported.stderr and "profiler_st" not in exported.stderr, exported.stderr
    assert glob.glob(os.path.join(exported.directory, "traces", "*", "*.pt.trace.json*"))
    assert not glob.glob(os.path.join(exported.directory, "*.output.log"))
