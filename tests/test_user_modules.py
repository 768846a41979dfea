"""Debugging a user's bridge module (--model mine.py --backend bridge), end to end with real
workers: what it prints reaches the user, a crash says how far it got, and the variant's
name, heading and hints say that the user's own Python ran (not TorchScript)."""

import json
import textwrap

import pytest

from conftest import FAST
from fixtures.record import DIES

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


def test_prints_reach_the_user_and_the_run_directory_labelled_as_the_users_module(cli, tmp_path):
    (tmp_path / "mine.py").write_text(CHATTY)
    runs = tmp_path / "runs"
    r = cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4",
            "--warmup", "1", "--iterations", "8", "--profile-iterations", "0", "--telemetry-hz", "0",
            "--export", runs)
    assert r.returncode == 0, r.stderr
    # shown on stderr, each line under the variant's name, after the measurements
    assert "mine.py-bridge | hello from initialize" in r.stderr
    assert "mine.py-bridge | call 9 [not markup]" in r.stderr
    assert "mine.py-bridge | call" not in r.stdout
    # named and described by what ran: the user's module, not couplescope's TorchScript bridge
    assert "torchscript" not in r.stdout.lower(), r.stdout
    assert "== mine.py-bridge (1/1): " in r.stdout and "mine.py, bridge, user module, native host" in r.stdout
    # the warm-up hint, without blaming TorchScript
    assert "the model was still warming up; use --warmup" in r.stdout
    [run] = list(runs.iterdir())
    log = (run / "mine.py-bridge.output.log").read_text().splitlines()
    assert log[0] == "hello from initialize" and log[-1] == "call 9 [not markup]"
    doc = json.loads((run / "results.json").read_text())
    variant = doc["variants"][0]
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
    assert v["verdict"] == "error" and [it["kind"] for it in v["iterations"]] == ["warmup", "warmup"]


def test_torchscript_variants_are_marked_as_such(cli):
    r = cli("--model", "simplenet", "--backend", "torchscript", *FAST, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["variants"][0]["model"]["torchscript"] is True
