"""What profiling costs: timed iterations with the profiler window on and off, and the
profiled iterations themselves, for simplenet and StrideNet at a small size; with
--ranges, what the couplescope/<phase> ranges add to a profiled call.

All variants run in one session (interleaved: off, on, off, on ...), so the on/off
ratios compare like with like on a shared machine. The timed iterations of a profiled
variant run before its window, so their median should match the unprofiled one; the
profiled iterations carry the profiler's per-operator cost; "window" is the wall time
the whole profile window added to the variant (probe, profiler start, iterations,
writing and summarizing the trace).

    /work/venv/bin/python benchmarks/profiler_overhead.py [--iterations 30] [--size 32] [--repeats 2]

--ranges: the phase ranges (record_function in the python host, at::RecordFunction in the
native one) are opened only in profiled iterations, so a timed call pays a bool test for
them. In a profiled call they cost what the profiler records per range; this measures it
in one process: simplenet's coupling (inference and a training step, python and native
host) called under an active torch.profiler (the window's settings: CPU, shapes, memory)
with its ranges on and off, in interleaved blocks, each call timed as an iteration is
(the native host's own clock, perf_counter around the call for the python host).

    python benchmarks/profiler_overhead.py --ranges [--calls 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from couplescope.frontends import formatting as fmt
from couplescope.frontends.api import run
from couplescope.protocol.spec import RunSpec


def specs(iterations: int, size: int, profile: int, repeats: int) -> list[RunSpec]:
    out = []
    for r in range(repeats):
        for model, model_size in (("simplenet", None), ("stride", size)):
            for window in (0, profile):
                tag = "on" if window else "off"
                out.append(RunSpec(model=model, size=model_size, warmup=2, iterations=iterations,
                                   profile_iterations=window, threads=1, name=f"{model}-{tag}-{r}"))
    return out


def range_costs(calls: int, rounds: int) -> None:
    """Per call, without and with the phase ranges, under an active profiler."""
    import tempfile

    import torch

    from couplescope import backends
    from couplescope.backends import clock as clock_module
    from couplescope.worker import engine

    torch.set_num_threads(1)
    bindings = clock_module.profiler_range()
    alone = _alone({"clock's": bindings, "record_function": clock_module._record_function_range()},
                   calls * 10, rounds)
    print(f"one range alone (open and close, nothing inside) under an active profiler, median of "
          f"{calls * 10} x {rounds} rounds: " + ", ".join(f"{k} {fmt.seconds(v)}" for k, v in alone.items()))
    print(f"phase ranges under an active profiler: simplenet, 1 thread, {calls} calls per block, "
          f"{rounds} rounds of blocks (one per kind of range, order rotated); medians per call")
    print(f"{'case':<14} {'ranges':>6} {'ranges off':>10}   per range, for each kind of range")
    for task in ("infer", "train"):
        for host in ("python", "native"):
            # the python host's ranges as the clock makes them, and as record_function would;
            # the native host's are at::RecordFunction in C++, on or off
            kinds = {"off": None, "clock's": bindings}
            if host == "python":
                kinds["record_function"] = clock_module._record_function_range()
            spec = RunSpec(model="simplenet", task=task, host=host, threads=1, profile_iterations=0,
                           name=f"{host}-{task}")
            with tempfile.TemporaryDirectory() as tmp:
                prepared = engine.prepare(spec, backends.get("torchscript"), tmp)
                prepared.coupling.load()
                try:
                    times, ranges = _per_kind(prepared, calls, rounds, kinds, clock_module)
                finally:
                    clock_module._RANGE = bindings
                    prepared.coupling.close()
            off = statistics.median(times["off"])
            costs = ", ".join(f"{kind} {fmt.seconds((statistics.median(times[kind]) - off) / ranges)}"
                              for kind in kinds if kind != "off")
            print(f"{host + ' ' + task:<14} {ranges:>6} {fmt.seconds(off):>10}   {costs}")


def _alone(kinds: dict, n: int, rounds: int) -> dict:
    """Median seconds to open and close one range, per kind, under an active profiler."""
    from time import perf_counter

    from torch.profiler import ProfilerActivity, profile

    times = {kind: [] for kind in kinds}
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True):
        for r in range(rounds):
            for kind in (list(kinds) if r % 2 == 0 else list(reversed(kinds))):
                open_range, close_range = kinds[kind]
                for _ in range(n):
                    t0 = perf_counter()
                    close_range(open_range("couplescope/forward"))
                    times[kind].append(perf_counter() - t0)
    return {kind: statistics.median(values) for kind, values in times.items()}


def _per_kind(prepared, calls: int, rounds: int, kinds: dict, clock_module):
    """{kind: [seconds per call]} and the ranges a call opens, all under one active profiler
    with the window's settings; each call timed as the engine times an iteration."""
    from time import perf_counter

    from torch.profiler import ProfilerActivity, profile

    coupling, clock = prepared.coupling, prepared.clock
    times = {kind: [] for kind in kinds}

    def call() -> float:
        clock.reset()
        t0 = perf_counter()
        hosted = coupling.call()
        seconds = perf_counter() - t0
        if prepared.training is not None:
            coupling.take_losses()
        return hosted if hosted is not None else seconds

    for _ in range(200):   # TorchScript specialises over the first calls
        call()
    order = list(kinds)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True):
        for r in range(rounds):
            for kind in order[r % len(order):] + order[:r % len(order)]:
                clock.profiling = kinds[kind] is not None
                if kinds[kind] is not None:
                    clock_module._RANGE = kinds[kind]
                times[kind].extend(call() for _ in range(calls))
        clock.profiling = True
        call()
        ranges = len(clock.phases)
        clock.profiling = False
    return times, ranges


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranges", action="store_true",
                        help="measure what the phase ranges add to a profiled call instead")
    parser.add_argument("--calls", type=int, default=300, help="--ranges: calls per block")
    parser.add_argument("--rounds", type=int, default=5, help="--ranges: rounds of blocks")
    parser.add_argument("--iterations", type=int, default=30, help="timed iterations per variant")
    parser.add_argument("--size", type=int, default=32, help="StrideNet N")
    parser.add_argument("--profile-iterations", type=int, default=3, help="the profile window")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats of each on/off pair")
    args = parser.parse_args(argv)
    if args.ranges:
        range_costs(args.calls, args.rounds)
        return 0
    doc = run(specs(args.iterations, args.size, args.profile_iterations, args.repeats),
              title="profiler-overhead")
    rows = {}
    for v in doc["variants"]:
        model, tag, _ = v["name"].rsplit("-", 2)
        row = rows.setdefault(model, {"off": [], "on": [], "profiled": [], "window": [], "ops": None})
        timed = [it["seconds"] for it in v["iterations"] if it["kind"] == "timed"]
        row[tag].extend(timed)
        if tag == "on":
            row["profiled"].extend(it["seconds"] for it in v["iterations"] if it["kind"] == "profiled")
            profile = v.get("profile", {})
            row["window"].append(profile.get("seconds"))
            row["ops"] = profile.get("operators_per_iteration")
            if profile.get("status") != "ok":
                why = profile.get("error") or profile.get("reason")
                print(f"{v['name']}: profiling {profile.get('status')}: {why}")
    label = {"simplenet": "simplenet", "stride": f"stride N={args.size}"}
    print(f"profiler overhead: {args.iterations} timed iterations per variant, profile window "
          f"{args.profile_iterations}, {args.repeats} interleaved repeats, 1 thread")
    print(f"{'model':<14} {'ops/iter':>8} {'timed off':>10} {'timed on':>10} {'on/off':>7} "
          f"{'profiled':>10} {'prof/off':>8} {'window':>9}")
    for model, row in rows.items():
        off, on = statistics.median(row["off"]), statistics.median(row["on"])
        prof = statistics.median(row["profiled"]) if row["profiled"] else float("nan")
        window = statistics.median(w for w in row["window"] if w is not None)
        print(f"{label[model]:<14} {str(row['ops']):>8} {fmt.seconds(off):>10} {fmt.seconds(on):>10} "
              f"{on / off:>6.2f}x {fmt.seconds(prof):>10} {prof / off:>7.2f}x {fmt.seconds(window):>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
