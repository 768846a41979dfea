"""What profiling costs: timed iterations with the profiler window on and off, and the
profiled iterations themselves, for simplenet and StrideNet at a small size.

All variants run in one session (interleaved: off, on, off, on ...), so the on/off
ratios compare like with like on a shared machine. The timed iterations of a profiled
variant run before its window, so their median should match the unprofiled one; the
profiled iterations carry the profiler's per-operator cost; "window" is the wall time
the whole profile window added to the variant (probe, profiler start, iterations,
writing and summarizing the trace).

    /work/venv/bin/python benchmarks/profiler_overhead.py [--iterations 30] [--size 32] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from couplescope.frontends import formatting as fmt
from couplescope.frontends.api import run
from couplescope.protocol.spec import RunSpec


def specs(iterations: int, size: int, profile: int, repeats: int) -> list[RunSpec]:
    out = []
    for r in range(repeats):
        for model, model_size in (("simplenet", None), ("stride", size)):
            for window in (0, profile):
                tag = "on" if window else "off"
                out.append(RunSpec(model=model, size=model_size, warmup=2, iterations=iterations,
                                   profile_iterations=window, threads=1, name=f"{model}-{tag}-{r}"))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30, help="timed iterations per variant")
    parser.add_argument("--size", type=int, default=32, help="StrideNet N")
    parser.add_argument("--profile-iterations", type=int, default=3, help="the profile window")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats of each on/off pair")
    args = parser.parse_args(argv)
    doc = run(specs(args.iterations, args.size, args.profile_iterations, args.repeats),
              title="profiler-overhead")
    rows = {}
    for v in doc["variants"]:
        model, tag, _ = v["name"].rsplit("-", 2)
        row = rows.setdefault(model, {"off": [], "on": [], "profiled": [], "window": [], "ops": None})
        timed = [it["seconds"] for it in v["iterations"] if it["kind"] == "timed"]
        row[tag].extend(timed)
        if tag == "on":
            row["profiled"].extend(it["seconds"] for it in v["iterations"] if it["kind"] == "profiled")
            profile = v.get("profile", {})
            row["window"].append(profile.get("seconds"))
            row["ops"] = profile.get("operators_per_iteration")
            if profile.get("status") != "ok":
                why = profile.get("error") or profile.get("reason")
                print(f"{v['name']}: profiling {profile.get('status')}: {why}")
    label = {"simplenet": "simplenet", "stride": f"stride N={args.size}"}
    print(f"profiler overhead: {args.iterations} timed iterations per variant, profile window "
          f"{args.profile_iterations}, {args.repeats} interleaved repeats, 1 thread")
    print(f"{'model':<14} {'ops/iter':>8} {'timed off':>10} {'timed on':>10} {'on/off':>7} "
          f"{'profiled':>10} {'prof/off':>8} {'window':>9}")
    for model, row in rows.items():
        off, on = statistics.median(row["off"]), statistics.median(row["on"])
        prof = statistics.median(row["profiled"]) if row["profiled"] else float("nan")
        window = statistics.median(w for w in row["window"] if w is not None)
        print(f"{label[model]:<14} {str(row['ops']):>8} {fmt.seconds(off):>10} {fmt.seconds(on):>10} "
              f"{on / off:>6.2f}x {fmt.seconds(prof):>10} {prof / off:>7.2f}x {fmt.seconds(window):>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
