"""How far AOTInductor's output is from the eager reference, and whether that is rounding.

For each seed: compile the catalogue model with AOTInductor (in this process, not through
the cache), run it once on the seed's input, and print three relative errors, measured as
the model's check measures them (against its relative floor of the largest output):
AOTInductor against the eager float32 reference (what the check sees), and each of the two
against the same model run in float64 (the truth, to rounding). When AOTInductor is as
close to float64 as eager float32 is, a miss of the check is rounding in a different
order, and the model's tolerance is too tight; when it is far from both, the result is
wrong. ATEN_CPU_CAPABILITY=avx2 (or default) shows another vector width's rounding.

    python benchmarks/aoti_rounding.py [--model toy-resnet] [--size 13] [--seeds 2004,2011]
    ATEN_CPU_CAPABILITY=avx2 python benchmarks/aoti_rounding.py --seeds 2011
"""

from __future__ import annotations

import argparse
import os
import tempfile


def errors(model: str, size: int, seed: int) -> dict:
    import numpy as np
    import torch

    from couplescope.workloads import catalogue
    from couplescope.workloads.base import max_relative_error

    workload = catalogue.load(model)
    arrays = workload.host_arrays(size, "float32", seed)
    inputs = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays.values())
    m32, m64 = workload.build(size, "float32", seed), workload.build(size, "float64", seed)
    with torch.no_grad():
        eager32 = m32(*inputs).numpy()
        eager64 = m64(*(t.double() for t in inputs)).numpy()
    with tempfile.TemporaryDirectory() as scratch:
        package = torch._inductor.aoti_compile_and_package(
            torch.export.export(m32, inputs), package_path=os.path.join(scratch, "model.pt2"))
        compiled = torch._inductor.aoti_load_package(package)
        with torch.no_grad():
            aoti32 = compiled(*inputs).numpy()
    floor = getattr(workload, "relative_floor", 0.0)

    def err(got, expected):
        return max_relative_error(got, expected, floor * float(np.abs(expected).max()))

    return {"aoti_vs_eager32": err(aoti32, eager32), "aoti_vs_float64": err(aoti32, eager64),
            "eager32_vs_float64": err(eager32, eager64), "tolerance": workload.tolerance("float32")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="toy-resnet")
    parser.add_argument("--size", type=int, default=13)
    parser.add_argument("--seeds", default="2004,2011")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    isa = os.environ.get("ATEN_CPU_CAPABILITY", "the CPU's own")
    print(f"{args.model} size {args.size}, float32, vector ISA {isa}, relative errors:")
    print("seed   aoti/eager32  aoti/float64  eager32/float64  tolerance")
    for seed in (int(s) for s in args.seeds.split(",")):
        e = errors(args.model, args.size, seed)
        print(f"{seed:<6} {e['aoti_vs_eager32']:12.3g}  {e['aoti_vs_float64']:12.3g}  "
              f"{e['eager32_vs_float64']:15.3g}  {e['tolerance']:9.3g}", flush=True)


if __name__ == "__main__":
    main()
