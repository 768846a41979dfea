"""What MPI fan-out costs: cgdrag at N columns per rank, one process vs 2 ranks.

Prints, measured in one run:
  - the median step time of one process (no MPI, torchscript backend), with torch's
    default threads and with one thread (what each bound rank runs),
  - the median step time of 2 ranks under mpiexec (per iteration the slowest rank, each
    rank on its own N columns, one thread per bound core), with the load imbalance,
  - the launch overhead: wall time from starting the worker to its first event, for the
    single process and for the 2-rank job (mpiexec, MPI initialisation, torch per rank).

Weak scaling: each rank does the work of the single process, so on a node with a free
core per rank the two step times should be close; the ratio shows what binding, threads
and sharing the node cost. Run: /work/venv/bin/python benchmarks/mpi_scaling.py [--columns N]
"""

from __future__ import annotations

import argparse
import os
import time

from couplescope import backends
from couplescope.core import pipeline, request
from couplescope.frontends import formatting as fmt
from couplescope.protocol.listener import Listener
from couplescope.protocol.spec import RunSpec


class FirstEvent(Listener):
    """Wall time from the worker's start to its first event (run_started)."""

    def __init__(self) -> None:
        self.started = {}
        self.first = {}

    def worker_started(self, spec, proc) -> None:
        self.started[spec.label] = time.perf_counter()

    def on_event(self, ev) -> None:
        name = ev.get("variant")
        if name in self.started and name not in self.first:
            self.first[name] = time.perf_counter() - self.started[name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=2048, help="cgdrag columns per rank (default 2048)")
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2, help="launches of each, for the overhead")
    args = parser.parse_args()
    reason = backends.unavailable("mpi")
    if reason:
        print(f"mpi backend unavailable: {reason}")
        return 2
    common = dict(model="cgdrag", size=args.columns, iterations=args.iterations, warmup=args.warmup,
                  profile_iterations=0)
    single = RunSpec(backend="torchscript", name="1-process", **common)
    # the same one thread a bound rank runs: separates "MPI" from "fewer threads"
    single1 = RunSpec(backend="torchscript", name="1-process-1-thread", threads=1, **common)
    ranks = RunSpec(backend="mpi", ranks=2, inner_backend="torchscript", name="2-ranks", **common)
    first = {"1-process": [], "1-process-1-thread": [], "2-ranks": []}
    medians = {"1-process": [], "1-process-1-thread": [], "2-ranks": []}
    imbalance = []
    builders = []
    for repeat in range(args.repeats):
        # alternate the order so neither always runs on a warmer machine
        order = [single, single1, ranks] if repeat % 2 == 0 else [ranks, single1, single]
        timer = FirstEvent()
        req = request.from_specs(order, title="mpi-scaling", telemetry_hz=0)
        builder = pipeline.run(req, [timer]).builder
        builders.append(builder)
        for spec in order:
            v = builder.variants[spec.label]
            if v.status != "finished" or not v.all_passed():
                print(f"{spec.label}: {v.status} {v.error or 'checks failed'}")
                return 1
            medians[spec.label].append(v.stats()["median"])
            first[spec.label].append(timer.first[spec.label])
        imbalance.append(builder.variants["2-ranks"].to_dict()["mpi"]["aggregate"]["imbalance"]["median"])
    med = {k: sorted(v)[len(v) // 2] for k, v in medians.items()}
    singles = sorted(first["1-process"] + first["1-process-1-thread"])
    fst = {"1-process": singles[len(singles) // 2], "2-ranks": sorted(first["2-ranks"])[len(first["2-ranks"]) // 2]}
    ranks_doc = builders[-1].variants["2-ranks"].to_dict()
    threads = [r["threads"] for r in ranks_doc["ranks"]]
    single_threads = builders[-1].variants["1-process"].environment.get("torch_threads")
    print(f"cgdrag, {args.columns} columns per rank, float64, {args.iterations} timed iterations, "
          f"{args.repeats} launches each")
    print(f"  1 process (torchscript, {single_threads} torch threads):      median step "
          f"{fmt.seconds(med['1-process'])}")
    print(f"  1 process (torchscript, 1 torch thread):       median step "
          f"{fmt.seconds(med['1-process-1-thread'])}")
    print(f"  2 ranks (mpiexec, slowest rank, {threads} threads): median step "
          f"{fmt.seconds(med['2-ranks'])}  ({med['2-ranks'] / med['1-process']:.2f}x / "
          f"{med['2-ranks'] / med['1-process-1-thread']:.2f}x the single process with default / one thread; "
          f"load imbalance median {sorted(imbalance)[len(imbalance) // 2]:.2f}x)")
    print(f"  time to first event: 1 process {fmt.seconds(fst['1-process'])}, 2 ranks "
          f"{fmt.seconds(fst['2-ranks'])}: launch overhead {fmt.seconds(fst['2-ranks'] - fst['1-process'])}")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  all launches (s): 1 process {[round(x, 2) for x in first['1-process'] + first['1-process-1-thread']]}, "
          f"2 ranks {[round(x, 2) for x in first['2-ranks']]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
