"""How close couplescope's native training step comes to a plain C++ libtorch loop.

The floor is benchmarks/train_floor.cpp: tensors over the host's input and target arrays
made once, then per step zero_grad, forward under grad, the mean squared error, backward
and an SGD step on SimpleNet's TorchScript file (saved as couplescope saves it), with
steady_clock around the step and nothing else, on FTorch's example 11 task (new random
input every step, outside the clock; the target the input shifted by one place; lr 0.05).
It runs in five modes:

- `ftorch`: the loss made as FTorch's example 11 makes it (FTorch's overloaded operators
  and torch_tensor_mean) and as couplescope's host reproduces on purpose (a new loss
  handle over a one-element buffer every step, each overloaded operator's result first
  made with torch::empty, the mean copied into the buffer).
- `plain`: `(output - target).pow(2).mean()` on stack tensors, what a C++ programmer
  writes. Against it, the ratio also holds what example 11's way of making the loss costs.
- `plain-mse`: as `plain`, with `torch::nn::functional::mse_loss(output, target)`.
- `ftorch-mse`: as `ftorch`, with the loss made by FTorch's torch_loss_mse (one mse_loss
  call copied into the loss handle).
- `pytorch-fortran`: the step as pytorch-fortran's torch_module%train makes it in C++ (one
  mse_loss call on a stack tensor, the loss read with item() inside the call): a plain
  C++ loop, with the fused loss.

couplescope's native host runs each `--train-call` (ftorch-operators, ftorch-mse,
pytorch-fortran) beside the floor that makes the same calls (ftorch, ftorch-mse,
pytorch-fortran) and the plain floor that makes its loss the same way (`plain` for the
first, `plain-mse` for the others); `--train-call all` (the default) interleaves the
three forms in every round. native / the same calls' floor is what couplescope adds;
native / plain also holds what the form's library calls cost over plain C++ (FTorch's
loss handle and its copy).

Beside them, couplescope's median step on the native host (`RunSpec(model="simplenet",
task="train", threads=1, host="native")` through the library API, the same as
`couplescope --model simplenet --task train --threads 1`). All at 1 thread, in rounds
whose order alternates (floor, plain floor, couplescope; then couplescope, plain floor,
floor ...), so drift on a shared node hits every side alike. Prints the per-round medians,
each side's median of them and the ratios. Then, from extra floor runs that also read the
clock between the phases (`--phases`; their whole step is not used above), each phase's
median beside couplescope's, so a miss can be placed.

The floor program is compiled once against the installed torch into the couplescope cache
(COUPLESCOPE_CACHE), like benchmarks/native_floor.py's.

    python benchmarks/train_floor.py [--rounds 4] [--iterations 10000] [--train-call all]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile

from native_floor import build_cpp, save_model

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "train_floor.cpp")
PHASES = ("zero_grad", "forward", "loss", "backward", "step")
TARGET = 1.15
WARMUP = 20


def floor_run(binary: str, path: str, iterations: int, mode: str, phases: bool = False) -> dict:
    """One run of the floor: {"median", "result", and with phases each phase's median}, in seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [binary, path, str(iterations), str(WARMUP), mode] + (["--phases"] if phases else [])
    lines = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    first = lines[0].split()
    out = {"median": float(first[1]) * 1e-6, "result": first[first.index("result") + 1]}
    if phases:
        words = lines[1].split()[1:]
        out.update({name: float(value) * 1e-6 for name, value in zip(words[::2], words[1::2])})
    return out


def couplescope_run(iterations: int, train_call: str = "ftorch-operators") -> dict:
    """couplescope's native training host: the median step, each phase's median, the verdict."""
    import couplescope

    doc = couplescope.run(couplescope.RunSpec(model="simplenet", task="train", warmup=WARMUP,
                                              threads=1, iterations=iterations, train_call=train_call,
                                              profile_iterations=0, host="native"))
    variant = doc["variants"][0]
    out = {"median": variant["stats"]["median"], "result": variant["verdict"].upper()}
    out.update({name: variant["phases"][name]["median"] for name in PHASES if name in variant["phases"]})
    return out


def us(seconds: float) -> str:
    return f"{seconds * 1e6:8.2f}"


#: per --train-call: the floor that makes the same calls, and the plain C++ floor
FLOOR_MODES = {"ftorch-operators": ("ftorch", "plain"), "ftorch-mse": ("ftorch-mse", "plain-mse"),
               "pytorch-fortran": ("pytorch-fortran", "plain-mse")}
FORMS = tuple(FLOOR_MODES)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--iterations", type=int, default=10000, help="timed steps per run (example 11: 10000)")
    p.add_argument("--train-call", choices=(*FORMS, "all"), default="all",
                   help="whose step every side makes (couplescope's --train-call), or all three "
                        "forms interleaved (default)")
    args = p.parse_args()
    import torch

    binary = build_cpp(SOURCE, "train_floor")
    forms = FORMS if args.train_call == "all" else (args.train_call,)
    sides = [(form, kind) for form in forms for kind in ("floor", "plain", "couplescope")]
    runs: dict[tuple, list[dict]] = {s: [] for s in sides}
    phased: dict[tuple, list[dict]] = {s: [] for s in sides if s[1] != "couplescope"}
    print(f"torch {torch.__version__}, 1 thread, {os.cpu_count()} cores, {args.rounds} rounds of "
          f"{args.iterations} steps; SimpleNet, FTorch's example 11 task, SGD lr 0.05")
    print(f"uptime before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{'round':>5}  {'train call':<16}  {'floor (same calls)':>18}  {'floor (plain)':>13}  "
          f"{'couplescope':>11}  {'ratio':>6}  {'ratio plain':>11}   (median step, us)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "simplenet.pt")
        save_model("simplenet", 1, path)
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))
            got = {}
            for side in order:
                form, kind = side
                if kind == "couplescope":
                    got[side] = couplescope_run(args.iterations, form)
                else:
                    mode = FLOOR_MODES[form][0 if kind == "floor" else 1]
                    got[side] = floor_run(binary, path, args.iterations, mode)
                    phased[side].append(floor_run(binary, path, args.iterations, mode, phases=True))
                runs[side].append(got[side])
            for form in forms:
                c, f, pl = (got[(form, k)]["median"] for k in ("couplescope", "floor", "plain"))
                print(f"{r + 1:>5}  {form:<16}  {us(f):>18}  {us(pl):>13}  {us(c):>11}  {c / f:6.3f}  "
                      f"{c / pl:11.3f}")
    la = os.getloadavg()
    print(f"uptime after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")

    for form in forms:
        med = {k: statistics.median(x["median"] for x in runs[(form, k)]) for k in ("floor", "plain", "couplescope")}
        results = {k: "/".join(sorted({x["result"] for x in runs[(form, k)]})) for k in med}
        ours = med["couplescope"]
        how = {"ftorch-operators": "FTorch's example 11: operators and torch_tensor_mean into a loss handle",
               "ftorch-mse": "FTorch's torch_loss_mse: one mse_loss call into a loss handle",
               "pytorch-fortran": "pytorch-fortran's train: one mse_loss call, item() in the call"}[form]
        print(f"\n--train-call {form} ({how}); median of the per-round medians "
              f"(example 11's check: floor {results['floor']}, plain {results['plain']}, couplescope "
              f"{results['couplescope']}):")
        print(f"  couplescope native    {us(ours)} us")
        for kind, label in (("floor", "floor, the same calls"), ("plain", "floor, plain C++    ")):
            ratio = ours / med[kind]
            verdict = "meets" if ratio <= TARGET else "misses"
            print(f"  {label} {us(med[kind])} us   ratio {ratio:.3f} ({verdict} the target {TARGET})")

        print(f"  per phase, median of the per-round medians (us; the floors' from runs that also "
              "read the clock between phases):")
        print(f"    {'phase':<10} {'floor':>8} {'plain':>8} {'couplescope':>11}  {'cs - floor':>10}")
        sources = (("floor", phased[(form, "floor")]), ("plain", phased[(form, "plain")]),
                   ("couplescope", runs[(form, "couplescope")]))
        for label in (*PHASES, "sum", "whole"):
            if label == "sum":
                values = {s: statistics.median(sum(x[p] for p in PHASES) for x in data) for s, data in sources}
            else:
                key = "median" if label == "whole" else label
                values = {s: statistics.median(x[key] for x in data) for s, data in sources}
            print(f"    {label:<10} {us(values['floor'])} {us(values['plain'])} "
                  f"{us(values['couplescope']):>11}  {us(values['couplescope'] - values['floor']):>10}")


if __name__ == "__main__":
    main()
