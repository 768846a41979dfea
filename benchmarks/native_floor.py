"""How close couplescope's native host comes to the floor any host can reach.

The floor is benchmarks/native_floor.cpp: a plain C++ loop doing exactly from_blob ->
forward under AutoGradMode(false) -> copy_ -> release on the same TorchScript file, timed
with steady_clock around the whole call, nothing else. Beside it, couplescope's whole-call
median for the same model on the native host (torchscript backend, a real run through the
library API). Both at 1 thread, in rounds ordered floor, couplescope then couplescope,
floor, so drift on a shared node hits both alike. Prints each side's median of the per-round
medians and the ratio (targets: <= 1.15 for simplenet, <= 1.03 for stride at 256).

The floor program is compiled once against the installed torch (g++ with torch's include
and library paths) into the couplescope cache (COUPLESCOPE_CACHE), like the native host.

    python benchmarks/native_floor.py [--rounds 4] [--simplenet-iterations 20000]
                                      [--stride-size 256] [--stride-iterations 30]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "native_floor.cpp")


def build_floor() -> str:
    return build_cpp(SOURCE, "native_floor")


def build_cpp(source: str, name: str) -> str:
    """A one-file libtorch program compiled once into the couplescope cache (keyed by its
    source and torch's version); its path. benchmarks/train_floor.py builds its loop here too."""
    import torch
    from torch.utils.cpp_extension import include_paths, library_paths

    from couplescope.backends import native

    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read() + torch.__version__.encode()).hexdigest()[:12]
    out = os.path.join(native.cache_root(), "benchmarks", f"{name}-{digest}")
    if os.path.exists(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    libs = library_paths()
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    tmp = f"{out}.{os.getpid()}.tmp"   # two users building at once each write their own
    cmd = [native.compiler(), "-O2", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", source,
           *[f"-I{p}" for p in include_paths()], *[f"-L{p}" for p in libs],
           *[f"-Wl,-rpath,{p}" for p in libs], "-ltorch", "-ltorch_cpu", "-lc10", "-o", tmp]
    print(f"compiling {name} (once, about a minute): {out}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    os.replace(tmp, out)
    return out


def save_model(model: str, size: int, path: str) -> tuple[int, ...]:
    """The catalogue model saved as TorchScript, as couplescope saves it; its input shape."""
    import numpy as np
    import torch

    from couplescope.workloads import catalogue

    workload = catalogue.load(model)
    arrays = workload.host_arrays(size, "float32", 0)
    call = workload.calls(size)[0]
    eager = workload.build(size, "float32", 0)
    example = tuple(torch.from_numpy(np.ascontiguousarray(arrays[n])) for n in call.inputs)
    torch.jit.save(workload.script(eager, example), path)
    return arrays[call.inputs[0]].shape


def floor_median(binary: str, path: str, shape, iterations: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([binary, path, str(iterations), "20", *map(str, shape)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[1]) * 1e-6


def couplescope_median(model: str, size: int, iterations: int) -> float:
    import couplescope

    doc = couplescope.run(couplescope.RunSpec(model=model, size=size, warmup=20, threads=1,
                                              iterations=iterations, profile_iterations=0,
                                              host="native"))
    return doc["variants"][0]["stats"]["median"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--simplenet-iterations", type=int, default=20000)
    p.add_argument("--stride-size", type=int, default=256)
    p.add_argument("--stride-iterations", type=int, default=30)
    args = p.parse_args()
    import torch

    binary = build_floor()
    cases = [("simplenet", 1, args.simplenet_iterations, 1.15),
             ("stride", args.stride_size, args.stride_iterations, 1.03)]
    print(f"torch {torch.__version__}, 1 thread, {os.cpu_count()} cores, {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        for model, size, iterations, target in cases:
            path = os.path.join(tmp, f"{model}.pt")
            shape = save_model(model, size, path)
            floor, ours = [], []
            for r in range(args.rounds):
                order = (0, 1) if r % 2 == 0 else (1, 0)
                for side in order:
                    if side == 0:
                        floor.append(floor_median(binary, path, shape, iterations))
                    else:
                        ours.append(couplescope_median(model, size, iterations))
            a, b = statistics.median(ours), statistics.median(floor)
            verdict = "meets" if a / b <= target else "misses"
            print(f"{model:<9} size {size:<4} couplescope native {a * 1e6:11.2f} us   C++ floor "
                  f"{b * 1e6:11.2f} us   ratio {a / b:.3f} ({verdict} the target {target})")


if __name__ == "__main__":
    main()
