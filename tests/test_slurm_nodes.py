"""Ranks on two Slurm nodes: a real two-node Slurm (n1, n2, one CPU each) that .ci/slurm-up
starts on this machine beside the one-node one; COUPLESCOPE_SLURM_NODES_CONF names it.
Skipped, with the reason, where it does not run (not root, no Slurm, no mount namespaces).

Both "nodes" are this machine, which is what makes the telemetry test sharp: the parent
could sample n2's rank, and must not; each node's sampler samples its own rank only.
After every test nothing of ours is left in squeue or in ps.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import slurm  # noqa: E402

#: every Slurm test on one pytest-xdist worker, one after another (they share the queues and
#: the 2 CPUs, and hold slurm.OneAtATime besides): the other worker goes on with the rest
#: instead of waiting for the lock
pytestmark = [pytest.mark.slurm_nodes, pytest.mark.slurm, pytest.mark.e2e, pytest.mark.xdist_group("slurm")]
REASON = slurm.nodes_reason()
if REASON:
    pytestmark.append(pytest.mark.skip(reason=REASON))

CONF = slurm.NODES_CONF
ENV = {"SLURM_CONF": CONF}
FAST = ["--warmup", "2", "--iterations", "5", "--profile-iterations", "0"]


@pytest.fixture(autouse=True)
def nothing_left(tmp_path_factory):
    """One Slurm test at a time; every one leaves no job, srun, rank or sampler behind,
    and both nodes up."""
    with slurm.OneAtATime(tmp_path_factory.getbasetemp()):
        yield
        slurm.check_nothing_left(CONF)
        _both_nodes_up()


def _both_nodes_up() -> None:
    deadline = time.monotonic() + 60
    while slurm.reason(CONF, nodes=2) and time.monotonic() < deadline:
        subprocess.run(["scontrol", "update", "nodename=n1,n2", "state=resume"], capture_output=True,
                       env=slurm.slurm_env(CONF))
        time.sleep(1)
    assert slurm.reason(CONF, nodes=2) is None, slurm.reason(CONF, nodes=2)


def _results(runs: Path) -> tuple[dict, list[dict]]:
    [run] = list(runs.iterdir())
    doc = json.loads((run / "results.json").read_text())
    return doc["variants"][0], [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _assert_two_nodes(stdout: str, runs: Path) -> None:
    """The table names n1 and n2; the telemetry was sampled on each node, each sampler
    sampling its own node's rank only; the parent sampled no rank."""
    rows = [line.split() for line in stdout.splitlines() if line[:2] in ("0 ", "1 ")]
    assert [(row[0], row[1]) for row in rows] == [("0", "n1"), ("1", "n2")], stdout
    assert "per node: n1 (rank 0, 1 CPU)" in stdout and "n2 (rank 1, 1 CPU)" in stdout, stdout
    v, evs = _results(runs)
    assert [(r["rank"], r["node"], r["local_rank"]) for r in v["ranks"]] == [(0, "n1", 0), (1, "n2", 0)]
    assert list(v["mpi"]["nodes"]) == ["n1", "n2"]
    pids = {e["rank"]: e["pid"] for e in evs if e["event"] == "rank_info"}
    samples = [e for e in evs if e["event"] == "telemetry"]
    assert samples and all(e.get("node") in ("n1", "n2") for e in samples), \
        "the parent sampled the ranks itself"
    for node, rank in (("n1", 0), ("n2", 1)):
        mine = [e["sample"] for e in samples if e["node"] == node]
        assert mine, f"no samples from {node}"
        seen = {(p["pid"], p["rank"]) for s in mine for p in s["processes"] if p["role"] == "worker"}
        assert seen == {(pids[rank], rank)}, (node, seen, pids)
    assert set(v["telemetry"]["nodes"]) == {"n1", "n2"}
    assert "telemetry (sampled on each of 2 nodes" in stdout and "  n2: ranks CPU" in stdout


def test_nodes_2_spreads_the_ranks_and_samples_each_node(cli, tmp_path):
    r = cli("--preset", "simplenet-mpi", "--launcher", "srun", "--nodes", "2", *FAST,
            "--export", tmp_path / "runs", env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    _assert_two_nodes(r.stdout, tmp_path / "runs")


def test_inside_a_two_node_allocation(tmp_path):
    """salloc -N2 -n2 couplescope ...: srun makes a step of the allocation, on its nodes."""
    r = subprocess.run(["salloc", "-N2", "-n2", "--job-name=couplescope-salloc", sys.executable, "-m",
                        "couplescope", "--preset", "simplenet-mpi", "--launcher", "srun", *FAST,
                        "--export", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**slurm.slurm_env(CONF), "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    _assert_two_nodes(r.stdout, tmp_path / "runs")


def test_two_ranks_on_one_node_have_local_ranks_one_sampler_and_the_node_s_warning(cli, tmp_path):
    """3 ranks on 2 nodes of one CPU each: n1 holds ranks 0 and 1 (local ranks 0 and 1, GPU
    slots 0 and 1), n2 rank 2; one sampler per node, n1's sampling both its ranks; the
    oversubscription warning names n1 only. (Open MPI's shared-memory split put each rank
    in a node of its own here: both n1 ranks said local rank 0 and both sampled n1.)"""
    r = cli("--preset", "simplenet-mpi", "--launcher", "srun", "--nodes", "2", "--ranks", "3",
            "--oversubscribe", *FAST, "--export", tmp_path / "runs", env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    v, evs = _results(tmp_path / "runs")
    assert [(x["rank"], x["node"], x["local_rank"], x["local_size"], x["gpu_slot"]) for x in v["ranks"]] == \
        [(0, "n1", 0, 2, 0), (1, "n1", 1, 2, 1), (2, "n2", 0, 1, 0)]
    assert "2 ranks on the 1 core of node n1" in r.stderr and "node n2" not in r.stderr, r.stderr
    pids = {e["rank"]: e["pid"] for e in evs if e["event"] == "rank_info"}
    sampled, samplers = {}, {}
    for e in evs:
        if e["event"] == "telemetry":
            ranks = frozenset((p["rank"], p["pid"]) for p in e["sample"]["processes"] if p["role"] == "worker")
            sampled.setdefault(e["node"], set()).add(ranks)
            samplers.setdefault(e["node"], set()).add(e["sample"]["sampler"]["pid"])
    assert sampled == {"n1": {frozenset({(0, pids[0]), (1, pids[1])})}, "n2": {frozenset({(2, pids[2])})}}
    assert [len(samplers["n1"]), len(samplers["n2"])] == [1, 1], samplers   # one sampler a node


@contextlib.contextmanager
def _long_run(tmp_path):
    """A two-node run of many iterations, yielded once it measures timed iterations (a
    state, not a time) as (process, runs folder, rank 1's pid); ended with SIGTERM on the
    way out if the test has not ended it."""
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "couplescope", "--model", "simplenet", "--backend", "mpi",
                             "--launcher", "srun", "--nodes", "2", "--iterations", "100000000",
                             "--profile-iterations", "0", "--quiet", "--export", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**slurm.slurm_env(CONF), "NO_COLOR": "1"})
    try:
        deadline = time.monotonic() + 180
        while True:   # wait for a state: timed iterations measured
            found = list(runs.glob("*/events.jsonl"))
            if found and '"kind":"timed"' in found[0].read_text():
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no timed iteration within 180 s"
            time.sleep(0.5)
        _, evs = _results_so_far(runs)
        rank1 = next(e["pid"] for e in evs if e["event"] == "rank_info" and e["rank"] == 1)
        yield proc, runs, rank1
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)


def test_a_node_taken_down_mid_run_ends_the_run_naming_it(tmp_path):
    with _long_run(tmp_path) as (proc, runs, _):
        subprocess.run(["scontrol", "update", "nodename=n2", "state=down", "reason=couplescope-test"],
                       check=True, env=slurm.slurm_env(CONF))
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err
    assert "node n2 failed (Slurm: node failure): its rank 1 ended with it" in err, err
    assert "Traceback" not in err
    v, _ = _results(runs)
    assert v["status"] == "failed" and v["error_kind"] == "lost" and "node n2" in v["error"]
    assert v["stats"]["n"] > 0 and v["mpi"]["nodes"]["n2"]["ranks"] == [1]   # what was measured is kept


def test_a_node_whose_slurmd_and_step_daemon_are_killed_ends_the_run_naming_it(tmp_path):
    """SIGKILL to n2's slurmd and to its step daemon (the rank's parent): srun hears no more
    of n2's rank and gives up after KillWait + 2 s (12 s here); the run ends naming n2 and
    its rank, exit code 4, what was measured kept. n2's slurmd is then started again, as an
    admin would, so that Slurm settles the job at once instead of SlurmdTimeout later."""
    import psutil

    try:
        with _long_run(tmp_path) as (proc, runs, rank1):
            step_daemon = psutil.Process(rank1).ppid()
            slurmd = int((Path(CONF).parent / "slurmd-n2.pid").read_text())
            assert "slurmstepd" in psutil.Process(step_daemon).name() and psutil.pid_exists(slurmd)
            os.kill(slurmd, signal.SIGKILL)
            os.kill(step_daemon, signal.SIGKILL)
            out, err = proc.communicate(timeout=180)
    finally:
        subprocess.run([str(Path(__file__).resolve().parents[1] / ".ci" / "slurm-node-up"),
                        str(Path(CONF).parents[1]), "n2"], check=True, env=slurm.slurm_env(CONF))
    assert proc.returncode == 4, err
    assert "node n2 failed (its step daemon stopped answering" in err and "its rank 1 ended with it" in err, err
    assert "Traceback" not in err
    v, _ = _results(runs)
    assert v["status"] == "failed" and v["error_kind"] == "lost" and "node n2" in v["error"]
    assert v["stats"]["n"] > 0 and v["mpi"]["nodes"]["n2"]["ranks"] == [1]


def test_a_rank_killed_on_one_node_ends_the_run_naming_it(tmp_path):
    with _long_run(tmp_path) as (proc, runs, rank1):
        os.kill(rank1, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "rank 1 on node n2: Killed" in err, err
    v, _ = _results(runs)
    assert v["status"] == "failed" and v["stats"]["n"] > 0


def _results_so_far(runs: Path):
    [events] = list(runs.glob("*/events.jsonl"))
    return None, [json.loads(line) for line in events.read_text().splitlines()]


def _documented_batch_script() -> str:
    """The two-node sbatch script docs/mpi.md shows, exactly as written there."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "mpi.md").read_text()
    after = text.split("<!-- the two-node batch script tested by tests/test_slurm_nodes.py -->", 1)[1]
    return after.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_documented_two_node_batch_script(tmp_path):
    script = tmp_path / "couplescope-2nodes.sbatch"
    script.write_text(_documented_batch_script())
    assert "#SBATCH --nodes=2" in script.read_text()
    env = {k: v for k, v in slurm.slurm_env(CONF).items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env.get('PATH', '')}"   # this venv's couplescope
    out = tmp_path / "job.out"
    job = subprocess.run(["sbatch", "--parsable", f"--output={out}", str(script)], capture_output=True,
                         text=True, env=env, cwd=tmp_path, check=True).stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and job in slurm.queue(CONF):
            time.sleep(2)
        assert job not in slurm.queue(CONF), "the job did not end within 5 minutes"
    finally:
        subprocess.run(["scancel", job], capture_output=True, env=slurm.slurm_env(CONF))
    text = out.read_text()
    assert "per node: n1 (rank 0, 1 CPU)" in text and "n2 (rank 1, 1 CPU)" in text, text[-3000:]
    [results] = list(tmp_path.glob("runs/*/results.json"))
    v = json.loads(results.read_text())["variants"][0]
    assert v["verdict"] == "passed" and list(v["mpi"]["nodes"]) == ["n1", "n2"]
    assert set(v["telemetry"]["nodes"]) == {"n1", "n2"}
