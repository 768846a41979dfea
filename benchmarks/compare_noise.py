"""How far do repeated runs of the same variant move, and would `--compare` fail them?

Runs each workload ROUNDS times for real (the CLI, one worker per run, exported to a
temporary folder), then compares every ordered pair of runs (each as base and as new)
with couplescope.results.regression, and prints per pair the ratio of medians, its
bootstrap interval and the verdict, beside what other rules would have said:

  median > 5%       the median ratio alone beyond the threshold (pytest-benchmark's
                    --benchmark-compare-fail=median:5%)
  asv rule          median ratio beyond the threshold and the interval beyond 1
  min ratio         the ratio of the fastest calls (timeit's habit)

A gate that fails two runs of the same code is a false alarm; the count of false
alarms per rule is the figure this prints. It also runs a regression the gate must
catch: a bridge module sleeping 1 ms more per call.

    python benchmarks/compare_noise.py [--rounds 4]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile

from couplescope.results import regression, saved

WORKLOADS = {
    "simplenet, 300 calls, 1 thread": ["--model", "simplenet", "--threads", "1", "--iterations", "300"],
    "cgdrag 1024, 30 calls, 1 thread": ["--model", "cgdrag", "--size", "1024", "--threads", "1",
                                        "--iterations", "30"],
    "cgdrag 1024, 30 calls, torch's threads": ["--model", "cgdrag", "--size", "1024", "--iterations", "30"],
    "bridge module sleeping 1 ms, 30 calls": ["--model", "{module}", "--backend", "bridge", "--input-shape", "64",
                                              "--iterations", "30"],
}
COMMON = ["--warmup", "2", "--profile-iterations", "0", "--telemetry-hz", "10"]

MODULE = '''
import time
import numpy as np
EXTRA = {extra}
def initialize(config):
    pass
def compute(inputs, output):
    time.sleep(0.001 + EXTRA)
    output[...] = 2.0 * inputs[0]
def reference(inputs):
    return 2.0 * np.asarray(inputs[0])
'''


def run_once(argv, parent) -> dict:
    subprocess.run([sys.executable, "-m", "couplescope", *argv, "--export", parent, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    newest = max(os.listdir(parent), key=lambda e: os.path.getmtime(os.path.join(parent, e)))
    return saved.load(os.path.join(parent, newest))


def rules(base: dict, new: dict, threshold: float) -> dict:
    row = regression.compare(base, new, threshold)["variants"][0]
    b, n = saved.timed_seconds(base["variants"][0]), saved.timed_seconds(new["variants"][0])
    return {"ratio": row["ratio"], "low": row["ci_low"], "high": row["ci_high"],
            "gate": row["verdict"] == regression.SLOWER,
            "median > 5%": row["ratio"] > 1 + threshold,
            "asv rule": row["ratio"] > 1 + threshold and row["ci_low"] > 1,
            "min ratio": min(n) / min(b) > 1 + threshold}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=5.0, help="percent")
    args = ap.parse_args()
    threshold = args.threshold / 100
    names = ("gate", "median > 5%", "asv rule", "min ratio")
    with tempfile.TemporaryDirectory() as tmp:
        # the same file name in two folders: the same variant name in both runs
        os.makedirs(os.path.join(tmp, "base"))
        os.makedirs(os.path.join(tmp, "new"))
        module = os.path.join(tmp, "base", "sleepy.py")
        slower = os.path.join(tmp, "new", "sleepy.py")
        with open(module, "w") as f:
            f.write(MODULE.format(extra=0.0))
        with open(slower, "w") as f:
            f.write(MODULE.format(extra=0.001))
        false_alarms = {n: 0 for n in names}
        pairs = 0
        for workload, argv in WORKLOADS.items():
            argv = [a.replace("{module}", module) for a in argv] + COMMON
            docs = [run_once(argv, os.path.join(tmp, workload)) for _ in range(args.rounds)]
            print(f"{workload}: medians " + ", ".join(f"{d['variants'][0]['stats']['median'] * 1e6:.1f} us"
                                                     for d in docs))
            failed = 0
            for (i, a), (j, b) in itertools.permutations(enumerate(docs, 1), 2):
                r = rules(a, b, threshold)
                pairs += 1
                flags = [n for n in names if r[n]]
                for n in flags:
                    false_alarms[n] += 1
                failed += r["gate"]
                print(f"  run {i} vs {j}: ratio {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
                      f"  fails: {', '.join(flags) or '-'}")
            print(f"  the gate failed {failed} of {args.rounds * (args.rounds - 1)} ordered pairs")
            if "{module}" in WORKLOADS[workload]:
                new = run_once([a.replace(module, slower) for a in argv], os.path.join(tmp, "sleepier"))
                r = rules(docs[0], new, threshold)
                print(f"  1 ms more per call: ratio {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
                      f"  caught by: {', '.join(n for n in names if r[n]) or 'none'}")
        print(f"false alarms over {pairs} pairs of repeated runs at {args.threshold:g}%: "
              + ", ".join(f"{n} {false_alarms[n]}" for n in names))


if __name__ == "__main__":
    main()
