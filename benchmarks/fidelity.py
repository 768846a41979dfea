"""Does couplescope's forward time agree with torch.utils.benchmark for the same call?

For simplenet and cgdrag, measured in one run and interleaved (A B A B ...) so drift on
a shared node hits both sides alike:
  - couplescope: the median `forward` phase of the torchscript backend on the python host
    (worker process, one timed call at a time, exactly as a user's run measures it; the
    native host's forward is timed in C++ and compared with a C++ loop by native_floor.py);
  - torch.utils.benchmark: Timer.blocked_autorange on the same TorchScript file and the
    same column-major host arrays wrapped the same way, `model(*inputs)` for every call of
    the iteration (cgdrag makes two), with grad disabled around the timer as the python
    host disables it around its loop (no_grad, couplescope's default grad mode).
Prints both medians and their ratio (target: within 5%). Where the rest goes, step by
step in one process, is benchmarks/python_host_breakdown.py.

    python benchmarks/fidelity.py [--rounds 3] [--cgdrag-size 8192] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

import numpy as np
import torch
import torch.utils.benchmark as tub

import couplescope
from couplescope.workloads import catalogue
from couplescope.backends.host_memory import flat_memory, strides_for


def couplescope_forward(model: str, size: int, iterations: int, threads: int) -> float:
    doc = couplescope.run(couplescope.RunSpec(model=model, size=size, warmup=20, threads=threads,
                                              iterations=iterations, profile_iterations=0,
                                              host="python"))
    return doc["variants"][0]["phases"]["forward"]["median"]


def reference_forward(model: str, size: int, tmpdir: str, min_run_time: float, threads: int) -> float:
    workload = catalogue.load(model)
    dtype = workload.dtype
    arrays = workload.host_arrays(size, dtype, 0)
    eager = workload.build(size, dtype, 0)
    calls = workload.calls(size)
    example = tuple(torch.from_numpy(np.ascontiguousarray(arrays[n])) for n in calls[0].inputs)
    path = os.path.join(tmpdir, f"{model}.pt")
    torch.jit.save(workload.script(eager, example), path)
    module = torch.jit.load(path).eval()
    wrapped = [[torch.from_numpy(flat_memory(arrays[n])).as_strided(arrays[n].shape, strides_for(arrays[n], "fortran"))
                for n in call.inputs] for call in calls]

    def step():
        for inputs in wrapped:
            module(*inputs)

    with torch.no_grad():
        for _ in range(20):  # the TorchScript profiling executor specialises over the first calls
            step()
        # Timer defaults to one thread: give it the worker's thread count explicitly
        timer = tub.Timer(stmt="step()", globals={"step": step}, num_threads=threads)
        return timer.blocked_autorange(min_run_time=min_run_time).median


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cgdrag-size", type=int, default=8192)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads on both sides (default 1: on a shared 2-core node a second "
                        "thread measures the neighbours more than the call)")
    args = p.parse_args()
    cases = [("simplenet", 1, 2000, 2.0), ("cgdrag", args.cgdrag_size, 30, 5.0)]
    print(f"torch {torch.__version__}, {args.threads} thread(s) on both sides, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmpdir:
        for model, size, iterations, min_time in cases:
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(couplescope_forward(model, size, iterations, args.threads))
                theirs.append(reference_forward(model, size, tmpdir, min_time, args.threads))
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{model:<10} size {size:<5} couplescope forward median {a * 1e6:10.1f} us   "
                  f"torch.utils.benchmark median {b * 1e6:10.1f} us   ratio {a / b:.3f}")


if __name__ == "__main__":
    main()
