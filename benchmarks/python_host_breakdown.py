"""Where the python host's forward time goes, step by step, on the same module in one process.

The python host's `forward` phase is compared with torch.utils.benchmark by fidelity.py.
This script takes the same TorchScript SimpleNet, the same host arrays and couplescope's
own python-host coupling (couplescope.worker.engine.prepare), and times the forward call
(median per call, perf_counter around it) in five loops, interleaved over rounds:

  prewrapped     module(x) back to back on one tensor wrapped once (what Timer measures)
  fresh          a new tensor over the host memory for every call, as a coupling makes it
  coupling       the coupling's call() back to back (its phase clock; marshal in and out)
  batched        what the engine's batches do between calls: NaN into the output before,
                 a snapshot of it after (couplescope.backends.batch)
  engine-between what the one-call loop used to do between calls: NaN fill, the
                 workload's check and the event written as JSON

The differences are the parts: fresh - prewrapped is what a forward on newly made tensors
costs (inherent to coupling host memory), batched - coupling what the batch's own work
costs the next call, engine-between - batched what checking and reporting between the
calls would cost (why the engine checks after a batch).

    python benchmarks/python_host_breakdown.py [--calls 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from time import perf_counter

import numpy as np
import torch

from couplescope import backends
from couplescope.protocol import events
from couplescope.protocol.spec import RunSpec
from couplescope.worker import engine


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    spec = RunSpec(model="simplenet", host="python", threads=1, profile_iterations=0, name="simplenet")
    with tempfile.TemporaryDirectory() as tmp:
        prepared = engine.prepare(spec, backends.get("torchscript"), tmp)
        prepared.coupling.load()   # enters no_grad, as the worker does, until close()
        try:
            run(prepared, args.calls, args.rounds)
        finally:
            prepared.coupling.close()


def run(prepared, n: int, rounds: int) -> None:
    coupling, clock = prepared.coupling, prepared.clock
    module, wrap = coupling.module, coupling.wrap
    x, y = prepared.arrays["x"], prepared.outputs["y"]
    nan = np.full(y.shape, np.nan, dtype=y.dtype, order="F")
    snapshots = np.empty((n, y.nbytes), dtype=np.uint8)
    flat_y = y.ravel(order="K").view(np.uint8)

    def prewrapped():
        inp, times = wrap("x", x), []
        for _ in range(n):
            t0 = perf_counter()
            module(inp)
            times.append(perf_counter() - t0)
        return times

    def fresh():
        times = []
        for _ in range(n):
            inp = wrap("x", x)
            t0 = perf_counter()
            out = module(inp)
            times.append(perf_counter() - t0)
            wrap("y", y).copy_(out)
        return times

    def coupled():
        times = []
        for _ in range(n):
            clock.reset()
            coupling.call()
            times.append(clock.phases["forward"])
        return times

    def batched():
        times = []
        for i in range(n):
            np.copyto(y, nan)
            clock.reset()
            coupling.call()
            times.append(clock.phases["forward"])
            snapshots[i] = flat_y
        return times

    def engine_between():
        times = []
        for i in range(n):
            prepared.poison_outputs()
            clock.reset()
            coupling.call()
            phases = clock.reset()
            times.append(phases["forward"])
            err, passed, _ = prepared.check()
            events.dumps(events.make("iteration", "v", index=i, kind="timed", seconds=0.0, phases=phases,
                                     max_rel_error=err, passed=passed, error=None))
        return times

    loops = {"prewrapped": prewrapped, "fresh": fresh, "coupling": coupled, "batched": batched,
             "engine-between": engine_between}
    for _ in range(2000):   # the profiling executor specialises over the first calls
        module(wrap("x", x))
    medians = {name: [] for name in loops}
    for r in range(rounds):
        order = list(loops) if r % 2 == 0 else list(reversed(loops))
        for name in order:
            medians[name].append(statistics.median(loops[name]()))
    print(f"torch {torch.__version__}, 1 thread, SimpleNet, {n} calls x {rounds} rounds "
          "(median of the per-round medians of the forward call)")
    base = statistics.median(medians["prewrapped"])
    for name, values in medians.items():
        m = statistics.median(values)
        print(f"  {name:<15} {m * 1e6:7.2f} us   {m / base:5.3f} x prewrapped")


if __name__ == "__main__":
    main()
