"""The srun launcher and batch jobs against a real Slurm (a one-node Slurm on 127.0.0.1 that
.ci/slurm-up starts; SLURM_CONF points at it). Skipped, with the reason, where none runs.

After every test nothing of ours is left running or queued in Slurm.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from couplescope.frontends.cli.check_lines import FIRST

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import slurm  # noqa: E402

#: every Slurm test on one pytest-xdist worker, one after another (they share the queues and
#: the 2 CPUs, and hold slurm.OneAtATime besides): the other worker goes on with the rest
#: instead of waiting for the lock
pytestmark = [pytest.mark.slurm, pytest.mark.e2e, pytest.mark.xdist_group("slurm")]


REASON = slurm.reason()
if REASON:
    pytestmark.append(pytest.mark.skip(reason=REASON))
queue = slurm.queue


@pytest.fixture(autouse=True)
def nothing_left(tmp_path_factory):
    """Every test leaves no srun and no job of its own; one Slurm test at a time."""
    with slurm.OneAtATime(tmp_path_factory.getbasetemp()):
        yield
        slurm.check_nothing_left()


def test_srun_out_of_the_box_passes_and_samples_the_ranks(cli, tmp_path):
    """No --mpi= given: couplescope picks pmix for the wheel's Open MPI; the telemetry is
    the ranks' (children of slurmstepd, sampled on their node), not the srun client's 10 MiB."""
    r = cli("--preset", "simplenet-mpi", "--launcher", "srun", "--iterations", "5", "--export",
            tmp_path / "runs", timeout=240)
    assert r.returncode == 0, r.stderr
    assert "find-available:not-valid" not in r.stderr   # PMIx's security boxes are silenced
    [run] = list((tmp_path / "runs").iterdir())
    v = json.loads((run / "results.json").read_text())["variants"][0]
    assert v["checks_passed"] and v["mpi"]["ranks"] == 2 and len(v["mpi"]["per_rank"]) == 2
    summary = v["telemetry"]["summary"]
    assert summary["rss_peak"] > 200 * 2**20, summary   # torch in two ranks, not srun's 10 MiB
    assert summary["processes_peak"] >= 2 and summary["nodes"] == 1, summary   # both ranks, on one node
    [node] = v["telemetry"]["nodes"].values()   # sampled on the node, not by the parent
    series = {k for entry in node["timeline"] for k in entry}
    assert {"rank0/rss_mib", "rank1/rss_mib", "rank0/cpu_percent", "rank1/cpu_percent"} <= series, series


def test_a_pending_step_is_reported_at_once_and_given_up(cli):
    """More tasks than the node's CPUs: Slurm would keep the step pending for ever."""
    r = cli("--model", "simplenet", "--backend", "mpi", "--ranks", str((os.cpu_count() or 2) + 1),
            "--launcher", "srun", "--iterations", "3", env={"COUPLESCOPE_SRUN_PENDING_SECONDS": "6"},
            timeout=120)
    assert r.returncode == 1
    assert "is pending (" in r.stderr and "--oversubscribe or fewer --ranks" in r.stderr
    assert "gave up after 6 s" in r.stderr   # the give-up path, not the 120 s limit, ended it


def test_srun_s_own_error_line_reaches_the_user(cli):
    r = cli("--model", "simplenet", "--backend", "mpi", "--launcher", "srun", "--launcher-args=--bogus",
            "--iterations", "3", timeout=120)
    assert r.returncode == 1
    assert "srun: unrecognized option '--bogus'" in r.stderr


def _submit(sbatch_args: list[str], cwd, out) -> str:
    """sbatch with this venv's couplescope first on PATH and no SLURM_ variables of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env.get('PATH', '')}"   # this venv's couplescope
    return subprocess.run(["sbatch", "--parsable", f"--output={out}", *sbatch_args], capture_output=True,
                          text=True, env=env, cwd=cwd, check=True).stdout.strip().split(";")[0]


def _kept(job: str, cwd, out) -> dict:
    """Wait until Slurm has ended the job, and return the first variant of the results.json
    it exported; the job's output must say what was kept."""
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and job in queue():
            time.sleep(2)
        assert job not in queue(), "the job outlived its limit by minutes"
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    text = out.read_text()
    assert "SIGTERM: stopped; what was measured is kept" in text, text[-2000:]
    [results] = list(cwd.glob("*/*/results.json"))
    return json.loads(results.read_text())["variants"][0]


def run_batch_job(sbatch_args: list[str], cwd, out) -> dict:
    """Submit, and return what the job kept once Slurm ended it (its limit)."""
    return _kept(_submit(sbatch_args, cwd, out), cwd, out)


#: a user model whose call sleeps 5 ms: a minute of calls at the time limit costs the machine
#: almost no CPU (toy-resnet kept both cores busy for that minute, beside the other tests)
SLEEPING_MODULE = """
import time
import numpy as np

def initialize(config):
    pass

def compute(inputs, output):
    time.sleep(0.005)
    output[...] = 2.0 * inputs[0]

def reference(inputs):
    return 2.0 * np.asarray(inputs[0])
"""


def test_a_batch_job_at_its_time_limit_keeps_what_it_measured(tmp_path):
    """sbatch --time=1: at the limit Slurm sends SIGTERM to the job's processes (SIGKILL after
    KillWait); couplescope exports what it measured and says so."""
    (tmp_path / "sleeping.py").write_text(SLEEPING_MODULE)
    command = ("exec couplescope --model sleeping.py --backend bridge --input-shape 64 "
               "--iterations 10000000 --telemetry-hz 0 --profile-iterations 0 --quiet --export D")
    v = run_batch_job(["--time=1", "--job-name=couplescope-limit-test", "--wrap", command], tmp_path,
                      tmp_path / "job.out")
    assert v["status"] == "interrupted" and v["stats"]["n"] > 100


def _documented_batch_script() -> str:
    """The sbatch script docs/mpi.md shows, exactly as written there."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "mpi.md").read_text()
    after = text.split("<!-- the batch script tested by tests/test_slurm.py -->", 1)[1]
    return after.split("```sh\n", 1)[1].split("```", 1)[0]


def _checked_on_every_rank(out, ranks: int, iteration: int) -> bool:
    """Whether the job's output shows every rank's check of `iteration` or a later one."""
    text = out.read_text() if out.exists() else ""
    done = [max((int(n) for n in re.findall(rf"check iteration (\d+) on rank {r} ", text)), default=0)
            for r in range(ranks)]
    return min(done) >= iteration


def test_the_documented_batch_script_keeps_its_results_when_signalled(tmp_path):
    """docs/mpi.md's script, exactly as written there: its `--signal=B:TERM@120` has Slurm
    send SIGTERM to the batch shell alone (couplescope, exec'd) before the limit. `scancel
    --batch --signal=TERM` sends the same signal to the same process, once both ranks have
    printed their last check line (check_lines.FIRST: the calls after it are counted, not
    printed), instead of waiting out a minute or more of the limit with both cores busy (the
    time limit itself: the test above). srun's ranks inside the job, SIGTERM to couplescope
    only, its step ended by couplescope, results exported."""
    script = tmp_path / "couplescope.sbatch"
    script.write_text(_documented_batch_script())
    assert "exec couplescope" in script.read_text() and "--signal=B:TERM@" in script.read_text()
    out = tmp_path / "job.out"
    job = _submit([str(script)], tmp_path, out)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and job in queue() and not _checked_on_every_rank(out, 2, FIRST):
            time.sleep(1)
        assert _checked_on_every_rank(out, 2, FIRST), (out.read_text() if out.exists() else "no output")[-2000:]
        subprocess.run(["scancel", "--batch", "--signal=TERM", job], check=True, capture_output=True)
    except BaseException:
        subprocess.run(["scancel", job], capture_output=True)
        raise
    v = _kept(job, tmp_path, out)
    assert v["status"] == "interrupted" and v["stats"]["n"] >= FIRST, v.get("status")
    assert v["mpi"]["ranks"] == 2 and v["checks_passed"]
