"""What the harness costs around each call: wall time per iteration ÷ the median call.

    python benchmarks/harness_wall.py                           # the four cases, 3 trials
    python benchmarks/harness_wall.py --before /path/to/old     # old and new code, interleaved
    python benchmarks/harness_wall.py --cases simplenet-infer --trials 5
    python benchmarks/harness_wall.py --parts [--before DIR]     # where the time goes, per part

A user who asks for a million calls waits for the calls and for what couplescope does
around them: the worker's batches (NaN fill and snapshot copy between calls, the checks,
the `iterations` events written), the parent's bookkeeping (parsing the events, the
results builder, events.jsonl, the statistics and the document at the end). This script
runs the real command, as a user would,

    couplescope --model M [--size S] [--task train] --iterations N --threads 1
                --profile-iterations 0 --telemetry-hz 0 --quiet --json

twice per trial: with N iterations and with a tenth of them (at most --small, 100). The
difference of the two walls over the difference of the iterations is the wall per
iteration that start-up (torch import, model load, warm-up) does not explain; divided by
the big run's median call (or training step) it is the figure printed: 1.0 would be a
harness that costs nothing beside the calls. The issue's check (SimpleNet inference,
200 000 calls) needs at most 2.0.

On a machine other processes share, the wall says as much about them as about
couplescope: a start-up run slowed by a second is 5 µs per iteration of 200 000. So each
trial also gives the CPU per iteration of every process of the run (parent and workers,
user and system) ÷ the median call, which waiting for a core does not inflate (though
sharing caches with other processes does). It is not the wall: the parent's share runs
on another core beside the worker, and a run on one free core pays it in wall too.

N is 200 000 for SimpleNet inference (the issue's figure) and, for the other cases, as
many calls as make the same time in calls as SimpleNet's (from a short run's median), at
least 100 (cgdrag at 1024: its calls take tens of milliseconds, its training steps more).

--before DIR runs the same trials with another checkout's code too (its package first on
PYTHONPATH: the parent imports it, and its runner gives its workers the same root), the
two interleaved trial by trial and in alternating order, so that both see the same
machine. The figures go in docs/architecture.md ("What the harness costs").

--parts says where the time goes, per SimpleNet call, from one real run of 50 000 calls
exported (events.jsonl): in the worker, the wall between two batches' events less the
calls they made (the C++ loop's NaN fill, snapshot copy and timing, then the checks, the
batch's columns and its JSON line), from the events' own time stamps, for the batch least
disturbed (other processes preempt the worker inside that wall on a shared machine:
the median batch's is printed beside it); in the parent, the
CPU time (time.process_time, so other processes on the machine do not count) of each
step it takes with those events: parsing the lines, the results builder, the document at
the end and its JSON text (the old code's: json's indenting encoder, which --json used).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

COMMON = ["--threads", "1", "--profile-iterations", "0", "--telemetry-hz", "0", "--quiet", "--json"]
CASES = {
    "simplenet-infer": ["--model", "simplenet"],
    "simplenet-train": ["--model", "simplenet", "--task", "train"],
    "cgdrag1024-infer": ["--model", "cgdrag", "--size", "1024"],
    "cgdrag1024-train": ["--model", "cgdrag", "--size", "1024", "--task", "train"],
}
#: SimpleNet inference runs the issue's 200 000 calls; the others as many as take as long
REFERENCE_CALLS = 200_000
MIN_CALLS = 100
#: where the runs start: no couplescope checkout there to shadow the one measured
NEUTRAL = os.path.abspath(os.sep)


def children_cpu() -> float:
    """CPU seconds (user and system) of every process this one has waited for: a
    couplescope run's parent and, as the parent waits for them, its workers."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def code_env(code: str | None) -> dict:
    """The environment of a process that imports `code`'s couplescope (None: the installed
    one). PYTHONSAFEPATH: `python -m` and `python -c` put the working directory first on
    sys.path, so a run started from a checkout would import that checkout's couplescope
    whatever PYTHONPATH says (and the runs are started from a neutral directory too)."""
    env = dict(os.environ, PYTHONSAFEPATH="1")
    if code:
        env["PYTHONPATH"] = os.pathsep.join([code, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return env


def run(argv: list[str], code: str | None) -> tuple[float, float, dict]:
    """One couplescope run: (wall seconds, CPU seconds of all its processes, its results
    document)."""
    env = code_env(code)
    t0, cpu0 = time.monotonic(), children_cpu()
    out = subprocess.run([sys.executable, "-m", "couplescope", *argv, *COMMON], capture_output=True,
                         text=True, env=env, cwd=NEUTRAL)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    # a short training run may end short of its final check's tolerance (exit 1): its
    # steps were made and timed all the same
    if out.returncode != 0 and not (out.returncode == 1 and "--task" in argv):
        raise SystemExit(f"couplescope {' '.join(argv)} exited {out.returncode}: {out.stderr.strip()[-600:]}")
    return wall, cpu, json.loads(out.stdout)


def say_imports(codes: dict) -> None:
    """Print which couplescope each label's runs import (a check that --before took)."""
    for label, code in codes.items():
        where = subprocess.run([sys.executable, "-c", "import couplescope; print(couplescope.__file__)"],
                               capture_output=True, text=True, env=code_env(code), cwd=NEUTRAL, check=True)
        print(f"{label}: {where.stdout.strip()}")


def median_call(doc: dict) -> float:
    return doc["variants"][0]["stats"]["median"]


def trial(case: list[str], calls: int, small: int, code: str | None) -> dict:
    small = max(1, min(small, calls // 10))
    small_wall, small_cpu, _ = run(case + ["--iterations", str(small)], code)
    big_wall, big_cpu, doc = run(case + ["--iterations", str(calls)], code)
    per_iteration = (big_wall - small_wall) / (calls - small)
    call = median_call(doc)
    return {"calls": calls, "small": small, "wall": big_wall, "startup": small_wall, "per_iteration": per_iteration,
            "call": call, "ratio": per_iteration / call,
            "cpu_ratio": (big_cpu - small_cpu) / (calls - small) / call}


#: the parent's steps, timed in a process of the code measured (its PYTHONPATH)
PARENT_PARTS = r"""
import inspect, json, sys, time
from couplescope.protocol import events
from couplescope.results.builder import ResultsBuilder
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
batches = [json.loads(l) for l in lines if l.startswith('{"event":"iterations"')]
calls = sum(len(b["ns"] if "ns" in b else b["seconds"]) for b in batches)
keep_text = "keep_text" in inspect.signature(ResultsBuilder).parameters   # (an older layout's)
def cpu(work, fresh=lambda: None):   # best of three, each on what fresh() makes anew (untimed): µs per call
    best = None
    for _ in range(3):
        given = fresh()
        t = time.process_time(); value = work(given); took = time.process_time() - t
        best = took if best is None else min(best, took)
    return best / calls * 1e6, value
parse, evs = cpu(lambda _: [e for e in map(events.parse, lines) if e is not None])
def build(_=None):
    b = ResultsBuilder("x", keep_text=True) if keep_text else ResultsBuilder("x")
    for e in evs:
        b.on_event(e)
    return b
builder, _ = cpu(build)
# the document's first making (its statistics are kept once made), then its text
document, _ = cpu(lambda b: b.document(), build)
def document_then_text():
    b = build()
    b.document()
    return b
text, _ = cpu(lambda b: b.document_text() if hasattr(b, "document_text")
              else json.dumps(b.document(), indent=1, default=str), document_then_text)
print(json.dumps({"calls": calls, "parse": parse, "builder": builder, "document": document, "text": text}))
"""


def parts(code: str | None, tmp: str) -> dict:
    """Where a SimpleNet call's time goes, in the worker and the parent (see the docstring)."""
    import glob
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp) as out:
        run(CASES["simplenet-infer"] + ["--iterations", "50000", "--export", out], code)
        (path,) = glob.glob(os.path.join(out, "*", "events.jsonl"))
        with open(path, encoding="utf-8") as f:
            batches = [ev for ev in map(json.loads, f) if ev["event"] == "iterations" and ev["kind"] == "timed"]
        for b in batches:   # this layout's nanoseconds, an older one's seconds
            b["seconds"] = [n / 1e9 for n in b["ns"]] if "ns" in b else b["seconds"]
        outside = sorted((b["t"] - a["t"] - sum(b["seconds"])) / len(b["seconds"]) for a, b in zip(batches, batches[1:]))
        calls = sorted(s for b in batches for s in b["seconds"])
        parent = subprocess.run([sys.executable, "-c", PARENT_PARTS, path], capture_output=True, text=True,
                                env=code_env(code), cwd=NEUTRAL, check=True)
    return {"call": calls[len(calls) // 2], "worker": outside[0], "worker_median": outside[len(outside) // 2],
            **json.loads(parent.stdout)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of: {', '.join(CASES)}")
    ap.add_argument("--before", help="a checkout of the old code, measured interleaved with this one")
    ap.add_argument("--small", type=int, default=100, help="iterations of the start-up run at most (default 100)")
    ap.add_argument("--calls", type=int, default=REFERENCE_CALLS,
                    help=f"SimpleNet inference's iterations (default {REFERENCE_CALLS})")
    ap.add_argument("--parts", action="store_true", help="where SimpleNet's time goes, part by part")
    args = ap.parse_args()
    if args.parts:
        import tempfile

        codes = {"after": None, **({"before": os.path.abspath(args.before)} if args.before else {})}
        say_imports(codes)
        print("per SimpleNet call, µs: median call; worker: wall outside the calls (least disturbed batch, "
              "median batch); parent CPU: parse, builder, document, JSON text")
        for n in range(args.trials):
            for code in (list(codes) if n % 2 == 0 else list(codes)[::-1]):
                p = parts(codes[code], tempfile.gettempdir())
                print(f"trial {n + 1} {code:>6}: call {p['call'] * 1e6:.2f}, worker {p['worker'] * 1e6:.2f} "
                      f"({p['worker_median'] * 1e6:.2f}); parent "
                      f"parse {p['parse']:.2f}, builder {p['builder']:.2f}, document {p['document']:.2f}, "
                      f"text {p['text']:.2f}", flush=True)
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case {unknown[0]}; choose from: {', '.join(CASES)}")
    codes = {"after": None, **({"before": os.path.abspath(args.before)} if args.before else {})}
    say_imports(codes)
    # how many calls each case makes: the time SimpleNet inference spends in its calls
    _, _, reference = run(CASES["simplenet-infer"] + ["--iterations", str(args.small)], None)
    budget = args.calls * median_call(reference)
    calls = {}
    for case in cases:
        if case == "simplenet-infer":
            calls[case] = args.calls
            continue
        _, _, doc = run(CASES[case] + ["--iterations", "10"], None)
        calls[case] = max(MIN_CALLS, min(args.calls, round(budget / median_call(doc))))
    results = {(case, code): [] for case in cases for code in codes}
    for n in range(args.trials):
        for case in cases:
            order = list(codes) if n % 2 == 0 else list(codes)[::-1]
            for code in order:
                got = trial(CASES[case], calls[case], args.small, codes[code])
                results[(case, code)].append(got)
                print(f"trial {n + 1} {case:>17} {code:>6}: {got['calls']} calls, wall {got['wall']:.1f} s "
                      f"(start-up run {got['startup']:.1f} s), {got['per_iteration'] * 1e6:.1f} µs per "
                      f"iteration, median call {got['call'] * 1e6:.1f} µs: {got['ratio']:.2f}x "
                      f"(CPU {got['cpu_ratio']:.2f}x)", flush=True)
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("wall per iteration ÷ median call, the median of the trials (each trial's in brackets); CPU:\n"
          "every process's CPU per iteration ÷ median call")
    for case in cases:
        for code in codes:
            got = results[(case, code)]
            ratios = [g["ratio"] for g in got]
            print(f"{case:>17} {code:>6}: {statistics.median(ratios):5.2f}x  "
                  f"({', '.join(f'{r:.2f}' for r in ratios)}); "
                  f"CPU {statistics.median(g['cpu_ratio'] for g in got):.2f}x; per iteration "
                  f"{statistics.median(g['per_iteration'] for g in got) * 1e6:.1f} µs, median call "
                  f"{statistics.median(g['call'] for g in got) * 1e6:.1f} µs, {got[0]['calls']} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
