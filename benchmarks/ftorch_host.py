"""couplescope's ftorch host (and its native replica) beside plain timers on the same FTorch, interleaved.

The ftorch host calls the user's own FTorch from a Fortran driver couplescope writes and
builds (docs/hosts.md). This script checks that what it reports is what a plain Fortran
loop on the same FTorch measures: for inference (FTorch's example 2 calls on SimpleNet)
and for training (example 11's step), it runs, in rounds, a user-built timer program and
`couplescope --model simplenet --host ftorch` (and `--host native`, the replica), the
order reversed every other round so that drift on a shared node hits them alike. It prints
each round's medians and the ratios to the timer, the median of the per-round medians,
and the per-phase medians side by side. The issue's targets: the ftorch host within 10%
of the timer, inference and training. Nothing of FTorch is in the repository, and this
script never builds it.

    python benchmarks/ftorch_host.py --ftorch-dir PREFIX
        --infer-timer PATH --infer-model PATH --train-timer PATH --train-model PATH
        [--rounds 3] [--calls 5000] [--steps 10000] [--tasks infer,train]

The timers (build your own from FTorch's examples, with FTorch's CMake package)
----------------------------------------------------------------------------------
Both run with OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 and print one line of `key=value`
pairs (other pairs are kept and ignored):

- inference, run as `TIMER MODEL CALLS WARMUP`: example 2's calls in a loop, `system_clock`
  read between them: `torch_tensor_from_array` of the input and of the output (marshal_in),
  `torch_model_forward` (forward), `torch_delete` of both (marshal_out); the first WARMUP
  calls left out. Prints `ftorch_infer median_us=... marshal_in=... forward=...
  marshal_out=...` (medians in us).
- training, run as `TIMER MODEL STEPS`: example 11's loop body call for call (the step's
  random data written before the first clock read), the timer benchmarks/train_vs_ftorch.py
  describes: prints `ftorch_train median_us=... zero_grad=... forward=... loss=...
  backward=... step=...` and optionally `result=`.

MODEL is SimpleNet saved as couplescope saves it (the catalogue model: `torch.jit.trace`
for inference; scripted in train mode for training), so both sides load the same graph.
The timers used for docs/hosts.md and docs/training.md were built on this machine, outside
the repository: FTorch at commit 2010dd4c, Release, gfortran 12.2, against the torch 2.13.0
CPU wheel's libtorch; each is one Fortran file of about 60 lines.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

PHASES = {"infer": ("marshal_in", "forward", "marshal_out"),
          "train": ("zero_grad", "forward", "loss", "backward", "step")}
LINE = re.compile(r"(\w+)=\s*(\S+)")
#: the issue's target: the ftorch host's median within this fraction of the timer's
WITHIN = 0.10


def timer_run(task: str, timer: str, model: str, count: int, library: str = "ftorch", extra=()) -> dict:
    """One run of a timer: {"median", each phase, "result"}, in seconds. It prints a line
    starting `<library>_<task>` (extra: arguments after the usual ones)."""
    argv = [timer, model, str(count)] + (["100"] if task == "infer" else []) + list(extra)
    return run_timer(argv, f"{library}_{task}", {p: p for p in PHASES[task]})


def run_timer(argv: list[str], prefix: str, phases: dict[str, str]) -> dict:
    """Run a timer program with one thread and read the last line it prints starting
    `prefix`: `median_us=` and the phases (`phases`: the timer's key -> couplescope's phase
    name), in seconds; `result=` if it says, else PASSED or FAILED by its exit code."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(prefix)]
    if not lines:
        print(f"{os.path.basename(sys.argv[0])}: {argv[0]} printed no '{prefix}' line (exit "
              f"{done.returncode}; stderr: {done.stderr.strip()[-300:]!r})", file=sys.stderr)
        sys.exit(2)
    values = {}
    for key, value in LINE.findall(lines[-1]):
        try:
            values[key] = float(value)
        except ValueError:
            values[key] = value
    tmean = values.get("tmean_us")
    return {"median": values["median_us"] * 1e-6,
            "tmean": tmean * 1e-6 if isinstance(tmean, float) else None,
            "phases": {name: values[key] * 1e-6 for key, name in phases.items()
                       if isinstance(values.get(key), float)},
            "result": str(values.get("result", "PASSED" if done.returncode == 0 else "FAILED"))}


def couplescope_run(task: str, host: str, ftorch_dir: str | None, count: int, **fields) -> dict:
    """One couplescope run through the library API: SimpleNet (or fields' model), 1 thread,
    on `host` (fields: more of the RunSpec's, such as a library host's install)."""
    import couplescope
    from couplescope.results.call_columns import CallColumns

    if host == "ftorch":
        fields["ftorch_dir"] = ftorch_dir
    fields.setdefault("model", "simplenet")
    fields.setdefault("warmup", 100 if task == "infer" else 1)
    spec = couplescope.RunSpec(task=task, host=host, threads=1, iterations=count, profile_iterations=0,
                               **fields)
    doc = couplescope.run(spec)
    v = doc["variants"][0]
    final = (v.get("training") or {}).get("final_check") or {}
    result = v["verdict"].upper() if task == "infer" else \
        {True: "PASSED", False: "FAILED"}.get(final.get("passed"), "not judged")
    return {"median": v["stats"]["median"], "tmean": trimmed_mean(CallColumns.of_document(v).seconds("timed")),
            "phases": {k: p["median"] for k, p in v["phases"].items()}, "result": result}


def trimmed_mean(seconds) -> float:
    """The mean of the calls at or below the 99th percentile (a pre-empted call left out), as
    the timers print it (`tmean_us=`). Unlike the median, it moves smoothly with the share of
    calls made while the machine is in its slower state: on a shared VM the per-call time
    flips between two levels (6.3 and 11.5 us for FTorch's SimpleNet call here) every tenth
    of a second or so, for every program alike, so a run's median jumps between them."""
    ordered = sorted(seconds)
    kept = ordered[:max(1, len(ordered) * 99 // 100)]
    return sum(kept) / len(kept)


def us(seconds) -> str:
    return f"{seconds * 1e6:8.2f}" if seconds is not None else "       -"


def compare(task: str, args, timer: str, model: str, count: int) -> None:
    sides = ["timer", "ftorch", "native"]
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    print(f"\n== {task}: {args.rounds} rounds of {count} {'calls' if task == 'infer' else 'steps'}, "
          f"1 thread; timer {timer} on {model} ==")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'round':>5}  {'timer':>8}  {'ftorch':>8} {'/timer':>7}  {'native':>8} {'/timer':>7}   (median, us;"
          f" then the trimmed means' ratios)")
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else reversed(sides):
            if side == "timer":
                runs[side].append(timer_run(task, timer, model, count))
            else:
                runs[side].append(couplescope_run(task, side, args.ftorch_dir, count))
        t = runs["timer"][-1]["median"]
        means = ""
        if runs["timer"][-1].get("tmean"):
            means = "  " + " ".join(f"{runs[s][-1]['tmean'] / runs['timer'][-1]['tmean']:7.3f}" for s in sides[1:])
        print(f"{r + 1:>5}  {us(t)}  {us(runs['ftorch'][-1]['median'])} {runs['ftorch'][-1]['median'] / t:7.3f}"
              f"  {us(runs['native'][-1]['median'])} {runs['native'][-1]['median'] / t:7.3f}{means}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary(runs, PHASES[task], "ftorch")


def summary(runs: dict[str, list[dict]], phases, judged: str, within: float = WITHIN) -> None:
    """Each side against the timer: the median of its per-round medians and that ratio, the
    median of the per-round ratios (each round's sides ran back to back), and the same for
    the trimmed means where the timer prints one (`judged`'s against the target); then the
    per-phase medians side by side."""
    sides = list(runs)
    width = max(8, *(len(s) for s in sides))
    print("median of the per-round medians, its ratio to the timer's, the median of the per-round ratios (each round's):")
    for statistic in ("median", "tmean"):
        if any(x.get(statistic) is None for s in sides for x in runs[s]):
            continue
        if statistic == "tmean":
            print("the same for the trimmed means (calls at or below the 99th percentile):")
        mid = {s: statistics.median(x[statistic] for x in runs[s]) for s in sides}
        for s in sides:
            per_round = [x[statistic] / t[statistic] for x, t in zip(runs[s], runs["timer"])]
            paired = statistics.median(per_round)
            verdict = ""
            if s == judged:
                verdict = f"  ({'within' if abs(paired - 1) <= within else 'NOT within'} {within:.0%} of the timer's)"
            checks = ", ".join(sorted({x["result"] for x in runs[s]}))
            print(f"  {s:<{width}} {us(mid[s])} us  ratio {mid[s] / mid['timer']:.3f}, paired {paired:.3f} "
                  f"({', '.join(f'{x:.3f}' for x in per_round)}){verdict}; checks: {checks}")
    print("per phase, median of the per-round medians (us):")
    print(f"  {'phase':<11}" + "".join(f" {s:>{width}}" for s in sides))
    for phase in phases:
        cells = []
        for s in sides:
            values = [x["phases"].get(phase) for x in runs[s] if x["phases"].get(phase) is not None]
            cells.append(us(statistics.median(values)) if values else us(None))
        print(f"  {phase:<11}" + "".join(f" {c:>{width}}" for c in cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ftorch-dir", required=True, help="the FTorch install prefix (FTorchConfig.cmake inside)")
    p.add_argument("--infer-timer")
    p.add_argument("--infer-model")
    p.add_argument("--train-timer")
    p.add_argument("--train-model")
    p.add_argument("--tasks", default="infer,train")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=5000, help="inference calls per run")
    p.add_argument("--steps", type=int, default=10000, help="training steps per run (example 11: 10000)")
    args = p.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    for task in tasks:
        if task not in PHASES:
            p.error(f"--tasks {task}: not one of infer, train")
        timer, model = getattr(args, f"{task}_timer"), getattr(args, f"{task}_model")
        if not (timer and os.access(timer, os.X_OK)):
            p.error(f"--{task}-timer: an executable timer is needed for {task}")
        if not (model and os.path.isfile(model)):
            p.error(f"--{task}-model: the TorchScript file the {task} timer loads is needed")
    import torch

    print(f"couplescope with torch {torch.__version__}, FTorch at {args.ftorch_dir}, {os.cpu_count()} cores")
    for task in tasks:
        compare(task, args, getattr(args, f"{task}_timer"), getattr(args, f"{task}_model"),
                args.calls if task == "infer" else args.steps)


if __name__ == "__main__":
    main()
