"""Telemetry: the parent's sampler watching real worker processes, results.json, NVML absent.

Every run here starts real workers (real torch, real TorchScript); the sampler reads
them through psutil from the parent, exactly as in a user's run.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

import pytest

from couplescope.protocol import events
from couplescope.probes.gpu import NA, GpuProbe, query
from couplescope.core.session import Listener, Session
from couplescope.protocol.spec import RunSpec
from couplescope.core.telemetry.listener import IterationTracker, TelemetryListener
from couplescope.core.telemetry.sampler import SamplerThread
from couplescope.probes.tree import TreeSampler
from couplescope.results.telemetry import TIMELINE_BOUND, TelemetryRecord, scalar_series

HZ = 20.0


class Recorder(Listener):
    """Keeps every event with the time it arrived, and each worker's pid and lifetime."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.workers: dict[str, dict] = {}

    def worker_started(self, spec, proc) -> None:
        self.workers[spec.label] = {"pid": proc.pid, "start": time.monotonic()}

    def on_event(self, ev) -> None:
        self.events.append(ev)

    def worker_ended(self, spec, proc) -> None:
        self.workers[spec.label]["end"] = time.monotonic()
        self.workers[spec.label]["events_at_end"] = len(self.events)

    def of(self, kind, variant=None):
        return [e for e in self.events if e["event"] == kind and (variant is None or e.get("variant") == variant)]


@pytest.fixture(scope="module")
def two_variant_run():
    """stride N=32 (a second or two of iterations) then simplenet, sampled at 20 Hz."""
    specs = [RunSpec(model="stride", size=32, iterations=400, warmup=1, profile_iterations=0),
             RunSpec(model="simplenet", iterations=20, warmup=1, profile_iterations=0)]
    recorder = Recorder()
    session = Session(specs, [TelemetryListener(HZ), recorder], title="telemetry-test")
    builder = session.run()
    return specs, recorder, builder


@pytest.mark.e2e
def test_samples_never_outrun_the_configured_rate_and_cover_the_worker(two_variant_run):
    specs, rec, builder = two_variant_run
    for spec in specs:
        name = spec.label
        w = rec.workers[name]
        samples = rec.of("telemetry", name)
        lifetime = w["end"] - w["start"]
        expected = lifetime * HZ
        # never faster than the rate; how many ticks a busy machine lets the sampler keep is
        # the machine's business (missed ticks are skipped), so no lower bound on the count
        # (test_sampler_thread_never_outruns_its_rate... checks the grid itself)
        assert 2 <= len(samples) <= 1.1 * expected + 2, (len(samples), lifetime)
        gaps = sorted(b["t"] - a["t"] for a, b in zip(samples, samples[1:]))
        assert gaps[len(gaps) // 2] >= 0.03, gaps[len(gaps) // 2]   # not bunched
        for ev in samples:
            s = ev["sample"]
            worker = [p for p in s["processes"] if p["pid"] == w["pid"]]
            assert worker and worker[0]["role"] == "worker"
            assert s["tree"]["processes"] >= 1 and s["elapsed"] >= 0
            assert set(worker[0]) >= {"cpu_percent", "rss", "threads", "affinity", "ctx_switches"}
            assert isinstance(s["system"]["cpu_percent"], list) and len(s["system"]["cpu_percent"]) == os.cpu_count()
        later = samples[1:]   # the first reading of a process has no CPU interval: n/a
        assert samples[0]["sample"]["processes"][0]["cpu_percent"] == NA
        assert any(isinstance(e["sample"]["tree"]["cpu_percent"], float) and e["sample"]["tree"]["cpu_percent"] > 0
                   for e in later)
        assert all(e["sample"]["processes"][0]["rss"] > 0 for e in samples)
        # nothing is emitted after worker_ended returned: the sampler stopped
        assert all(ev["event"] != "telemetry" or ev["variant"] != name
                   for ev in rec.events[w["events_at_end"]:])
    stride = rec.of("telemetry", specs[0].label)
    tagged = [e["sample"]["iteration"] for e in stride if e["sample"]["iteration"]]
    timed = [t["index"] for t in tagged if t["kind"] == "timed"]
    assert len(timed) >= 5 and timed == sorted(timed) and max(timed) <= 400


@pytest.mark.e2e
def test_no_gpu_path_gives_na_without_errors_and_says_so_once(two_variant_run):
    specs, rec, builder = two_variant_run
    if GpuProbe().available:
        pytest.skip("a GPU is present: the no-GPU path is not what runs here")
    assert all(e["sample"]["gpu"] == NA for e in rec.of("telemetry"))
    notices = [e for e in rec.of("log") if "GPU" in e["message"]]
    assert len(notices) == 1, notices   # one notice for the session, not per variant or sample
    assert "no GPU telemetry" in notices[0]["message"] and "n/a" in notices[0]["message"]
    assert not [e for e in rec.of("log") if "sampling error" in e["message"]]
    for spec in specs:
        v = builder.variants[spec.label]
        assert v.status == "finished"
        summary = v.telemetry.summary()
        assert summary["samples"] == len(rec.of("telemetry", spec.label))
        for key in ("gpu_utilization_mean", "gpu_utilization_peak", "gpu_memory_peak", "gpus"):
            assert summary[key] == NA
        assert summary["cpu_percent_peak"] > 0 and summary["rss_peak"] > 50 * 2**20
        assert 10 <= summary["rate_hz"] <= 22


@pytest.mark.e2e
def test_results_json_holds_timeline_and_summary_and_headless_prints_a_line(cli, tmp_path):
    r = cli("--model", "stride", "--size", "32", "--iterations", "200", "--warmup", "1",
            "--profile-iterations", "0", "--telemetry-hz", "20", "--quiet", "--export", "runs")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    line = next(x for x in lines if x.startswith("telemetry: worker CPU mean"))
    assert lines.index(line) > lines.index("sample size: 200")  # after the statistics
    assert "RSS peak" in line and "GPU n/a" in line
    doc = json.load(open(glob.glob(str(tmp_path / "runs" / "*" / "results.json"))[0]))
    tele = doc["variants"][0]["telemetry"]
    summary, timeline = tele["summary"], tele["timeline"]
    assert summary["samples"] == len(timeline) >= 10 and tele["timeline_stride"] == 1
    for key in ("cpu_percent_mean", "cpu_percent_peak", "rss_peak", "gpu_utilization_mean",
                "gpu_utilization_peak", "gpu_memory_peak"):
        assert key in summary
    assert all({"t", "elapsed", "iteration", "rss_mib"} <= set(e) for e in timeline)
    assert any((e["iteration"] or {}).get("kind") == "timed" for e in timeline)
    with open(glob.glob(str(tmp_path / "runs" / "*" / "events.jsonl"))[0]) as f:
        kinds = [json.loads(x)["event"] for x in f]
    assert kinds.count("telemetry") == summary["samples"]
    # the same series as TensorBoard scalars, read back with TensorBoard's own reader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = glob.glob(str(tmp_path / "runs" / "*" / "traces" / "*"))[0]
    acc = EventAccumulator(logdir)
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert {"telemetry/rss_mib", "telemetry/cpu_percent", "telemetry/threads"} <= set(tags), tags
    rss = acc.Scalars("telemetry/rss_mib")
    # samples taken before the run directory existed (model loading) are not in it
    assert 5 <= len(rss) <= summary["samples"] and all(e.value > 10 for e in rss)
    assert [e.step for e in rss] == sorted(e.step for e in rss)


def test_timeline_is_bounded_and_the_summary_uses_every_sample():
    record = TelemetryRecord()
    n = 10 * TIMELINE_BOUND + 7
    for i in range(n):
        sample = {"elapsed": i / 10, "iteration": {"kind": "timed", "index": i},
                  "tree": {"processes": 1, "cpu_percent": float(i % 100), "rss": 1000 + i, "threads": 3},
                  "system": {"cpu_percent": [50.0, 100.0]}, "gpu": NA}
        record.add(events.make("telemetry", variant="v", sample=sample))
    d = record.to_dict()
    assert TIMELINE_BOUND // 2 <= len(d["timeline"]) <= TIMELINE_BOUND
    assert d["timeline_stride"] == 16   # 2000 -> 4000 -> 8000 -> 16000 samples: halved 4 times
    elapsed = [e["elapsed"] for e in d["timeline"]]   # evenly thinned, the first sample kept
    assert elapsed[0] == 0 and all(round((b - a) * 10) == 16 for a, b in zip(elapsed, elapsed[1:]))
    s = d["summary"]
    assert s["samples"] == n and s["rss_peak"] == 1000 + n - 1 and s["cpu_percent_peak"] == 99.0
    assert s["system_cpu_percent_mean"] == 75.0 and s["gpus"] == NA


def test_scalar_series_leaves_out_na_and_names_ranks_and_gpus():
    sample = {"tree": {"cpu_percent": NA, "rss": 2 * 2**20, "threads": 4},
              "system": {"cpu_percent": NA, "memory_percent": 12.5},
              "processes": [{"role": "worker", "rank": 1, "cpu_percent": 90.0, "rss": 2**20}],
              "gpu": [{"index": 0, "utilization": 40, "memory_used": NA, "worker_memory": 3 * 2**20,
                       "power_w": NA, "temperature_c": 55, "sm_clock_mhz": NA}]}
    assert scalar_series(sample) == {"rss_mib": 2.0, "threads": 4, "memory_percent": 12.5,
                                     "rank1/cpu_percent": 90.0, "rank1/rss_mib": 1.0,
                                     "gpu0/utilization": 40, "gpu0/worker_memory_mib": 3.0,
                                     "gpu0/temperature_c": 55}


def test_iteration_tracker_names_the_running_iteration():
    t = IterationTracker(RunSpec(model="simplenet", warmup=1, iterations=2, profile_iterations=1))
    assert t.current is None
    seen = []
    for ev in ([{"event": "model_loaded"}] +
               [{"event": "iteration", "kind": k, "index": i} for k, i in
                (("warmup", 1), ("timed", 1), ("timed", 2), ("profiled", 1))]):
        t.on_event(ev)
        seen.append(t.current)
    assert seen == [{"kind": "warmup", "index": 1}, {"kind": "timed", "index": 1},
                    {"kind": "timed", "index": 2}, {"kind": "profiled", "index": 1}, None]


def test_tree_sampler_survives_children_that_come_and_go(monkeypatch):
    """A real process tree whose children end between samples: no exception, never a stale
    pid. The churn goes on until the sampler has seen children come and go (a state, so a
    busy machine that samples slowly only takes longer). The sampler looks for new
    processes every 50 ms here, not twice a second, so that six children are seen soon."""
    from couplescope.probes import tree

    monkeypatch.setattr(tree, "SLOW_PERIOD", 0.05)
    script = "while true; do sleep 0.05 & sleep 0.03 & wait; done"
    root = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    sampler = TreeSampler(root.pid)
    seen_children, samples = set(), []
    deadline = time.monotonic() + 300   # bounds a failure only
    try:
        while len(seen_children) < 6 or len(samples) < 20:
            assert time.monotonic() < deadline, (len(samples), seen_children)
            s = sampler.sample()
            if s is not None:
                samples.append(s)
                seen_children |= {p["pid"] for p in s["processes"] if p["pid"] != root.pid}
            time.sleep(0.005)
    finally:
        os.killpg(root.pid, 9)
        root.wait()
    for s in samples:
        for p in s["processes"]:
            assert p["rss"] == NA or p["rss"] > 0
    assert sampler.sample() is None           # root gone: no sample, no exception
    assert TreeSampler(2**22 + 12345).sample() is None   # a pid that does not exist


def test_sampler_thread_never_outruns_its_rate_and_measures_its_own_cpu():
    """At 50 Hz: never more samples than the grid has ticks (missed ticks are skipped, not
    bunched), and its own CPU time counted. It runs until it has delivered 40 samples (a
    state): how fast it gets there depends on the machine's load, what it may never do
    does not."""
    import threading

    root = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    got, enough = [], threading.Event()

    def deliver(sample):
        got.append(sample)
        if len(got) >= 40:
            enough.set()

    thread = SamplerThread(TreeSampler(root.pid), 50.0, deliver)
    started = time.monotonic()
    try:
        thread.start()
        assert enough.wait(300), len(got)
        thread.stop()
        elapsed = time.monotonic() - started
    finally:
        root.kill()
        root.wait()
    assert 40 <= len(got) <= 50 * elapsed + 2 and thread.samples == len(got)
    # CPU time, not wall time: a loaded machine delays the thread but costs it no more CPU
    assert 0 < thread.cpu_seconds < 0.01 * thread.samples and thread.error is None


def test_nvml_queries_never_raise():
    import pynvml

    probe = GpuProbe()
    if probe.available:
        pytest.skip("a GPU is present: the no-GPU path is not what runs here")
    assert "NVML" in probe.reason or "pynvml" in probe.reason
    assert probe.sample([os.getpid()]) == NA
    probe.close()

    def missing_function(*args):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
    pynvml_like = type("Driver", (), {"nvmlDeviceGetPowerUsage": staticmethod(missing_function)})
    assert query(pynvml_like, "nvmlDeviceGetPowerUsage", None) == NA      # an old driver
    assert query(pynvml, "nvmlDeviceGetNoSuchFunction", None) == NA      # a missing binding
    assert query(pynvml, "nvmlDeviceGetCount") == NA                     # NVML not initialised
    assert query(None, "nvmlInit") == NA


@pytest.mark.cuda
def test_gpu_probe_reads_a_real_device():
    import torch

    x = torch.ones(1 << 20, device="cuda")   # this process holds device memory
    probe = GpuProbe()
    assert probe.available, probe.reason
    devices = probe.sample([os.getpid()])
    d = devices[torch.cuda.current_device()]
    assert isinstance(d["memory_total"], int) and d["memory_total"] > 0
    assert d["utilization"] == NA or 0 <= d["utilization"] <= 100
    assert d["worker_memory"] == NA or d["worker_memory"] > 0
    probe.close()
    del x


def _mpi_works() -> bool:
    from couplescope import backends

    return backends.unavailable("mpi", RunSpec(model="simplenet", backend="mpi")) is None


@pytest.mark.mpi
@pytest.mark.e2e
@pytest.mark.skipif(not _mpi_works(), reason="the mpi backend is not available here")
def test_telemetry_covers_both_mpi_ranks(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    spec = RunSpec(model="stride", size=32, backend="mpi", ranks=2, iterations=300, profile_iterations=0)
    rec = Recorder()
    builder = Session([spec], [TelemetryListener(HZ), rec]).run()
    assert builder.variants[spec.label].status == "finished", builder.variants[spec.label].error
    ranks_seen = set()
    for ev in rec.of("telemetry"):
        workers = [p for p in ev["sample"]["processes"] if p["role"] == "worker"]
        assert len(workers) <= 2   # the launcher (mpiexec/prterun) is in the tree, not a worker
        assert ev["sample"]["processes"][0]["role"] == "root"
        ranks_seen |= {p["rank"] for p in workers}
    assert {0, 1} <= ranks_seen
    timeline = builder.variants[spec.label].telemetry.to_dict()["timeline"]
    assert any("rank0/rss_mib" in e and "rank1/rss_mib" in e for e in timeline)


@pytest.mark.parametrize("rate", ["-1", "nan", "inf", "500"])
def test_a_bad_rate_is_one_line_exit_2_and_writes_nothing(command, tmp_path, rate):
    r = command("--model", "simplenet", f"--telemetry-hz={rate}", "--export", "runs")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--telemetry-hz must be between 0 and 100" in r.stderr
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")
