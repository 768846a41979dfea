"""The headless CLI end to end: exit codes, the reference lines, every bad input.

Each test runs the real command in a subprocess with real worker processes and torch.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import FAST, ROUNDS, ROUNDS_TIMED, default_signals
from couplescope.frontends.cli.check_lines import FIRST
from couplescope.results.saved import iteration_records as records

@pytest.mark.e2e
@pytest.mark.xdist_group("rounds-run")   # (conftest.rounds_run: made once, on one worker)
def test_passing_run_prints_reference_lines_and_exits_0(rounds_run):
    r = rounds_run   # exited 0
    passed = [line for line in r.stdout.splitlines() if line.startswith("PASSED :: [check iteration")]
    assert len(passed) == 2 * FIRST   # each variant's first checks, then a count of the rest
    assert "maximum relative error = 0.0000E+00" in passed[0]
    for key in ("min", "median", "mean", "max", "stddev"):
        assert f"{key:<6} time taken (s):" in r.stdout
    assert f"sample size: {ROUNDS_TIMED}" in r.stdout
    # in rounds: ratios against a base, from same-round pairs
    assert "comparison" in r.stdout and "vs base" in r.stdout and f"interleaved: {ROUNDS} rounds" in r.stdout


@pytest.mark.e2e
def test_c_layout_fails_stride_and_exits_1(cli):
    r = cli("--model", "stride", "--size", "16", "--layout", "c", *FAST)
    assert r.returncode == 1
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAILED :: [check iteration")]
    assert len(failed) == 3
    assert "warm-up FAILED" in r.stdout  # the warm-up is checked too, reported apart
    assert "maximum relative error = 2.0000E+00" in r.stdout


@pytest.mark.e2e
def test_bridge_c_layout_also_fails(cli):
    r = cli("--model", "stride", "--size", "8", "--layout", "c", "--backend", "bridge",
            "--bridge-model", "eager", *FAST)
    assert r.returncode == 1 and "FAILED" in r.stdout


@pytest.mark.e2e
def test_json_document_on_stdout(cli):
    r = cli("--model", "simplenet", "--json", *FAST)
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    v = doc["variants"][0]
    assert v["stats"]["n"] == 3 and v["checks_passed"]
    assert "PASSED" in r.stderr  # human lines moved to stderr
    # a built-in model's variant is marked TorchScript (a user's module is not:
    # tests/test_user_modules.py)
    assert v["model"]["torchscript"] is True


def test_list_shows_models_backends_presets_devices(command):
    r = command("--list")
    assert r.returncode == 0
    for word in ("stride", "cgdrag", "N=512", "ncol=8192", "torchscript", "bridge", "cudagraph",
                 "stride512", "deep-linear", "cpu"):
        assert word in r.stdout


def test_list_piped_with_columns_set_wraps_to_them(cli):
    """`COLUMNS=80 couplescope --list > file` asks for 80 columns; without COLUMNS and with
    no terminal at all, output keeps a row per line (some run past 140 columns)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    wide = subprocess.run([sys.executable, "-m", "couplescope", "--list"], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL)
    assert wide.returncode == 0 and max(map(len, wide.stdout.splitlines())) > 100
    r = cli("--list", env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) > len(wide.stdout.splitlines()) and max(map(len, lines)) <= 80, max(lines, key=len)


@pytest.mark.e2e
def test_reload_every_call_times_the_load(cli):
    r = cli("--model", "simplenet", "--reload-every-call", "--json", *FAST)
    v = json.loads(r.stdout)["variants"][0]
    assert all("load" in it["phases"] for it in records(v))


BAD_INPUTS = [
    (["--model", "nope"], "unknown model 'nope'"),
    (["--model", "simplenet", "--backend", "nope"], "unknown backend 'nope'"),
    (["--preset", "nope"], "unknown preset 'nope'"),
    (["--model", "simplenet", "--device", "tpu"], "unknown device 'tpu'"),
    (["--model", "simplenet", "--device", "cuda"], "needs a CUDA device"),
    (["--model", "missing.pt", "--input-shape", "5"], "model file not found"),
    (["--model", "simplenet", "--iterations", "0"], "--iterations must be at least 1 (got 0)"),
    (["--model", "simplenet", "--iterations", "ten"], "--iterations: 'ten' is not a whole number"),
    (["--model", "simplenet", "--telemetry-hz", "500"], "--telemetry-hz must be between 0 and 100"),
    (["--model", "simplenet", "--bridge-model", "eager"], "--bridge-model applies to --backend bridge"),
    (["--model", "simplenet", "--dtype", "int8"], "unknown dtype 'int8'"),
    (["--model", "simplenet", "--layout", "zigzag"], "unknown layout 'zigzag'"),
    ([], "nothing to run"),
]


@pytest.mark.parametrize("args,message", BAD_INPUTS, ids=[m for _, m in BAD_INPUTS])
def test_bad_input_one_line_exit_2_nothing_written(command, tmp_path, args, message):
    r = command(*FAST, "--export", tmp_path / "runs", *args)   # the last value of a flag counts
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


@pytest.mark.e2e
def test_a_size_the_model_refuses_is_bad_input_from_the_worker(cli, tmp_path):
    r = cli("--model", "stride", "--size", "1", "--export", tmp_path / "runs", *FAST)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "N must be at least 2" in lines[0], r.stderr
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


def test_not_a_torchscript_archive(command, tmp_path):
    (tmp_path / "junk.pt").write_text("not a model")
    r = command("--model", tmp_path / "junk.pt", "--input-shape", "5", *FAST)
    assert r.returncode == 2 and "not a TorchScript archive" in r.stderr


@pytest.mark.e2e
def test_zip_that_is_not_torchscript(cli, tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "fake.pt", "w") as z:
        z.writestr("hello.txt", "hi")
    r = cli("--model", tmp_path / "fake.pt", "--input-shape", "5", *FAST)
    assert r.returncode == 2 and "not a loadable TorchScript archive" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unwritable_export_dir(command, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = command("--model", "simplenet", "--export", blocker / "runs", *FAST)
    assert r.returncode == 2 and "cannot be" in r.stderr


def test_malformed_preset_names_file_and_line(command, tmp_path):
    (tmp_path / "bad.toml").write_text('[defaults]\nmodel = "simplenet"\nwarmup = = 1\n')
    r = command("--preset", tmp_path / "bad.toml", *FAST)
    assert r.returncode == 2 and "bad.toml" in r.stderr and "line 3" in r.stderr


def test_unknown_preset_key(command, tmp_path):
    (tmp_path / "bad.toml").write_text('[defaults]\nmodel = "simplenet"\nitterations = 3\n')
    r = command("--preset", tmp_path / "bad.toml", *FAST)
    assert r.returncode == 2 and "unknown key 'itterations'" in r.stderr


def save_torchscript(path, module, example):
    import torch

    torch.manual_seed(0)
    for p in module.parameters():  # deterministic weights: a failure must reproduce
        torch.nn.init.uniform_(p, -0.5, 0.5)

    torch.jit.save(torch.jit.trace(module, example), str(path))


@pytest.mark.e2e
def test_user_torchscript_model(cli, tmp_path):
    import torch

    save_torchscript(tmp_path / "net.pt", torch.nn.Linear(16, 4).eval(), torch.zeros(8, 16))
    r = cli("--model", tmp_path / "net.pt", "--input-shape", "8,16", "--dtype", "float32", *FAST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("PASSED") >= 3


@pytest.mark.e2e
def test_input_shape_the_model_rejects(cli, tmp_path):
    import torch

    save_torchscript(tmp_path / "net.pt", torch.nn.Linear(16, 4).eval(), torch.zeros(8, 16))
    r = cli("--model", tmp_path / "net.pt", "--input-shape", "8,3", *FAST)
    assert r.returncode == 2
    assert "rejects input shape (8, 3)" in r.stderr and len(r.stderr.strip().splitlines()) == 1


BRIDGE_OK = textwrap.dedent('''
    import gc
    import numpy as np
    def initialize(config):
        print("hello from the model on stdout")       # must not corrupt the event channel
    def compute(inputs, output):
        print("noise", flush=True)
        # the worker pauses the collector while it imports torch only: calls are measured
        # with it on, as in the user's Python
        assert gc.isenabled(), "the garbage collector is off during the calls"
        output[...] = 3.0 * inputs[0]
    def reference(inputs):
        return 3.0 * np.asarray(inputs[0])
''')


@pytest.mark.e2e
def test_user_bridge_module_and_stdout_noise(cli, tmp_path):
    (tmp_path / "mine.py").write_text(BRIDGE_OK)
    r = cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4,3", *FAST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("PASSED ::") == 3


@pytest.mark.e2e
def test_bridge_module_without_contract(cli, tmp_path):
    (tmp_path / "empty.py").write_text("def reference(inputs):\n    return inputs[0]\n")
    r = cli("--model", tmp_path / "empty.py", "--backend", "bridge", "--input-shape", "4", *FAST)
    assert r.returncode == 2
    assert "lacks the contract function(s) initialize, compute" in r.stderr


@pytest.mark.e2e
def test_rebinding_never_reaches_host_memory(cli, tmp_path):
    # forpy's pitfall: `output = ...` rebinds a name; only in-place writes reach the host
    (tmp_path / "rebind.py").write_text(BRIDGE_OK.replace("output[...] = 3.0 * inputs[0]",
                                                          "output = 3.0 * inputs[0]"))
    r = cli("--model", tmp_path / "rebind.py", "--backend", "bridge", "--input-shape", "4", *FAST)
    assert r.returncode == 1 and "FAILED" in r.stdout and "NaN" in r.stdout


@pytest.mark.e2e
def test_nan_and_wrong_shape_are_failed_checks_not_crashes(cli, tmp_path):
    import torch

    class NaNs(torch.nn.Module):
        def forward(self, x):
            return x * float("nan")

    save_torchscript(tmp_path / "nan.pt", NaNs(), torch.zeros(4))
    r = cli("--model", tmp_path / "nan.pt", "--input-shape", "4", *FAST)
    assert r.returncode == 1 and "maximum relative error = NaN" in r.stdout
    (tmp_path / "wrong.py").write_text(BRIDGE_OK.replace("output[...] = 3.0 * inputs[0]",
                                                         "output[...] = 3.0 * inputs[0][:2]"))
    r = cli("--model", tmp_path / "wrong.py", "--backend", "bridge", "--input-shape", "4", *FAST)
    assert r.returncode == 1 and "FAILED" in r.stdout
    (tmp_path / "nanb.py").write_text(BRIDGE_OK.replace("output[...] = 3.0 * inputs[0]",
                                                        "output[...] = np.nan"))
    r = cli("--model", tmp_path / "nanb.py", "--backend", "bridge", "--input-shape", "4", *FAST)
    assert r.returncode == 1 and "maximum relative error = NaN" in r.stdout


@pytest.mark.e2e
def test_ctrl_c_keeps_what_was_measured_and_exits_130(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "couplescope", "--model", "stride", "--size", "48",
                             "--iterations", "100000", "--profile-iterations", "0", "--telemetry-hz", "0",
                             "--export", str(runs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, NO_COLOR="1"), preexec_fn=default_signals)
    import psutil

    deadline = time.monotonic() + 300   # bounds a failure only: the loop waits for a state
    workers = []
    while True:
        workers = workers or psutil.Process(proc.pid).children(recursive=True)
        found = list(runs.glob("*/events.jsonl"))
        if found and found[0].read_text().count('"kind":"timed"') >= 3:
            break
        assert time.monotonic() < deadline and proc.poll() is None, "no timed calls came"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    run_dir = next(runs.iterdir())
    doc = json.loads((run_dir / "results.json").read_text())
    v = doc["variants"][0]
    assert v["status"] == "interrupted" and v["stats"]["n"] >= 3
    assert v["stats"]["n"] == sum(1 for it in records(v) if it["kind"] == "timed")
    assert workers, "the worker process was never seen"
    gone, alive = psutil.wait_procs(workers, timeout=30)   # returns as soon as they are gone
    assert not alive


def test_python_dash_m_and_version():
    r = subprocess.run([sys.executable, "-m", "couplescope", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("couplescope ")


@pytest.mark.e2e
def test_worker_that_dies_is_reported_not_hung(cli, tmp_path):
    (tmp_path / "crash.py").write_text(BRIDGE_OK.replace(
        'output[...] = 3.0 * inputs[0]', 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'))
    r = cli("--model", tmp_path / "crash.py", "--backend", "bridge", "--input-shape", "4",
            "--export", tmp_path / "runs", *FAST, timeout=60)
    assert r.returncode == 1
    assert "worker ended with signal 9" in r.stderr
    doc = json.loads(next((tmp_path / "runs").glob("*/results.json")).read_text())
    assert doc["variants"][0]["status"] == "failed"


def test_launcher_args_may_start_with_a_dash():
    from couplescope.frontends.cli.parser import _glue_pass_through, build_parser, options_from

    argv = _glue_pass_through(["--model", "simplenet", "--launcher-args", "--report-bindings", "--ranks", "2"])
    options = options_from(build_parser().parse_args(argv))
    assert options.overrides["launcher_args"] == "--report-bindings" and options.overrides["ranks"] == 2


SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.e2e
def test_runs_from_inside_the_source_checkout():
    """The README's command is typed in the clone: `python -m` there puts the source tree
    (where models/ and presets/ sit beside the package) first on sys.path."""
    r = subprocess.run([sys.executable, "-m", "couplescope", "--preset", "stride512", "--size", "8",
                        "--iterations", "2", "--profile-iterations", "0", "--telemetry-hz", "0"],
                       cwd=SOURCE_TREE, capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, NO_COLOR="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("PASSED :: [check iteration") == 6
    code = "import couplescope.models, couplescope.bundled_presets as b; print(couplescope.models.__name__)"
    r = subprocess.run([sys.executable, "-c", code], cwd=SOURCE_TREE, capture_output=True, text=True)
    assert r.stdout.strip() == "couplescope.models", r.stderr


@pytest.mark.parametrize("args,message", [
    (["--model", "simplenet", "--input-shape", "3,3"], "--input-shape applies to a .pt or .py model"),
    (["--model", "simplenet", "--bridge-model", "eager"], "--bridge-model applies to --backend bridge"),
    (["--model", "simplenet", "--ranks", "4"], "--ranks applies to --backend mpi"),
    (["--model", "simplenet", "--task", "train", "--grad-mode", "inference"], "--grad-mode applies to --task infer"),
])
def test_options_that_apply_to_nothing_are_refused(command, args, message):
    r = command(*args, *FAST)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
@pytest.mark.parametrize("model,size", [("polynomial", 1_000_000_000), ("deep-linear", 100_000_000)])
def test_a_size_too_big_for_this_machine_is_refused_before_allocating(cli, tmp_path, model, size):
    """It used to grow to about 12 GB (polynomial) or spend minutes building layers
    (deep-linear); now one line with the estimate and the limit, exit 2, nothing written."""
    r = cli("--model", model, "--size", size, "--export", tmp_path / "runs", *FAST, timeout=60)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"couplescope: --size {size} for {model} needs about ")
    assert "over the limit of" in line and "available); use a smaller --size, or --memory-limit" in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.e2e
def test_memory_limit_overrides_the_estimate_both_ways(cli):
    r = cli("--model", "simplenet", "--size", "100000", "--memory-limit", "1M", *FAST)
    assert r.returncode == 2 and "over the limit of 1.0M (--memory-limit 1.0M)" in r.stderr
    r = cli("--model", "polynomial", "--size", "200000", "--memory-limit", "none", *FAST)
    assert r.returncode == 0, r.stderr


def test_memory_sizes_read_as_people_write_them(command):
    from couplescope.protocol.sizes import bytes_text, parse_bytes

    assert parse_bytes("16G") == 16 * 2**30 and parse_bytes("512m") == 512 * 2**20
    assert parse_bytes("1.5T") == int(1.5 * 2**40) and parse_bytes("none") is None
    assert bytes_text(16 * 2**30) == "16.0G" and bytes_text(1.2 * 2**30, round_up=True) == "2G"
    r = command("--model", "simplenet", "--memory-limit", "lots")
    assert r.returncode == 2 and r.stderr.strip() == (
        "couplescope: memory size 'lots' is not one: give a number with K, M, G or T "
        "(binary units, e.g. 512M, 16G) or none")


@pytest.mark.e2e
@pytest.mark.parametrize("source,message", [
    ("def initialize(config)\n    pass\n", "has a syntax error on line 1: expected ':'"),
    ("import no_such_module_here\n", "failed: ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("raise ValueError('not on this machine')\n", "failed: ValueError: not on this machine"),
])
def test_a_broken_user_module_is_bad_input_like_a_missing_compute(cli, tmp_path, source, message):
    """A syntax error used to exit 1 where a missing compute exits 2: both are the user's file.
    (What its functions raise once it has imported is the variant failing: exit 1, as for
    an MPI rank that raises in test_mpi.py.)"""
    (tmp_path / "mine.py").write_text(source)
    r = cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4", *FAST)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert message in line and str(tmp_path / "mine.py") in line
