"""The parent at scale: the events of many ranks, fed to the real pipeline by a simulated job.

    python benchmarks/parent_scale.py --ranks 1024 --iterations 1000
    python benchmarks/parent_scale.py --ranks 64,256,1024 --iterations 1000   (one line each)

A generator process writes, on a pipe and through the worker's own event channel
(couplescope.worker.channel: what waits is sent every 50 ms, each rank's calls as one
`iterations` event), the events rank 0 of an srun job with R ranks on R /
--ranks-per-node nodes writes (couplescope.backends.mpi.team): run_started, one
rank_info per rank, model_loaded, then per iteration one `iteration` event per rank, and
every node's telemetry sample at --telemetry-hz (each with its ranks' processes), paced
to a step of --step-ms, and variant_finished with every rank's placement. The parent
side is the real one: the events are parsed as couplescope.core.runner parses a worker's
stdout, and go through the real pipeline (session, results builder, run directory with
events.jsonl and results.json, TensorBoard scalars, telemetry listener and its
diagnostics, the headless printer writing to a file as a batch job's would).

Printed: events and bytes; the parent's throughput (events per second parsed and
handled), CPU (seconds, and percent of one core while the stream lasted) and peak RSS;
whether it kept up with the simulated job (stream time vs simulated time); and the time
from the last event (variant_finished, as the job wrote it) to the per-rank table
printed and to results.json written. Exits 1 when the table comes more than --limit
seconds (60) after the last event.

The generator and the parent share the machine's cores: on a 2-core machine the figures
include that competition (a real job's ranks run elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from couplescope.protocol import events

PHASES = ("marshal_in", "forward", "marshal_out")


# -- the simulated job (a subprocess: its CPU is not the parent's) -----------------------------

def emit(ranks: int, iterations: int, warmup: int, per_node: int, step: float, hz: float, variant: str,
         spec: dict) -> None:
    """Write the job's event lines on stdout, paced so that simulated time never runs ahead
    of wall time (step 0: as fast as possible)."""
    from couplescope.worker.channel import EventChannel

    channel = EventChannel(sys.stdout)
    nodes = [f"n{i + 1}" for i in range(-(-ranks // per_node))]
    pids = {r: 100000 + r for r in range(ranks)}

    def write(event: str, **fields) -> None:
        channel(events.make(event, variant, **fields))

    write("run_started", spec=spec, environment={"python": sys.version.split()[0], "torch_threads": 1,
                                                 "mpi": {"world_size": ranks, "launcher": "srun"}},
          coupling="mpi, simulated")
    placements = []
    for r in range(ranks):
        info = {"rank": r, "world_size": ranks, "local_rank": r % per_node, "local_size": per_node,
                "host": nodes[r // per_node], "pid": pids[r], "node": nodes[r // per_node],
                "node_cpus": per_node, "node_cpus_from": "SLURM_CPUS_ON_NODE", "cores": [r % per_node],
                "cores_text": str(r % per_node), "host_cores": per_node, "threads": 1,
                "threads_from": "bound cores", "interop_threads": 1, "device": "cpu", "visible_devices": 0,
                "gpu_slot": r % per_node}
        placements.append(info)
        write("rank_info", **info)
    write("model_loaded", seconds=0.5, size=5, dtype="float32", tolerance=1e-5, backend="mpi",
          inputs={"x": [5]}, outputs={"y": [5]}, ranks=ranks, per_rank_seconds=[0.5] * ranks,
          inner_backend="torchscript", torchscript=True)
    start, sample_every, next_sample, samples = time.monotonic(), 1.0 / hz if hz > 0 else None, 0.0, 0
    plan = [("warmup", i + 1) for i in range(warmup)] + [("timed", i + 1) for i in range(iterations)]
    for k, (kind, index) in enumerate(plan):
        simulated = (k + 1) * step
        now = time.time()
        for r in range(ranks):
            seconds = step * (0.9 + 0.1 * ((r * 7 + k) % 11) / 10) or 1e-4
            channel({"event": "iteration", "t": now, "variant": variant, "index": index, "kind": kind,
                     "seconds": seconds, "phases": {"marshal_in": seconds * 0.05, "forward": seconds * 0.9,
                                                    "marshal_out": seconds * 0.05},
                     "max_rel_error": 0.0, "passed": True, "error": None, "rank": r})
        while sample_every is not None and next_sample <= simulated:   # each node's sampler
            for n, node in enumerate(nodes):
                mine = range(n * per_node, min(ranks, (n + 1) * per_node))
                sample = {"processes": [{"pid": pids[r], "role": "worker", "rank": r, "name": "python3",
                                         "cpu_percent": 99.0, "rss": 300 * 2**20, "threads": 3,
                                         "affinity": [r % per_node],
                                         "ctx_switches": {"voluntary": 10, "involuntary": 5}} for r in mine],
                          "tree": {"processes": len(mine), "cpu_percent": 99.0 * len(mine),
                                   "rss": 300 * 2**20 * len(mine), "threads": 3 * len(mine)},
                          "system": {"cpu_percent": [99.0] * per_node, "memory_used": 2**34,
                                     "memory_total": 2**36, "memory_percent": 25.0, "load": [8.0, 8.0, 8.0]},
                          "gpu": "n/a", "node": node, "elapsed": next_sample,
                          "iteration": {"kind": kind, "index": index},
                          "sampler": {"cpu_seconds": 0.01, "dropped": 0}}
                channel(events.make("telemetry", variant, sample=sample, node=node))
                samples += 1
            next_sample += sample_every
        ahead = start + simulated - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    write("variant_finished", summary={"ranks": placements})
    channel.flush()


# -- the parent: the real pipeline, fed from the generator's pipe -----------------------------

class PipeWorkers:
    """The simulated job behind the session's worker seam (couplescope.core.workers): a
    process per variant whose stdout is parsed line by line, as the live workers' is.
    `processes` is True: the parent's telemetry listener is in the chain, as in a real run
    (an srun job's: node-sampled, so it starts no sampler of its own)."""

    processes = True

    def __init__(self, command, clock: dict) -> None:
        self.command, self.clock = command, clock

    def prepare(self, spec, emit) -> None:
        pass

    def start(self, spec, env: dict, shares=None) -> "PipeWorker":
        return PipeWorker(self.command(spec), self.clock)


class PipeWorker:
    """One simulated job: events parsed from its stdout (a batch's calls expanded once, in
    events.parse, as for a live worker)."""

    def __init__(self, cmd: list[str], clock: dict) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1 << 20)
        self.pid = self.proc.pid
        self.returncode = None
        self.clock = clock
        self.output, self.output_total = [], 0
        self.on_notice = None

    def events(self):
        first = True
        for line in self.proc.stdout:
            event = events.parse(line)
            if event is None:
                continue
            if first:
                self.clock["first"], first = time.monotonic(), False
            self.clock["events"] = self.clock.get("events", 0) + 1
            self.clock["bytes"] = self.clock.get("bytes", 0) + len(line)
            if event["event"] in ("iteration", "iterations"):
                self.clock["calls"] = self.clock.get("calls", 0) + (event.count if event["event"]
                                                                    == "iterations" else 1)
            if event["event"] == "variant_finished":
                self.clock["last"] = time.monotonic()
                self.clock["last_written"] = event["t"]
            yield event
        self.returncode = self.proc.wait()

    def stop(self, timeout: float = 0.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()

    def crash_reason(self, after: str = "") -> str:
        return f"the generator ended with {self.proc.returncode} {after}"


def measure(ranks: int, args) -> dict:
    from couplescope.core import pipeline
    from couplescope.core.request import RunRequest
    from couplescope.frontends.cli.printer import HeadlessPrinter
    from couplescope.protocol.listener import Listener
    from couplescope.protocol.spec import RunSpec

    per_node = min(args.ranks_per_node, ranks)
    nodes = -(-ranks // per_node)
    spec = RunSpec(model="simplenet", backend="mpi", ranks=ranks, launcher="srun", nodes=nodes,
                   iterations=args.iterations, warmup=args.warmup, profile_iterations=0,
                   name=f"scale-{ranks}")
    clock: dict = {}

    class Timer(Listener):
        def variant_done(self, builder) -> None:   # after the printer's per-rank table
            clock["table"] = time.monotonic()
            clock["table_wall"] = time.time()

    def command(spec):
        return [sys.executable, os.path.abspath(__file__), "--emit", str(ranks), "--iterations",
                str(args.iterations), "--warmup", str(args.warmup), "--ranks-per-node", str(per_node),
                "--step-ms", str(args.step_ms), "--telemetry-hz", str(args.telemetry_hz),
                "--variant", spec.label, "--spec", json.dumps(spec.to_dict())]

    with tempfile.TemporaryDirectory(prefix="couplescope-scale-") as tmp:
        out = open(os.path.join(tmp, "job.out"), "w")
        printer = HeadlessPrinter(1, out=out, err=out, quiet_iterations=args.quiet)
        request = RunRequest(title=f"scale-{ranks}", specs=(spec,),
                             export=None if args.no_export else os.path.join(tmp, "runs"),
                             telemetry_hz=args.telemetry_hz)
        cpu0 = time.process_time()
        run = pipeline.Pipeline(request, [printer, Timer()], workers=PipeWorkers(command, clock),
                                summary_plot=False)
        outcome = run.run()
        done = time.monotonic()
        cpu = time.process_time() - cpu0
        printer.close()
        out.close()
        size = os.path.getsize(os.path.join(tmp, "job.out"))
        results = (os.path.getsize(os.path.join(outcome.run_directory, "results.json"))
                   if outcome.run_directory else 0)
    stream = clock["last"] - clock["first"]
    simulated = (args.iterations + args.warmup) * args.step_ms / 1000.0
    return {"ranks": ranks, "nodes": nodes, "events": clock["events"], "calls": clock.get("calls", 0),
            "mib": clock["bytes"] / 2**20, "stream_s": stream, "simulated_s": simulated,
            "events_per_s": clock["events"] / stream, "calls_per_s": clock.get("calls", 0) / stream,
            "cpu_s": cpu, "cpu_us_per_call": 1e6 * cpu / max(1, clock.get("calls", 0)),
            "cpu_percent": 100.0 * cpu / (done - clock["first"]),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "table_after_last_event_s": clock["table_wall"] - clock["last_written"],
            "table_after_received_s": clock["table"] - clock["last"],
            "done_after_last_event_s": done - clock["last"] + (clock["table_wall"] - clock["last_written"])
                                       - (clock["table"] - clock["last"]),
            "printed_mib": size / 2**20, "results_mib": results / 2**20, "exit": outcome.exit_code}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="1024", help="ranks, or a comma list (each measured in a process of its own)")
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--ranks-per-node", type=int, default=8)
    p.add_argument("--step-ms", type=float, default=10.0, help="the simulated step time (0: as fast as possible)")
    p.add_argument("--telemetry-hz", type=float, default=10.0)
    p.add_argument("--quiet", action="store_true", help="the printer's --quiet (no PASSED line per rank)")
    p.add_argument("--no-export", action="store_true", help="no run directory (events.jsonl, results.json)")
    p.add_argument("--limit", type=float, default=60.0, help="seconds the table may come after the last event")
    p.add_argument("--emit", type=int, help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.emit:
        emit(args.emit, args.iterations, args.warmup, args.ranks_per_node, args.step_ms / 1000.0,
             args.telemetry_hz, args.variant, json.loads(args.spec))
        return 0
    counts = [int(r) for r in args.ranks.split(",")]
    if len(counts) > 1:   # each in a fresh process: peak RSS is per process
        code = 0
        for r in counts:
            code = max(code, subprocess.call([sys.executable, __file__, *_without_ranks(argv), "--ranks", str(r)]))
        return code
    figures = measure(counts[0], args)
    f = figures
    print(f"parent scale: {f['ranks']} ranks on {f['nodes']} nodes x {args.iterations} iterations "
          f"(+{args.warmup} warm-up), step {args.step_ms:g} ms, telemetry {args.telemetry_hz:g} Hz per node, "
          f"printer {'--quiet' if args.quiet else 'default'}, export {'off' if args.no_export else 'on'}")
    print(f"  events {f['events']:,} holding {f['calls']:,} calls ({f['mib']:.0f} MiB of JSON) in "
          f"{f['stream_s']:.1f} s (simulated job: {f['simulated_s']:.1f} s): {f['events_per_s']:,.0f} events/s, "
          f"{f['calls_per_s']:,.0f} calls/s")
    print(f"  parent CPU {f['cpu_s']:.1f} s ({f['cpu_us_per_call']:.1f} us per call; {f['cpu_percent']:.0f}% of one "
          f"core while it ran), peak RSS {f['peak_rss_mib']:.0f} MiB; "
          f"printed {f['printed_mib']:.1f} MiB, results.json {f['results_mib']:.1f} MiB")
    print(f"  per-rank table {f['table_after_last_event_s']:.1f} s after the last event "
          f"({f['table_after_received_s']:.1f} s after the parent read it); "
          f"everything written {f['done_after_last_event_s']:.1f} s after it")
    print("  figures: " + json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in f.items()}))
    late = f["table_after_last_event_s"] > args.limit
    if late:
        print(f"  FAIL: the table came {f['table_after_last_event_s']:.1f} s after the last event "
              f"(limit {args.limit:g} s)")
    return 1 if late or f["exit"] != 0 else 0


def _without_ranks(argv) -> list[str]:
    argv = list(sys.argv[1:] if argv is None else argv)
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--ranks":
            skip = True
            continue
        if a.startswith("--ranks="):
            continue
        out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
