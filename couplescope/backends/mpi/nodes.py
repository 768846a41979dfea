"""Nodes, as the ranks see them: which node a rank is on, its CPUs there, and the checks
that only make sense per node (rank side; the parent never imports this).

A rank's node is Slurm's node name (SLURMD_NODENAME) when srun started it, else the
host name: on a cluster node names and host names usually agree, but several slurmd
on one machine (a test cluster, a fat node split in two) share one host name, and
Slurm's name is the one squeue, scontrol and the user's batch script speak. The
node-local rank is a rank's place among the job's ranks on the same node, by that
name, and the device a rank takes comes from it: rank r of its node uses cuda:(r mod
the GPUs it sees), whatever its global rank. Not from MPI's shared-memory split
(COMM_TYPE_SHARED): Open MPI 5 under srun's PMIx finds a rank's peers by comparing the
host name with Slurm's node names, and where they differ (NodeName n1 on host vm) it put
every rank in a group of its own: two ranks on n1 both said local rank 0, both started
n1's sampler, and would both have taken GPU 0.
"""

from __future__ import annotations

import os
import socket


def node_name() -> str:
    """Slurm's name for the node this process runs on, else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def node_cpus() -> tuple[int, str]:
    """The CPUs this job may use on this node, and where that number came from: Slurm's
    SLURM_CPUS_ON_NODE (what the allocation gave the job here: with --overcommit three
    tasks may share one) when srun started the rank, else the node's CPU count."""
    text = os.environ.get("SLURM_CPUS_ON_NODE", "")
    if text.isdigit() and int(text) > 0:
        return int(text), "SLURM_CPUS_ON_NODE"
    return os.cpu_count() or 1, "os.cpu_count"


def local_rank(names: list[str], rank: int) -> tuple[int, int]:
    """(node-local rank, ranks on the node) of `rank`, from every rank's node name (the
    ranks' allgather of node_name(), in rank order)."""
    mine = [r for r, name in enumerate(names) if name == names[rank]]
    return mine.index(rank), len(mine)


def gpu_slot(local_rank: int, visible: int) -> int:
    """The GPU index rank `local_rank` of its node takes with --device cuda: its node-local
    rank modulo the GPUs it sees. Computed (and reported) on CPU runs too; with no GPU in
    sight it is the node-local rank, the GPU it would take with one GPU per rank."""
    return local_rank % visible if visible > 0 else local_rank


def group_by_node(infos: list[dict]) -> dict[str, list[dict]]:
    """Rank reports grouped by node, nodes in the order of their lowest rank."""
    groups: dict[str, list[dict]] = {}
    for info in sorted(infos, key=lambda i: i["rank"]):
        groups.setdefault(info.get("node") or info.get("host", "?"), []).append(info)
    return groups


def usable_cores(group: list[dict]) -> int:
    """Cores the ranks of one node can run on: what the job has there, and no more than
    the cores they are bound to between them (three ranks bound to core 0 share one)."""
    cpus = min(i.get("node_cpus") or i.get("host_cores") or 1 for i in group)
    bound = set()
    for i in group:
        bound.update(i.get("cores") or ())
    return min(cpus, len(bound)) if bound else cpus


def oversubscribed_nodes(infos: list[dict]) -> list[dict]:
    """Per node, from the ranks' own reports (so with telemetry off too): more ranks than
    cores (the ranks time-share them), or more ranks x torch threads than cores. Each is
    {check, message, setting}, naming the node."""
    found = []
    for node, group in group_by_node(infos).items():
        cores = usable_cores(group)
        ranks = len(group)
        threads = sum(i.get("threads") or 1 for i in group)
        where = f"the {cores} core{'s' if cores != 1 else ''} of node {node}"
        if ranks > cores:
            found.append({"check": "oversubscribed_ranks", "setting": "--ranks, --oversubscribe",
                          "message": f"{ranks} ranks on {where}: the ranks time-share cores, so step "
                                     "times include waiting for one; use fewer --ranks (or more "
                                     "--nodes) for step times a simulation with a core per rank "
                                     "would see"})
        elif threads > cores:
            fit = max(1, cores // ranks)
            found.append({"check": "oversubscribed", "setting": "--threads, --ranks",
                          "message": f"{ranks} rank{'s' if ranks != 1 else ''} x "
                                     f"{threads // ranks} torch threads = {threads} threads on {where}: "
                                     f"the threads compete for cores and slow each other down; use "
                                     f"--threads {fit} or fewer ranks per node (--ranks, --nodes)"})
    return found
