"""Does watching a run in the Textual app change what it measures?

Runs the same variant headless (a Session with the listeners the app attaches -- staging
run directory, telemetry, traces -- and the headless printer writing to /dev/null) and
through the app (CoupleScopeApp under App.run_test's headless driver,
`r` pressed, the UI drawing every batch), in rounds ordered H,A then A,H in one process, and
prints each mode's median of the per-run medians and their ratio (target: within 3%),
and the parent process's own CPU time per run (the app's drawing competes with the
worker for cores; on a 2-core node that is what could perturb the measurement).
Workloads: cgdrag at 1024 columns (slow calls) and simplenet (tens of thousands of calls
a second: the flood the app must coalesce).

    /work/venv/bin/python benchmarks/ui_perturbation.py [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

from dataclasses import replace

from couplescope.core import pipeline, request
from couplescope.frontends.cli.parser import build_parser, options_from
from couplescope.frontends.cli.printer import HeadlessPrinter

WORKLOADS = {
    "cgdrag-1024": ["--model", "cgdrag", "--size", "1024", "--iterations", "15", "--warmup", "2"],
    "simplenet": ["--model", "simplenet", "--iterations", "5000", "--warmup", "20"],
}
COMMON = ["--profile-iterations", "0", "--telemetry-hz", "10"]


def headless_median(argv) -> tuple[float, int, float]:
    """The same pipeline the app runs (a run directory exporter in a temporary folder, where
    the app stages every run, and the optional listeners: telemetry, traces), with the
    headless printer instead of the app. Without the exporter the comparison would mix in
    what --export itself costs (measured: simplenet's median is ~5% lower with it)."""
    cpu0 = time.process_time()
    req = request.build(options_from(build_parser().parse_args(argv)))
    with open(os.devnull, "w") as null, tempfile.TemporaryDirectory() as staging:
        printer = HeadlessPrinter(len(req.specs), out=null, err=null)
        builder = pipeline.run(replace(req, export=staging), [printer]).builder
        printer.close()
    v = next(iter(builder.variants.values()))
    return v.stats()["median"], len(v.timed), time.process_time() - cpu0


async def _app_run(argv) -> tuple[float, int, int, float]:
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(options_from(build_parser().parse_args(argv)))
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.catalogue_ready:       # as a user would: the app is up before r
            await asyncio.sleep(0.1)
        cpu0 = time.process_time()
        await pilot.press("r")
        deadline = time.monotonic() + 600
        # asyncio.sleep, not pilot.pause: pause walks every widget (a test harness's cost a
        # user's app does not have), which would be charged to the app here
        while not (app.runs and app.active is None):
            if time.monotonic() > deadline:
                raise SystemExit("the app run did not end within 10 minutes")
            await asyncio.sleep(0.2)
        record = app.runs[1]
        if record.status != "finished":
            raise SystemExit(f"app run {record.status}: {record.error or app.notes[-3:]}")
        v = next(iter(record.builder.variants.values()))
        return v.stats()["median"], len(v.timed), record.listener.posted_batches, time.process_time() - cpu0


def app_median(argv) -> tuple[float, int, int, float]:
    return asyncio.run(_app_run(argv))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="H,A pairs per workload (default 3)")
    p.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    opts = p.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; {opts.rounds} rounds, order H,A / A,H alternating")
    rows = []
    for name, argv in WORKLOADS.items():
        argv = argv + COMMON
        if opts.quick:
            argv = [("5" if a == "15" else "1000" if a == "5000" else a) for a in argv]
        head, app, batches, cpu_h, cpu_a = [], [], [], [], []
        for r in range(opts.rounds):
            if r % 2 == 0:       # H,A then A,H: drift on a shared node cancels out
                h, n, ch = headless_median(argv)
                a, n2, b, ca = app_median(argv)
            else:
                a, n2, b, ca = app_median(argv)
                h, n, ch = headless_median(argv)
            head.append(h)
            app.append(a)
            batches.append(b)
            cpu_h.append(ch)
            cpu_a.append(ca)
            print(f"  {name} round {r + 1}: headless median {h * 1e6:10.1f} us  app median {a * 1e6:10.1f} us  "
                  f"ratio {a / h:.3f}  (n={n}/{n2}; parent CPU {ch:.2f} s / {ca:.2f} s; "
                  f"iteration messages {b})", flush=True)
        hm, am = statistics.median(head), statistics.median(app)
        ratios = sorted(a / h for a, h in zip(app, head))
        rows.append((name, hm, am, am / hm, statistics.median(ratios), statistics.median(batches),
                     statistics.median(cpu_h), statistics.median(cpu_a)))
    print()
    print(f"{'workload':<12} {'headless median':>16} {'app median':>12} {'ratio of medians':>17} "
          f"{'median of pair ratios':>22} {'parent CPU s (H/A)':>19} {'batches/run':>12}")
    for name, hm, am, ratio, pair, b, ch, ca in rows:
        flag = "" if abs(ratio - 1) <= 0.03 else "  (outside 3%)"
        print(f"{name:<12} {hm * 1e6:>13.1f} us {am * 1e6:>9.1f} us {ratio:>16.3f}x {pair:>21.3f}x "
              f"{ch:>9.2f} / {ca:<7.2f} {b:>12.0f}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
