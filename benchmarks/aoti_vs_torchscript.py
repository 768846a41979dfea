"""What leaving TorchScript costs or saves per call: torchscript vs aoti, same model, same host.

For each model, rounds of real runs through the library API (worker processes, checks and
all): torchscript then aoti in even rounds, aoti then torchscript in odd ones, so drift on
a shared node hits both alike. Prints each backend's median of the per-round medians, the
spread of the per-round medians, the ratio aoti / torchscript, and aoti's compile time (the
first round compiles the package unless the cache has it: "cached" then).

    python benchmarks/aoti_vs_torchscript.py [--rounds 3] [--host native] [--threads 1]
        [--models simplenet:1:20000,cgdrag:8192:10,resnet18:1:20]   (model:size:iterations)
"""

from __future__ import annotations

import argparse
import statistics

DEFAULT_MODELS = "simplenet:1:20000,cgdrag:8192:10,resnet18:1:20"


def one_round(model: str, size: int, iterations: int, order: list[str], host: str, threads: int) -> dict:
    import couplescope
    from couplescope import RunSpec

    specs = [RunSpec(model=model, size=size, backend=b, host=host, threads=threads, warmup=2,
                     iterations=iterations, profile_iterations=0) for b in order]
    doc = couplescope.run(specs, telemetry_hz=0)
    out = {}
    for v in doc["variants"]:
        if not v["checks_passed"]:
            raise SystemExit(f"{v['name']}: checks failed ({v.get('error')})")
        out[v["spec"]["backend"]] = v
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--host", default="native")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--models", default=DEFAULT_MODELS)
    args = p.parse_args()
    from couplescope.frontends import formatting as fmt

    rows = []
    for item in args.models.split(","):
        model, size, iterations = item.split(":")
        medians = {"torchscript": [], "aoti": []}
        compile_text, load = None, {}
        for r in range(args.rounds):
            order = ["torchscript", "aoti"] if r % 2 == 0 else ["aoti", "torchscript"]
            got = one_round(model, int(size), int(iterations), order, args.host, args.threads)
            for backend, v in got.items():
                medians[backend].append(v["stats"]["median"])
                load.setdefault(backend, v["load_seconds"])
            if compile_text is None:
                c = got["aoti"]["compile"]
                compile_text = ("cached" if c["status"] == "cached"
                                else f"{fmt.seconds(c['seconds'])} (export {fmt.seconds(c['export_seconds'])})")
        ts, ao = (statistics.median(medians[b]) for b in ("torchscript", "aoti"))
        spread = {b: f"{fmt.seconds(min(m))}..{fmt.seconds(max(m))}" for b, m in medians.items()}
        rows.append([f"{model} {size}", fmt.seconds(ts), spread["torchscript"], fmt.seconds(ao), spread["aoti"],
                     f"{ao / ts:.2f}", compile_text, fmt.seconds(load["torchscript"]), fmt.seconds(load["aoti"])])
    print(f"host {args.host}, {args.threads} thread(s), {args.rounds} interleaved rounds; per-call medians")
    print(fmt.table(["model", "torchscript", "(rounds)", "aoti", "(rounds)", "aoti/ts", "aoti compile",
                     "ts load", "aoti load"], rows, right={1, 3, 5}))


if __name__ == "__main__":
    main()
