"""The node sampler (couplescope.probes.node and probes.ranks), for real: the process a
multi-node job runs on each node, sampling rank-like processes on this machine; what it
keeps of each rank between ticks and what it writes on its pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def test_the_node_sampler_samples_its_ranks_and_their_children_never_itself():
    """The process a multi-node job runs on each node (couplescope.probes.node), for real:
    two rank processes (one busy, one with a child), its samples on a pipe, each naming the
    ranks it was given; it ends on its own once the ranks have gone."""
    import json

    from couplescope.probes.node import IterationState

    busy = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 60\nwhile time.time() < end: pass"])
    parent = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    state_file = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"state-{os.getpid()}"), "w+b")
    state_file.truncate(8)
    state = IterationState(state_file.fileno())
    state.set({"kind": "timed", "index": 7})
    sampler = subprocess.Popen([sys.executable, "-m", "couplescope.probes.node", "--hz", "20", "--node", "nX",
                                "--ranks", f"3:{busy.pid},4:{parent.pid}", "--state-fd", str(state_file.fileno())],
                               stdout=subprocess.PIPE, text=True, pass_fds=(state_file.fileno(),))
    def ready(sample):   # wait for a state: the child started, the busy rank seen running
        procs = sample["processes"]
        return (any(p["role"] == "child" for p in procs)
                and all(isinstance(p["cpu_percent"], float) for p in procs if p["role"] == "worker")
                and any(p["rank"] == 3 and p["cpu_percent"] > 0 for p in procs))
    try:
        samples = [json.loads(sampler.stdout.readline())]
        deadline = time.monotonic() + 60
        while not ready(samples[-1]) and time.monotonic() < deadline:
            samples.append(json.loads(sampler.stdout.readline()))
        busy.kill()
        parent.kill()
        busy.wait()
        parent.wait()
        assert sampler.wait(timeout=30) == 0   # its ranks have gone: it ends
    finally:
        for p in (busy, parent, sampler):
            if p.poll() is None:
                p.kill()
        state.close()
        state_file.close()
        os.unlink(state_file.name)
    last = samples[-1]
    assert last["node"] == "nX" and last["iteration"] == {"kind": "timed", "index": 7}
    workers = {(p["pid"], p["rank"]) for p in last["processes"] if p["role"] == "worker"}
    assert workers == {(busy.pid, 3), (parent.pid, 4)}
    children = [p for p in last["processes"] if p["role"] == "child"]
    assert [c["name"] for c in children] == ["sleep"]                  # the rank's own child
    assert sampler.pid not in {p["pid"] for p in last["processes"]}   # never itself
    by_rank = {p["rank"]: p for p in last["processes"] if p["role"] == "worker"}
    assert by_rank[3]["cpu_percent"] > 0 and by_rank[3]["rss"] > 0 and by_rank[3]["threads"] >= 1
    assert isinstance(by_rank[3]["affinity"], list) and set(by_rank[3]["ctx_switches"]) == {"voluntary", "involuntary"}
    assert isinstance(last["system"]["load"], list) and len(last["system"]["cpu_percent"]) == os.cpu_count()
    assert last["sampler"]["cpu_seconds"] > 0 and last["sampler"]["dropped"] == 0
    # its own share, as every sample has it, so that other processes' CPU can be told apart
    from couplescope.probes.tree import others_cpu_percent

    assert isinstance(last["sampler"]["cpu_percent"], float) and isinstance(others_cpu_percent(last), float)


def test_the_node_sampler_drops_a_rank_that_ended_and_its_open_stat_file():
    """The ranks' /proc/<pid>/stat stay open between samples (a pread a tick); a rank that
    ends leaves the samples, and its file is closed, not kept for a pid the kernel may
    give to another process."""
    from couplescope.probes.ranks import RanksSampler

    def open_stats() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/proc/") and target.endswith("/stat"):
                found.add(target)
        return found

    ranks = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(2)]
    try:
        sampler = RanksSampler({p.pid: r for r, p in enumerate(ranks)})
        first = sampler.sample()
        assert {p["rank"] for p in first["processes"]} == {0, 1}
        assert {f"/proc/{p.pid}/stat" for p in ranks} <= open_stats()
        ranks[1].kill()
        ranks[1].wait()
        after = sampler.sample()
        assert [(p["pid"], p["rank"]) for p in after["processes"] if p["role"] == "worker"] == [(ranks[0].pid, 0)]
        assert f"/proc/{ranks[1].pid}/stat" not in open_stats()
        ranks[0].kill()
        ranks[0].wait()
        assert sampler.sample() is None and f"/proc/{ranks[0].pid}/stat" not in open_stats()
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_the_node_sampler_reads_many_ranks_in_turn_and_reports_every_one():
    """Past READS_PER_TICK ranks on a node, a tick reads the next READS_PER_TICK afresh and
    every sample still holds every rank (the others' latest readings): the cost per tick
    stays bounded whatever the ranks per node."""
    from couplescope.probes import ranks as node_ranks

    count = node_ranks.READS_PER_TICK + 8
    ranks = [subprocess.Popen(["sleep", "600"]) for _ in range(count)]
    try:
        sampler = node_ranks.RanksSampler({p.pid: r for r, p in enumerate(ranks)})
        sampler.sample()                      # the first reads every rank (nothing to reuse)
        read, real = [], sampler._stat
        sampler._stat = lambda pid: (read.append(pid), real(pid))[1]
        seen = set()
        for _ in range(3):
            read.clear()
            got = sampler.sample()
            assert {p["rank"] for p in got["processes"] if p["role"] == "worker"} == set(range(count))
            assert len(read) == node_ranks.READS_PER_TICK
            seen.update(read)
        assert seen == {p.pid for p in ranks}   # every rank had its turn
    finally:
        for p in ranks:
            p.kill()
            p.wait()


def test_a_node_sample_line_is_the_sample_whichever_readings_were_reused():
    """The node sampler encodes each reading once, when it is read, and builds each line
    from those pieces: every line must still decode to exactly the sample it was made
    from, on ticks that read some processes afresh and reuse the others."""
    import json

    from couplescope.probes import ranks as node_ranks

    encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str).encode
    ranks = [subprocess.Popen(["sleep", "600"]) for _ in range(node_ranks.READS_PER_TICK + 4)]
    try:
        sampler = node_ranks.RanksSampler({p.pid: r for r, p in enumerate(ranks)})
        lines = []
        for tick in range(4):
            sample = sampler.sample()
            sample.update(t=float(tick), node="n1", iteration=None)
            line = sampler.line(sample, encode)
            assert line.endswith(b"\n") and line.count(b"\n") == 1
            assert json.loads(line) == json.loads(encode(sample))
            lines.append(json.loads(line))
        # later ticks carried fresh CPU readings for some ranks and kept the rest
        cpu = [{p["pid"]: p["cpu_percent"] for p in got["processes"]} for got in lines]
        assert all(len(c) == len(ranks) for c in cpu)
        assert all(v == node_ranks.NA for v in cpu[0].values()) and any(v != node_ranks.NA for v in cpu[1].values())
    finally:
        for p in ranks:
            p.kill()
            p.wait()
