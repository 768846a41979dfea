"""What couplescope's synchronised phase timing costs on a GPU, beside CUDA events.

On a CUDA device, for deep-linear (L = 250) and toy-resnet (R = 32), with the torchscript
and cudagraph backends built exactly as a run builds them (measure.Prepared), in one
process and interleaved call by call (A B A B ...) so drift hits both alike:
  - idle sync: the median cost of one torch.cuda.synchronize() on an idle device;
  - synced: median call time with the phase clock synchronising before and after every
    phase (what a couplescope run measures and reports);
  - unsynced: median call time with no phase synchronisation, one synchronise after the
    call (the same work, unmeasured); synced minus unsynced is what the method costs;
  - forward: the median forward phase of the synced calls beside the forward measured
    with CUDA events on the stream (GPU time between two recorded events).
Without CUDA it says so and exits 2.

    python benchmarks/gpu_timing.py [--calls 300] [--device cuda:0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from time import perf_counter

import torch

from couplescope import backends
from couplescope.backends import devices
from couplescope.protocol.spec import RunSpec
from couplescope.worker.engine import prepare
from couplescope.worker.measure import Prepared


def idle_sync_cost(n: int = 2000) -> float:
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        t0 = perf_counter()
        torch.cuda.synchronize()
        times.append(perf_counter() - t0)
    return statistics.median(times)


def event_forward(prepared: Prepared, calls: int) -> float:
    """Median GPU time of one forward (first call of the iteration), from CUDA events."""
    coupling = prepared.coupling
    if prepared.spec.backend == "cudagraph":
        run = coupling.graphs[0].graph.replay
    else:
        call = prepared.calls[0]
        inputs = [coupling.copies.to_device(coupling.wrap(n, prepared.arrays[n])) for n in call.inputs]

        def run():
            with torch.inference_mode():
                coupling.module(*inputs)
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return statistics.median(times)


def compare(model: str, size: int, backend: str, device: str, calls: int, tmpdir: str) -> str:
    spec = RunSpec(model=model, size=size, backend=backend, device=device, profile_iterations=0)
    prepared = prepare(spec, backends.get(spec.backend), tmpdir)
    coupling, clock = prepared.coupling, prepared.clock
    sync = clock.sync
    coupling.load()
    for _ in range(20):
        coupling.call()
    synced, unsynced, forward = [], [], []
    for _ in range(calls):
        clock.sync = sync
        clock.reset()
        t0 = perf_counter()
        coupling.call()
        synced.append(perf_counter() - t0)
        forward.append(clock.reset()["forward"])
        clock.sync = None
        t0 = perf_counter()
        coupling.call()
        sync()
        unsynced.append(perf_counter() - t0)
        clock.reset()
    clock.sync = sync
    events = event_forward(prepared, calls)
    coupling.close()
    s, u, f = statistics.median(synced), statistics.median(unsynced), statistics.median(forward)
    return (f"{model:<12} {size:>5} {backend:<12} synced {s * 1e6:9.1f} us  unsynced {u * 1e6:9.1f} us  "
            f"cost {(s - u) * 1e6:8.1f} us ({(s / u - 1) * 100:5.1f} %)  forward phase {f * 1e6:9.1f} us  "
            f"events {events * 1e6:9.1f} us")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    reason = devices.cuda_unavailable_reason(args.device)
    if reason:
        print(f"gpu_timing: {reason}", file=sys.stderr)
        return 2
    devices.use_cuda(args.device)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args.calls} calls per row")
    print(f"idle torch.cuda.synchronize(): {idle_sync_cost() * 1e6:.1f} us")
    with tempfile.TemporaryDirectory() as tmpdir:
        for model, size in (("deep-linear", 250), ("toy-resnet", 32)):
            for backend in ("torchscript", "cudagraph"):
                print(compare(model, size, backend, args.device, args.calls, tmpdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
