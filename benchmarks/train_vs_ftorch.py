"""couplescope's online-training step beside the real FTorch's example 11 step, interleaved.

Runs a user-provided timer built on the real FTorch (`--ftorch-timer`, with the TorchScript
file it trains, `--ftorch-model`) in rounds with `couplescope --model simplenet --task train
--iterations N --threads 1` (the native host; `--also python,bridge` adds the python host
and the bridge module), through the library API. Each round runs every side once, the order
reversed every other round, so drift on a shared node hits them alike. Prints FTorch's and
couplescope's median step and their ratio per round, each side's median of the per-round
medians and the overall ratio, the per-phase medians side by side, and the learning checks
(example 11's: 1..5 must map to 5,1,2,3,4 within rtol 1e-3). The issue's target: the native
host's median within 25% of FTorch's. This script never builds FTorch; nothing of FTorch is
in the repository.

    python benchmarks/train_vs_ftorch.py --ftorch-timer PATH --ftorch-model PATH
                                         [--rounds 3] [--iterations 10000] [--also python,bridge]

What the timer must do (build your own from FTorch's examples/11_Training/training.f90)
---------------------------------------------------------------------------------------
It is run as `TIMER MODEL STEPS` with OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 in its
environment. It makes example 11's set-up (tensors over the Fortran input, output and target
arrays, torch_model_load with is_training, torch_model_parameters, torch_optim_SGD with lr
0.05) and then STEPS of example 11's loop body, reading a wall clock between the calls:
optimizer%zero_grad(); new random input and the shifted target written into the arrays
(untimed or timed apart); torch_model_forward(..., requires_grad=.true.);
torch_tensor_from_array(loss, loss_data) and torch_tensor_mean(loss, (out - target) ** 2)
(together: the "loss" phase); torch_tensor_backward(loss); optimizer%step(). Example 11's
file write of the loss and its printing stay out of the timed regions. After the loop it
may run example 11's final check. It must print one line on standard output that starts
with `ftorch_train` followed by `key=value` pairs (spaces may follow the `=`), among them:

    median_us=<median over the steps of zero_grad+forward+loss+backward+step, in us>
    zero_grad=<median us> forward=<median us> loss=<median us> backward=<median us> step=<median us>

and optionally `steps=<N>`, `torch_threads=<at::get_num_threads()>`, `result=PASSED|FAILED`
(example 11's check), `final_loss=`, `mean_us=`, `first_us=`, `rss_growth_kb=`; other
pairs are kept and ignored. A non-zero exit (example 11 stops with 999 when its check fails)
is reported, not fatal, when the line was printed. For example:

    ftorch_train steps=10000 torch_threads=1 median_us=42.77 zero_grad=.28 forward=4.86
    loss=7.71 backward=28.14 step=.85 final_loss= 4.162E-13 result=PASSED

How the timer used for docs/training.md was built (on this machine, outside the repository)
------------------------------------------------------------------------------------------
FTorch from its source on GitHub (Cambridge-ICCS/FTorch at commit 2010dd4c, July 2026),
built in Release with CMake and gfortran 12.2 (Debian 12) against the libtorch of the same
torch 2.13.0 CPU wheel couplescope uses, and installed to a scratch prefix. Example 11's
TorchScript file was made as its CTest makes it (simplenet.py, then `pt2ts SimpleNet ...`,
which scripts the model). The timer is a Fortran program of about 250 lines whose loop body
is example 11's, call for call, with `system_clock` (nanosecond rate) read between the calls
and the per-phase times kept in arrays; the per-step file write is left out. It also reports
libtorch's thread count through a four-line C++ shim calling at::get_num_threads() (FTorch
has no binding for it) and the growth of its resident memory (gfortran 12 does not finalize
the operators' function results: example 11 leaks two tensor handles a step, about 4.6 kB).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

#: the phases both sides time, in a step's order
PHASES = ("zero_grad", "forward", "loss", "backward", "step")
#: the issue's target: couplescope's median step within this fraction of FTorch's
WITHIN = 0.25
#: what --also may add: (label, RunSpec fields)
EXTRA = {"python": ("python host", {"host": "python"}),
         "bridge": ("bridge (native host)", {"backend": "bridge", "host": "native"})}
LINE = re.compile(r"(\w+)=\s*(\S+)")


def parse_timer_line(text: str) -> dict:
    """The `ftorch_train key=value ...` line of the timer's output as {key: float or str};
    ValueError naming what is missing."""
    lines = [line for line in text.splitlines() if line.startswith("ftorch_train")]
    if not lines:
        raise ValueError("the timer printed no line starting with 'ftorch_train'")
    out: dict = {}
    for key, value in LINE.findall(lines[-1]):
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    missing = [k for k in ("median_us", *PHASES) if not isinstance(out.get(k), float)]
    if missing:
        raise ValueError(f"the timer's line lacks {', '.join(missing)}: {lines[-1]!r}")
    return out


def ftorch_run(timer: str, model: str, steps: int) -> dict:
    """One run of the FTorch timer: {"median", each phase, "result", ...}, times in seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([timer, model, str(steps)], env=env, capture_output=True, text=True)
    try:
        line = parse_timer_line(done.stdout)
    except ValueError as e:
        print(f"train_vs_ftorch: {timer}: {e} (exit {done.returncode}; stderr: "
              f"{done.stderr.strip()[-300:]!r})", file=sys.stderr)
        sys.exit(2)
    threads = line.get("torch_threads")
    return {"median": line["median_us"] * 1e-6, **{p: line[p] * 1e-6 for p in PHASES},
            "result": str(line.get("result", "not reported")),
            "threads": int(threads) if isinstance(threads, float) else "not reported",
            "rss_growth_kb": line.get("rss_growth_kb"),
            "exit": done.returncode}


def couplescope_run(steps: int, fields: dict) -> dict:
    """One couplescope run as `couplescope --model simplenet --task train --iterations N
    --threads 1` (its other defaults), through the library API."""
    import couplescope

    doc = couplescope.run(couplescope.RunSpec(model="simplenet", task="train", iterations=steps,
                                              threads=1, **fields))
    v = doc["variants"][0]
    final = (v.get("training") or {}).get("final_check") or {}
    return {"median": v["stats"]["median"], "phases": {k: p["median"] for k, p in v["phases"].items()},
            "result": {True: "PASSED", False: "FAILED"}.get(final.get("passed"), "not judged")}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:8.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ftorch-timer", required=True, help="the FTorch example-11 timer binary (see the docstring)")
    p.add_argument("--ftorch-model", required=True, help="the TorchScript SimpleNet file the timer trains")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=10000, help="steps per run (example 11: 10000)")
    p.add_argument("--also", default="", help="comma list: python (the python host), bridge (the bridge module)")
    args = p.parse_args()
    if not (os.path.isfile(args.ftorch_timer) and os.access(args.ftorch_timer, os.X_OK)):
        p.error(f"--ftorch-timer {args.ftorch_timer}: not an executable file")
    if not os.path.isfile(args.ftorch_model):
        p.error(f"--ftorch-model {args.ftorch_model}: no such file")
    also = [a for a in args.also.split(",") if a]
    for a in also:
        if a not in EXTRA:
            p.error(f"--also {a}: not one of {', '.join(EXTRA)}")
    if args.rounds < 1 or args.iterations < 1:
        p.error("--rounds and --iterations must be at least 1")
    import torch

    sides = {"native": ("native host", {"host": "native"}), **{a: EXTRA[a] for a in also}}
    order = ["ftorch", *sides]
    runs: dict[str, list[dict]] = {s: [] for s in order}
    print(f"FTorch timer {args.ftorch_timer} on {args.ftorch_model}; couplescope with torch "
          f"{torch.__version__}; {args.rounds} rounds of {args.iterations} steps, 1 thread, "
          f"{os.cpu_count()} cores")
    print("uptime before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    header = "".join(f"  {s:>8} {s + '/FT':>10}" for s in sides)
    print(f"{'round':>5}  {'FTorch':>8}{header}   (median step, us)")
    for r in range(args.rounds):
        for side in order if r % 2 == 0 else reversed(order):
            if side == "ftorch":
                runs[side].append(ftorch_run(args.ftorch_timer, args.ftorch_model, args.iterations))
            else:
                runs[side].append(couplescope_run(args.iterations, sides[side][1]))
        ft = runs["ftorch"][-1]["median"]
        cells = "".join(f"  {us(runs[s][-1]['median'])} {runs[s][-1]['median'] / ft:10.3f}" for s in sides)
        print(f"{r + 1:>5}  {us(ft)}{cells}")
    print("uptime after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))

    med = {s: statistics.median(x["median"] for x in runs[s]) for s in order}
    threads = sorted({x["threads"] for x in runs["ftorch"]}, key=str)
    print(f"\nmedian of the per-round medians (FTorch's torch_threads: {', '.join(map(str, threads))}):")
    results = ", ".join(sorted({x["result"] for x in runs["ftorch"]}))
    growth = [x["rss_growth_kb"] for x in runs["ftorch"] if isinstance(x["rss_growth_kb"], float)]
    grew = f"; its memory grew {statistics.median(growth) / 1e3:.1f} MB in the loop" if growth else ""
    print(f"  {'FTorch example 11':<32} {us(med['ftorch'])} us   example 11's check: {results}{grew}")
    for s, (label, _) in sides.items():
        ratio = med[s] / med["ftorch"]
        per_round = [c["median"] / f["median"] for c, f in zip(runs[s], runs["ftorch"])]
        checks = ", ".join(sorted({x["result"] for x in runs[s]}))
        verdict = ""
        if s == "native":
            verdict = "  (" + ("within" if abs(ratio - 1) <= WITHIN else "not within") + \
                f" {WITHIN:.0%} of FTorch's)"
        print(f"  {'couplescope ' + label:<32} {us(med[s])} us   ratio {ratio:.3f} (per round "
              f"{', '.join(f'{x:.3f}' for x in per_round)}){verdict}; the learning check: {checks}")

    names = [*PHASES, *sorted({k for s in sides for x in runs[s] for k in x["phases"]} - set(PHASES))]
    print("\nper phase, median of the per-round medians (us):")
    print(f"  {'phase':<11} {'FTorch':>8}" + "".join(f" {s:>8}" for s in sides))
    for name in names:
        ft = statistics.median(x[name] for x in runs["ftorch"]) if name in PHASES else None
        cells = ""
        for s in sides:
            values = [x["phases"].get(name, 0.0) for x in runs[s]]
            cells += f" {us(statistics.median(values))}"
        print(f"  {name:<11} {us(ft) if ft is not None else '       -'}{cells}")
    print(f"  {'whole step':<11} {us(med['ftorch'])}" + "".join(f" {us(med[s])}" for s in sides))


if __name__ == "__main__":
    main()
