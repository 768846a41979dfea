"""What telemetry costs: the sampler thread's own CPU, and a real run's median with it on and off.

    /work/venv/bin/python benchmarks/telemetry_overhead.py [--seconds 10] [--pairs 3]

Part 1 watches a real busy process (a Python loop on one core, with two extra threads)
for a fixed period at 10 Hz and 50 Hz and reads the sampler thread's CPU time
(time.thread_time inside the thread). Each tick does what a run does: sample the tree,
the system and NVML, build the telemetry event, serialise it to a JSON line and add it
to the results timeline. Target: under 1% of one core at 10 Hz.

Part 3 runs the node sampler (couplescope.probes.node: the process each node of a
multi-node job runs) against R rank-like processes at 10 Hz and reads its own CPU time
from its samples: its start-up (Python, psutil, NVML's probe) and its steady cost per
second of sampling. Target: under 1% of one core per node at 10 Hz.

Part 2 runs the same small variant (StrideNet N=32 through TorchScript) with telemetry
off and on (10 Hz and 50 Hz), interleaved in one process so drift hits all alike, and
prints the median of each run's timed-iteration medians and the ratio to "off".
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from couplescope.protocol import events
from couplescope.probes.gpu import GpuProbe
from couplescope.core import pipeline, request
from couplescope.protocol.spec import RunSpec
from couplescope.core.telemetry.sampler import SamplerThread
from couplescope.probes.tree import TreeSampler
from couplescope.results.telemetry import TelemetryRecord

BUSY = """
import threading, time
def spin():
    x = 0
    while True:
        x += 1
def idle():
    while True:
        time.sleep(0.01)
for f in (idle, idle):
    threading.Thread(target=f, daemon=True).start()
spin()
"""


def sampler_cost(hz: float, seconds: float, gpu: GpuProbe) -> dict:
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    record = TelemetryRecord()
    sizes = []

    def deliver(sample):
        ev = events.make("telemetry", "bench", sample=sample)
        sizes.append(len(events.dumps(ev)))
        record.add(ev)
    try:
        time.sleep(0.3)   # let it start
        thread = SamplerThread(TreeSampler(busy.pid, gpu), hz, deliver)
        start = time.monotonic()
        thread.start()
        time.sleep(seconds)
        thread.stop()
        wall = time.monotonic() - start
    finally:
        busy.kill()
        busy.wait()
    return {"hz": hz, "wall": wall, "samples": thread.samples, "cpu": thread.cpu_seconds,
            "percent_of_core": 100.0 * thread.cpu_seconds / wall,
            "per_sample_ms": 1000.0 * thread.cpu_seconds / max(1, thread.samples),
            "bytes_per_event": statistics.mean(sizes) if sizes else 0}


SLEEPER = """
import threading, time
for _ in range(2):
    threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()
time.sleep(3600)
"""


def node_sampler_cost(ranks: int, hz: float, seconds: float) -> dict:
    """The node sampler watching `ranks` processes for `seconds`: its CPU from its samples."""
    import json

    fakes = [subprocess.Popen([sys.executable, "-c", SLEEPER]) for _ in range(ranks)]
    sampler = None
    try:
        time.sleep(0.3)
        listed = ",".join(f"{r}:{p.pid}" for r, p in enumerate(fakes))
        sampler = subprocess.Popen([sys.executable, "-m", "couplescope.probes.node", "--hz", str(hz),
                                    "--node", "bench", "--ranks", listed], stdout=subprocess.PIPE, text=True)
        first = json.loads(sampler.stdout.readline())
        deadline = time.monotonic() + seconds
        last, count = first, 1
        while time.monotonic() < deadline:
            last = json.loads(sampler.stdout.readline())
            count += 1
        size = len(json.dumps(last))
    finally:
        if sampler is not None:
            sampler.terminate()
            sampler.wait()
        for p in fakes:
            p.kill()
            p.wait()
    wall = last["t"] - first["t"]
    cpu = last["sampler"]["cpu_seconds"] - first["sampler"]["cpu_seconds"]
    return {"ranks": ranks, "startup_cpu": first["sampler"]["cpu_seconds"], "cpu": cpu, "wall": wall,
            "samples": count, "percent_of_core": 100.0 * cpu / wall if wall > 0 else float("nan"),
            "per_sample_ms": 1000.0 * cpu / max(1, count - 1), "bytes": size}


def run_median(spec: RunSpec, hz: float) -> float:
    builder = pipeline.run(request.from_specs([spec], telemetry_hz=hz)).builder
    v = builder.variants[spec.label]
    if v.status != "finished":
        raise SystemExit(f"benchmark run failed: {v.error}")
    return v.stats()["median"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="sampling period per rate (default 10)")
    ap.add_argument("--pairs", type=int, default=3, help="interleaved off/10 Hz/50 Hz rounds (default 3)")
    ap.add_argument("--iterations", type=int, default=300, help="timed iterations per run (default 300)")
    ap.add_argument("--node-ranks", default="2,8", help="ranks per node for part 3 (default 2,8)")
    ap.add_argument("--only-nodes", action="store_true", help="part 3 only")
    args = ap.parse_args()
    print(f"3) node sampler process at 10 Hz ({args.seconds:.0f} s per node size)")
    for ranks in (int(r) for r in args.node_ranks.split(",")):
        r = node_sampler_cost(ranks, 10.0, args.seconds)
        print(f"   {ranks:>3} ranks on the node: {r['percent_of_core']:.3f}% of one core "
              f"({r['cpu'] * 1000:.1f} ms CPU over {r['wall']:.1f} s, {r['samples']} samples, "
              f"{r['per_sample_ms']:.2f} ms CPU per sample, ~{r['bytes']} bytes per sample; "
              f"start-up {r['startup_cpu'] * 1000:.0f} ms CPU, once)")
    if args.only_nodes:
        return 0

    gpu = GpuProbe()
    print(f"GPU telemetry: {'available' if gpu.available else 'n/a (' + str(gpu.reason) + ')'}")
    print(f"1) sampler thread CPU while watching a busy process ({args.seconds:.0f} s per rate)")
    for hz in (10.0, 50.0):
        r = sampler_cost(hz, args.seconds, gpu)
        print(f"   {hz:>4.0f} Hz: {r['percent_of_core']:.3f}% of one core "
              f"({r['cpu'] * 1000:.1f} ms CPU over {r['wall']:.1f} s, {r['samples']} samples, "
              f"{r['per_sample_ms']:.2f} ms CPU per sample, ~{r['bytes_per_event']:.0f} bytes per event)")
    gpu.close()

    spec = RunSpec(model="stride", size=32, warmup=1, iterations=args.iterations, profile_iterations=0)
    print(f"2) median time per iteration, {spec.label}, {args.iterations} timed iterations, "
          f"{args.pairs} interleaved rounds")
    medians: dict[float, list[float]] = {0.0: [], 10.0: [], 50.0: []}
    for _ in range(args.pairs):
        for hz in medians:
            medians[hz].append(run_median(spec, hz))
    off = statistics.median(medians[0.0])
    for hz, values in medians.items():
        m = statistics.median(values)
        label = "off" if hz == 0 else f"{hz:.0f} Hz"
        runs = ", ".join(f"{v * 1000:.3f}" for v in values)
        print(f"   telemetry {label:>6}: median {m * 1000:.3f} ms (runs: {runs} ms), ratio to off {m / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
