"""What the parent spends on a run's events: CPU per 1000 calls, from the line to every listener.

A fast model on the native host reports its calls in batches (`iterations` events); the
parent parses each line, expands a batch into its calls once (couplescope.protocol.events)
and hands the same typed events to the results builder, the headless printer, the run
directory (events.jsonl, results.json after the variant) and the TensorBoard scalars.
That work competes with the worker for the node's cores, so it should stay small next to
the calls it reports. Here a run of N calls (made up from the spec by core.synthetic,
written to an events.jsonl in batches of 1000, as the native host's batches come) is read
back line by line and played through the real pipeline, headless and quiet, with and
without --export, in rounds (A B, B A) so drift on a shared node hits both alike. Prints
the median CPU seconds (this process) per 1000 calls of each mode.

    python benchmarks/parent_events.py [--calls 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time

from couplescope.core import pipeline, replay, synthetic
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.protocol import columns, events
from couplescope.protocol.spec import RunSpec

BATCH = 1000


def recording(calls: int, path: str) -> None:
    """An events.jsonl of one variant of `calls` timed calls in batches of BATCH."""
    spec = RunSpec(model="simplenet", warmup=10, iterations=calls, profile_iterations=0, name="fast")
    lines = []
    for ev in synthetic.events_for(spec, seconds=5e-6):
        if ev.event == "iterations" and len(ev.calls) > BATCH:
            records = [{"index": c.index, "seconds": c.seconds, "phases": c.phases,
                        "max_rel_error": c.max_rel_error, "passed": c.passed, "error": c.error}
                       for c in ev.calls]
            lines += [events.make("iterations", ev.variant,
                                  **columns.iteration_columns(ev.kind, i + 1, records[i:i + BATCH]))
                      for i in range(0, len(records), BATCH)]
        else:
            lines.append(ev)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(events.dumps(ev) + "\n" for ev in lines)


def one_run(path: str, export: str | None) -> float:
    """CPU seconds to parse `path` and play it through the pipeline."""
    t0 = time.process_time()
    rec = replay.Recording(replay.read(path), "bench")
    printer = HeadlessPrinter(1, out=io.StringIO(), err=io.StringIO(), quiet_iterations=True)
    pipeline.Pipeline(rec.request(export=export), [printer], workers=rec.workers(), summary_plot=False).run()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        recording(args.calls, path)
        modes = {"headless": None, "headless --export": os.path.join(tmp, "runs")}
        cpu = {mode: [] for mode in modes}
        for r in range(args.rounds):
            for mode in (list(modes) if r % 2 == 0 else list(reversed(modes))):
                cpu[mode].append(one_run(path, modes[mode]))
    print(f"{args.calls} calls in batches of {BATCH}, {args.rounds} rounds (median CPU of this process)")
    for mode, values in cpu.items():
        per = statistics.median(values) / args.calls * 1000
        print(f"  {mode:<18} {statistics.median(values):6.3f} s   {per * 1e3:6.2f} ms per 1000 calls")


if __name__ == "__main__":
    main()
