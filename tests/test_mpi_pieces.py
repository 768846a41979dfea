"""The mpi backend's pieces that need no MPI: the launch command for mpiexec and srun,
the launcher's messages, Slurm's hints, the reference lines, the statistics across ranks,
and each rank's node, device and share of its node's cores. (tests/test_mpi.py runs the
real ranks.)
"""

from __future__ import annotations

import os

import pytest

from couplescope import backends
from couplescope.backends.mpi import LAUNCHER, explain_launcher_output, find_mpiexec, flavour, slurm
from couplescope.backends.mpi.team import cores_text, format_values, reference_lines
from couplescope.protocol.spec import RunSpec
from couplescope.results import ranks as mpi_stats
from test_mpi import REFERENCE


def test_launch_command_for_mpiexec_and_srun(monkeypatch, tmp_path):
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    worker = ["python", "-m", "couplescope.worker", "{}"]
    spec = RunSpec(model="simplenet", backend="mpi", ranks=3, launcher="srun",
                   launcher_args="--mpi=pmix --cpus-per-task 4", oversubscribe=True)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)   # outside an allocation: a job named ours
    assert LAUNCHER.command(spec, worker) == [str(srun), "--ntasks=3", "--kill-on-bad-exit=1", "--overcommit",
                                             f"--job-name=couplescope-{os.getpid()}",
                                             "--mpi=pmix", "--cpus-per-task", "4", *worker]
    monkeypatch.setenv("SLURM_JOB_ID", "7")              # inside one: a step of the user's job
    assert LAUNCHER.command(spec, worker) == [str(srun), "--ntasks=3", "--kill-on-bad-exit=1", "--overcommit",
                                             "--mpi=pmix", "--cpus-per-task", "4", *worker]
    assert LAUNCHER.command(spec.replace(nodes=2), worker)[:4] == [str(srun), "--ntasks=3",
                                                                  "--kill-on-bad-exit=1", "--nodes=2"]
    # no --mpi= of the user's: the plugin the MPI needs, when this Slurm offers it
    srun.write_text("#!/bin/sh\necho 'MPI plugin types are...'\necho '\tnone'\necho '\tpmi2'\necho '\tpmix'\n")
    slurm.mpi_plugins.cache_clear()
    spec = RunSpec(model="simplenet", backend="mpi", launcher="srun")
    cmd = LAUNCHER.command(spec, worker)
    wanted = slurm.plugin_for(flavour(find_mpiexec()) if find_mpiexec() else "unknown", ("pmix", "pmi2"))
    assert (f"--mpi={wanted}" in cmd) if wanted else not any(a.startswith("--mpi") for a in cmd), cmd
    slurm.mpi_plugins.cache_clear()
    if backends.unavailable("mpi") is None:
        spec = RunSpec(model="simplenet", backend="mpi", launcher_args="--bind-to 'none'")
        cmd = LAUNCHER.command(spec, worker)
        assert os.path.basename(cmd[0]) == "mpiexec" and cmd[1:3] == ["-n", "2"]
        assert "--oversubscribe" not in cmd and cmd[3:] == ["--bind-to", "none", *worker]


def test_root_environment_only_for_root_and_mpiexec():
    env = LAUNCHER.env(RunSpec(model="simplenet", backend="mpi"))
    if os.geteuid() == 0 and "OMPI_ALLOW_RUN_AS_ROOT" not in os.environ:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    elif os.geteuid() != 0:
        assert env == {}
    srun_env = LAUNCHER.env(RunSpec(model="simplenet", backend="mpi", launcher="srun"))
    assert srun_env == ({} if "PMIX_MCA_psec" in os.environ else {"PMIX_MCA_psec": "native"})


def test_slurm_plugin_choice_and_user_choice():
    assert slurm.plugin_for("openmpi", ("none", "pmi2", "pmix")) == "pmix"
    assert slurm.plugin_for("mpich", ("none", "pmi2", "pmix")) == "pmi2"
    assert slurm.plugin_for("openmpi", ("none", "pmi2")) is None      # not offered: leave it to the site
    assert slurm.plugin_for("unknown", ("pmix",)) is None
    assert slurm.user_chose_mpi("--mpi=pmi2") and slurm.user_chose_mpi("-N 1 --mpi pmix")
    assert not slurm.user_chose_mpi("--cpus-per-task 4") and not slurm.user_chose_mpi("--mpix=1")


def test_srun_lines_understood():
    assert slurm.queued_job("srun: job 42 queued and waiting for resources") == "42"
    assert slurm.queued_job("srun: job 42 has been allocated resources") is None
    bogus = "/usr/bin/srun: unrecognized option '--bogus'\nTry \"srun --help\" for more information"
    assert slurm.error_line(bogus) == "srun: unrecognized option '--bogus'"
    text = ("srun: job 9 queued and waiting for resources\nsrun: error: Unable to allocate resources: "
            "Requested node configuration is not available")
    assert slurm.error_line(text) == "srun: Unable to allocate resources: Requested node configuration is not available"
    assert slurm.error_line("srun: job 9 queued and waiting for resources") is None


def test_launcher_messages_name_the_rank():
    spec = RunSpec(model="simplenet", backend="mpi")
    died = ("prterun noticed that process rank 1 with PID 7407 on node vm exited on\n"
            "signal 9 (Killed).")
    assert explain_launcher_output(spec, died, 137) == "rank 1 died on vm with signal 9 (Killed)"
    exited = ("prterun detected that one or more processes exited with non-zero status,\n"
              "thus causing the job to be terminated. The first process to do so was:\n\n"
              "   Process name: [prterun-vm-7365@1,1]\n   Exit code:    3\n")
    assert explain_launcher_output(spec, exited, 3) == "rank 1 exited with code 3 before reporting"
    assert explain_launcher_output(spec, "srun: error: node7: task 3: Segmentation fault", 139) \
        == "rank 3 on node node7: Segmentation fault"
    # srun's lines as measured when rank 1 was killed on n2: n1's consequence printed first
    killed = ("srun: Job step aborted: Waiting up to 12 seconds for job step to finish.\n"
              "slurmstepd-n1: error: *** STEP 500006.0 ON n1 CANCELLED AT 2026-11-24T07:19:32 ***\n"
              "srun: error: n1: task 0: Killed\nsrun: error: n2: task 1: Killed")
    assert explain_launcher_output(spec, killed, 137) == "rank 1 on node n2: Killed"
    assert explain_launcher_output(spec, "something else", 1) is None
    # the ranks' own reports name the node (Slurm's name), where the launcher gave the host
    placed = [{"rank": 0, "node": "n1", "host": "vm"}, {"rank": 1, "node": "n2", "host": "vm"}]
    assert explain_launcher_output(spec, died, 137, placed) == "rank 1 died on node n2 with signal 9 (Killed)"
    assert explain_launcher_output(spec, exited, 3, placed) == "rank 1 on node n2 exited with code 3 before reporting"


def test_a_pending_step_s_hint_follows_slurm_s_reason(monkeypatch):
    """More nodes or CPUs than the partition has (Slurm: PartitionConfig) is not helped by
    waiting for nodes to free up: the hint names the partition, sinfo and --nodes."""
    line = "srun: job 500027 queued and waiting for resources"
    spec = RunSpec(model="simplenet", backend="mpi", launcher="srun", ranks=3, nodes=3)
    monkeypatch.setattr(slurm, "pending_reason", lambda job: "PartitionConfig")
    message, limit = LAUNCHER.notice(spec, line)
    assert message.startswith("srun: job 500027 is pending (PartitionConfig): the partition cannot run "
                              "3 tasks on 3 nodes (sinfo shows its nodes and CPUs); pass --oversubscribe or "
                              "fewer --ranks, or fewer --nodes, or another partition"), message
    assert "free the nodes" not in message and limit == slurm.pending_seconds()
    monkeypatch.setattr(slurm, "pending_reason", lambda job: "Resources")
    message, _ = LAUNCHER.notice(spec, line)
    assert "Slurm cannot start 3 tasks on 3 nodes now; pass --oversubscribe or fewer --ranks" in message


def test_a_failed_node_is_named_with_its_ranks():
    srun = RunSpec(model="simplenet", backend="mpi", launcher="srun", nodes=2)
    text = ["srun: error: Node failure on n2", "srun: error: n1: task 0: Exited with exit code 130"]
    placed = [{"rank": 0, "node": "n1"}, {"rank": 1, "node": "n2"}, {"rank": 2, "node": "n2"}]
    assert LAUNCHER.lost_node(srun, text) == "n2"
    reason = LAUNCHER.crash_reason(srun, text, 1, placed)
    assert reason.startswith("node n2 failed (Slurm: node failure): its ranks 1, 2 ended with it")
    assert "rank 0" not in reason   # task 0's exit is the consequence, not the cause
    assert LAUNCHER.lost_node(srun, text[1:]) is None
    # n2's slurmd and step daemon killed: srun hears how n1's rank ended, never n2's
    killed = ["srun: Job step aborted: Waiting up to 12 seconds for job step to finish.",
              "srun: error: n1: task 0: Killed", "srun: error: Timed out waiting for job step to complete"]
    assert LAUNCHER.lost_node(srun, killed, placed) == "n2"
    assert "node n2 failed (its step daemon stopped answering" in LAUNCHER.crash_reason(srun, killed, 1, placed)
    assert LAUNCHER.lost_node(srun, killed[:2], placed) is None   # the step ended: no one is missing
    assert LAUNCHER.lost_node(RunSpec(model="simplenet", backend="mpi"), text) is None


def test_reference_formatting():
    samples = [{"input": {"x": [float(v + r) for v in range(5)]},
                "output": {"y": [2.0 * (v + r) for v in range(5)]}} for r in (0, 1)]
    assert reference_lines(samples) == REFERENCE
    assert format_values([0.5, 1.25]) == "[        0.5,       1.25]"
    assert cores_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def _it(index, rank, seconds, forward, kind="timed", passed=True):
    return {"index": index, "rank": rank, "kind": kind, "seconds": seconds,
            "phases": {"forward": forward}, "passed": passed}


def test_statistics_across_ranks():
    its = [_it(1, 0, 1.0, 0.8), _it(1, 1, 3.0, 2.5), _it(2, 0, 2.0, 1.5), _it(2, 1, 2.0, 1.0),
           _it(1, 0, 9.0, 9.0, kind="warmup"), _it(1, 1, 9.0, 9.0, kind="warmup", passed=False)]
    timed = [it for it in its if it["kind"] == "timed"]
    assert [it["rank"] for it in mpi_stats.slowest_per_iteration(timed)] == [1, 0]
    rows = mpi_stats.per_iteration(timed)
    assert rows[0]["step_seconds"] == 3.0 and rows[0]["imbalance"] == pytest.approx(1.5)
    assert rows[0]["phases"]["forward"]["spread"] == pytest.approx(1.7)
    assert rows[1]["imbalance"] == pytest.approx(1.0)
    s = mpi_stats.summary(its)
    assert s["per_rank"]["1"]["median"] == 2.5 and s["per_rank"]["1"]["failed_checks"] == 1
    assert s["aggregate"]["step"]["median"] == 2.5
    assert s["aggregate"]["imbalance"]["max"] == pytest.approx(1.5)
    # an unranked run passes through unchanged: its headline is every timed iteration
    plain = [{"index": 1, "kind": "timed", "seconds": 1.0}, {"index": 2, "kind": "timed", "seconds": 2.0}]
    assert mpi_stats.slowest_per_iteration(plain) == plain and not mpi_stats.ranked(plain)
    from couplescope.frontends.cli.ranks_report import report_lines

    lines = report_lines(its, [{"rank": 0, "host": "h", "cores_text": "0", "threads": 1,
                                          "device": "cpu"}])
    assert lines[0] == "per rank (timed iterations):" and "FAILED 1" in lines[1]


def test_rank_device_mapping():
    from couplescope.protocol.errors import UsageError
    from couplescope.backends.mpi.team import rank_device

    assert [rank_device("cuda", r, 2) for r in range(4)] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    assert rank_device("cuda:1", 0, 2) == "cuda:1" and rank_device("cpu", 3, 0) == "cpu"
    with pytest.raises(UsageError, match="there are 2 CUDA devices"):
        rank_device("cuda:2", 0, 2)


def test_node_local_ranks_follow_the_node_names():
    from couplescope.backends.mpi.nodes import local_rank

    names = ["n1", "n2", "n1", "n1", "n2"]
    assert [local_rank(names, r) for r in range(5)] == [(0, 3), (0, 2), (1, 3), (2, 3), (1, 2)]


def test_more_ranks_than_cores_on_a_node_is_a_warning():
    from couplescope.backends.mpi.nodes import oversubscribed_nodes

    infos = ([{"rank": r, "host": "a", "host_cores": 2, "threads": 1} for r in range(3)]
             + [{"rank": r, "host": "b", "host_cores": 2, "threads": 1} for r in (3, 4)])
    found = oversubscribed_nodes(infos)
    assert len(found) == 1 and found[0]["message"].startswith("3 ranks on the 2 cores of node a")
