"""couplescope's forpy host beside a plain forpy timer on the same forpy_mod.F90, and the native bridge host, interleaved.

The forpy host compiles the user's own forpy_mod.F90 into a Fortran driver couplescope
writes (docs/hosts.md) and makes the bridge backend's calls through it, as forpy's users
write them. This script checks that what it reports is what a plain Fortran loop on the
same forpy measures: StrideNet (FTorch-benchmarks' large-stride case) through forpy, the
timer and `couplescope --model stride --backend bridge --host forpy` (and `--host native`,
couplescope's C++ replica of the same calls) in rounds, the order reversed every other
round so that drift on a shared node hits them alike. It prints each round's medians and
their ratio to the timer, the median of the per-round medians, and the per-phase medians
side by side. The issue's target: the forpy host within 15% of the timer. Nothing of
forpy is in the repository, and this script never builds it.

    python benchmarks/forpy_host.py --forpy-source FILE --timer PATH --module-dir DIR
        --model PATH [--module stride_emulator] [--size 256] [--rounds 5] [--calls 10]

The timer (build your own: one Fortran file and forpy_mod.F90)
--------------------------------------------------------------
Run as `TIMER MODULE_DIR MODULE MODEL N CALLS WARMUP` with OMP_NUM_THREADS=1, it does what
FTorch-benchmarks' benchmarker_large_stride_forpy does: forpy_initialize, MODULE_DIR put
on sys.path, MODULE imported, `initialize_ts(MODEL)` called once for the model; then per
call `ndarray_create_nocopy` of the input and output arrays (N x N, real32) and a tuple
of the three (marshal_in), `call_py(ret, module, "compute", args)` (call_py, the forward),
`destroy` of the result, the arrays and the tuple (destroy, marshal_out), `system_clock`
read between them; the first WARMUP calls left out. It prints `forpy_stride n=... calls=...
median_us=... marshal_in=... call_py=... destroy=...` (medians in us). MODULE is
FTorch-benchmarks' run_emulator_stride.py's two functions: `initialize_ts` (torch.jit.load)
and `compute` (from_numpy, the model under no_grad, the result copied into the output).
MODEL is StrideNet as couplescope saves it for `--bridge-model torchscript`. The timer used
for docs/hosts.md was built on this machine, outside the repository: forpy_mod.F90 at
forpy's master, gfortran 12.2, against this venv's Python 3.11.
"""

from __future__ import annotations

import argparse
import os

from ftorch_host import PHASES, couplescope_run, run_timer, summary, us

#: the issue's target: the forpy host's median within this fraction of the timer's
WITHIN = 0.15
#: the timer's phases in the rows of couplescope's nearest phases; they hold different things:
#: the hosts count the module's from_numpy in marshal_in and its copy into the output in
#: marshal_out, while the timer's call_py holds all of compute (see the note printed below)
TIMER_PHASES = {"marshal_in": "marshal_in", "call_py": "forward", "destroy": "marshal_out"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--forpy-source", required=True, help="the forpy_mod.F90 the forpy host compiles")
    p.add_argument("--timer", required=True, help="the plain forpy timer (built with the same file)")
    p.add_argument("--module-dir", required=True, help="the folder holding the timer's Python module")
    p.add_argument("--module", default="stride_emulator", help="the timer's Python module")
    p.add_argument("--model", required=True, help="StrideNet's TorchScript file the timer loads")
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--hosts", default="forpy,native", help="couplescope's hosts beside the timer")
    args = p.parse_args()
    if not os.access(args.timer, os.X_OK) or not os.path.isfile(args.model):
        p.error("--timer must be an executable and --model a file")
    hosts = [h for h in args.hosts.split(",") if h]
    sides = ["timer", *hosts]
    fields = {"model": "stride", "size": args.size, "backend": "bridge", "bridge_model": "torchscript",
              "warmup": 1}
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    print(f"== StrideNet {args.size} through forpy: {args.rounds} rounds of {args.calls} calls, 1 thread; "
          f"timer {args.timer} ==")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'round':>5}  {'timer':>10}" + "".join(f"  {h:>10} {'/timer':>7}" for h in hosts) + "   (median, us)")
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else reversed(sides):
            if side == "timer":
                argv = [args.timer, args.module_dir, args.module, args.model, str(args.size), str(args.calls), "1"]
                runs[side].append(run_timer(argv, "forpy_stride", TIMER_PHASES))
            else:
                extra = {"forpy_source": args.forpy_source} if side == "forpy" else {}
                runs[side].append(couplescope_run("infer", side, None, args.calls, **fields, **extra))
        t = runs["timer"][-1]["median"]
        print(f"{r + 1:>5}  {us(t):>10}" + "".join(f"  {us(runs[h][-1]['median']):>10} "
                                                  f"{runs[h][-1]['median'] / t:7.3f}" for h in hosts))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary(runs, PHASES["infer"], "forpy", within=WITHIN)
    print("note: the timer's rows are its views and tuple, its call_py and its destroys; the hosts'\n"
          "marshal_in also holds the module's from_numpy (cold after a forward) and their marshal_out\n"
          "the module's copy into the output, which the timer counts in call_py: compare whole calls")


if __name__ == "__main__":
    main()
