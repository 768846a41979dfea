"""couplescope's pytorch-fortran host beside a plain timer on the same pytorch-fortran, and the native and ftorch hosts, interleaved.

The pytorch-fortran host calls the user's own pytorch-fortran from a Fortran driver
couplescope writes and builds (docs/hosts.md). This script checks that what it reports is
what a plain Fortran loop on the same pytorch-fortran measures, for SimpleNet inference,
and sets the native host (couplescope's replica of FTorch's calls) and, given an FTorch,
the ftorch host beside them. It runs, in rounds, the timer and `couplescope --model
simplenet --host H` for each host, the order reversed every other round so that drift on a
shared node hits them alike, and prints each round's medians with their ratio to the timer,
the median of the per-round medians, and the per-phase medians side by side. Nothing of
pytorch-fortran is in the repository, and this script never builds it.

    python benchmarks/pytorch_fortran_host.py --pytorch-fortran-dir PREFIX --timer PATH --model PATH
        [--ftorch-dir PREFIX] [--rounds 3] [--calls 5000] [--grad-mode no_grad|inference]

The timer (build your own with pytorch-fortran's CMake packages)
-----------------------------------------------------------------
Run as `TIMER MODEL CALLS WARMUP [inference]` with OMP_NUM_THREADS=1: a torch_module
loaded once and a torch_tensor_wrap made once, then per call `inputs%add_array(x)`
(marshal_in), `model%forward(inputs, output)` (forward; with a fourth argument
`flags=module_use_inference_mode`), `output%to_array(yp)` and `inputs%clear()`
(marshal_out), `system_clock` read between them, the result copied out of `yp` after the
last read; the first WARMUP calls left out. It prints `pytorch_fortran_infer median_us=...
marshal_in=... forward=... marshal_out=...` (medians in us). MODEL is SimpleNet as
couplescope saves it (`torch.jit.trace` of the catalogue model). The timer used for
docs/hosts.md was built on this machine, outside the repository: pytorch-fortran at
6b4e91f (its make_gnu.sh's CMake steps), Release, gfortran 12.2, against the torch 2.13.0
CPU wheel's libtorch; one Fortran file of about 60 lines.
"""

from __future__ import annotations

import argparse
import os

from ftorch_host import PHASES, couplescope_run, summary, timer_run, us

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pytorch-fortran-dir", required=True, help="the pytorch-fortran install prefix")
    p.add_argument("--timer", required=True, help="the plain pytorch-fortran inference timer")
    p.add_argument("--model", required=True, help="the TorchScript file the timer loads")
    p.add_argument("--ftorch-dir", help="an FTorch install prefix: the ftorch host runs too")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--grad-mode", choices=("no_grad", "inference"), default="no_grad",
                   help="no_grad: forward without flags (pytorch-fortran's README); inference: "
                        "module_use_inference_mode, and InferenceMode on the other hosts")
    args = p.parse_args()
    if not os.access(args.timer, os.X_OK) or not os.path.isfile(args.model):
        p.error("--timer must be an executable and --model a file")
    hosts = ["pytorch-fortran", "native", *(["ftorch"] if args.ftorch_dir else [])]
    sides = ["timer", *hosts]
    extra = ["inference"] if args.grad_mode == "inference" else []
    fields = {"pytorch-fortran": {"pytorch_fortran_dir": args.pytorch_fortran_dir}}
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    print(f"== SimpleNet inference: {args.rounds} rounds of {args.calls} calls, 1 thread, --grad-mode "
          f"{args.grad_mode}; timer {args.timer} on {args.model} ==")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'round':>5}  {'timer':>8}" + "".join(f"  {h:>15} {'/timer':>7}" for h in hosts) + "   (median, us)")
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else reversed(sides):
            if side == "timer":
                runs[side].append(timer_run("infer", args.timer, args.model, args.calls, "pytorch_fortran", extra))
            else:
                runs[side].append(couplescope_run("infer", side, args.ftorch_dir, args.calls,
                                                  grad_mode=args.grad_mode, **fields.get(side, {})))
        t = runs["timer"][-1]["median"]
        print(f"{r + 1:>5}  {us(t)}" + "".join(f"  {us(runs[h][-1]['median']):>15} {runs[h][-1]['median'] / t:7.3f}"
                                            for h in hosts))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary(runs, PHASES["infer"], "pytorch-fortran")


if __name__ == "__main__":
    main()
