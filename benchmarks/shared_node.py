"""Do comparisons hold on a shared node? Interleaved rounds against one variant after the
other, with a busy neighbour arriving at a random moment (docs/shared-node.md).

Each trial runs one couplescope command for real (--json) and, while it measures, starts a
busy loop on one core (`python -c "while True: pass"`) at a random moment of the run's
expected length, which it stops after --busy seconds. It prints per trial the ratio of
the second variant to the first (the paired ratio to the baseline in rounds, with its 95%
interval, or "cannot rank" where the disturbed rounds left too few to pair; the ratio of
medians without) and the noise verdict, then per mode the ratios' range.

    python benchmarks/shared_node.py                      # the issue's check, 3 trials per mode
    python benchmarks/shared_node.py --quiet-machine      # the same without the busy loop
    python benchmarks/shared_node.py --preset stride512 --modes default --trials 3

The default command is
    couplescope --model stride --size 256 --backend torchscript,bridge --iterations 12 --threads 1
with `--rounds 4` ("rounds") and `--rounds 1` ("one after the other"), the trials of the
two modes alternating so that both see the same evening on the machine.

The keep-alive design of the rounds (one worker per variant, kept between rounds) is
measured against fresh processes per round with --design (see docs/shared-node.md for the
figures): "fresh" runs each round of each variant as its own couplescope command with
the round's share of the iterations, in the same shuffled orders, and pairs the rounds the
same way (couplescope.results.paired).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import threading
import time

from couplescope.core import rounds as plan_rounds
from couplescope.results import paired

COMMAND = ["--model", "stride", "--size", "256", "--backend", "torchscript,bridge", "--iterations", "12",
           "--threads", "1", "--profile-iterations", "0", "--quiet"]
BASE, OTHER = "stride-torchscript-256", "stride-bridge-torchscript-256"
MODES = {"rounds": ["--rounds", "4"], "one after the other": ["--rounds", "1"], "default": []}


def couplescope(argv: list[str]) -> tuple[dict, float]:
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "couplescope", *argv, "--json"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"couplescope {' '.join(argv)} failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout), time.monotonic() - t0


class BusyNeighbour:
    """Busy loops (one core each), started `after` seconds from now, stopped `lasting` later."""

    def __init__(self, after: float, lasting: float, cores: int = 1) -> None:
        self.after, self.lasting, self.cores, self.procs = after, lasting, cores, []
        self.started_at = None
        self._timer = threading.Timer(after, self._start)
        self._timer.start()

    def _start(self) -> None:
        self.started_at = time.monotonic()
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.cores)]
        threading.Timer(self.lasting, self.stop).start()

    def stop(self) -> None:
        self._timer.cancel()
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def ratio_of(doc: dict, base: str, other: str) -> float | None:
    """other ÷ base: the paired ratio (None where the run cannot rank them), or the medians'."""
    rows = {r["name"]: r for r in doc["comparison"]}
    if base not in rows or other not in rows:
        return None
    if rows[other].get("baseline") == base:
        return rows[other]["ratio"]
    if rows[base].get("baseline") == other:   # the other is the baseline: the inverse
        ratio = rows[base]["ratio"]
        return None if ratio is None else 1.0 / ratio
    return rows[other]["median"] / rows[base]["median"]


def verdict_of(doc: dict, base: str, other: str) -> str:
    """What the run says of other ÷ base: "1.012 (0.981–1.040)", "1.000" (one after the
    other: no interval), or "cannot rank (3 of 4 rounds disturbed)"."""
    rows = {r["name"]: r for r in doc["comparison"]}
    if base not in rows or other not in rows:
        return "not both in the run"
    row, inverse = (rows[other], False) if rows[other].get("baseline") == base else (rows[base], True)
    if row.get("cannot_rank"):
        return f"cannot rank ({row['cannot_rank']})"
    ratio = ratio_of(doc, base, other)
    if row.get("ratio_low") is None:
        return f"{ratio:.3f}"
    low, high = (1 / row["ratio_high"], 1 / row["ratio_low"]) if inverse else (row["ratio_low"], row["ratio_high"])
    ranks = "" if low <= 1.0 <= high else ", ranks them"
    return f"{ratio:.3f} ({low:.3f}–{high:.3f}{ranks})"


def trial(argv: list[str], expected: float, busy: float | None, base: str, other: str, cores: int = 1) -> dict:
    neighbour = BusyNeighbour(random.uniform(0, 0.5 * expected), busy, cores) if busy else None
    doc, seconds = couplescope(argv)
    if neighbour is not None:
        neighbour.stop()
    noise = (doc.get("rounds") or {}).get("noise") or {}
    return {"ratio": ratio_of(doc, base, other), "verdict": verdict_of(doc, base, other), "seconds": seconds,
            "noise": noise.get("line"), "unranked": noise.get("unranked") or [],
            "busy_at": neighbour.after if neighbour else None, "doc": doc}


def fresh_rounds(k: int, base_argv: list[str], names: dict, seed: int) -> tuple[float | None, float]:
    """The other design: every round of every variant a fresh couplescope (its own start-up
    and warm-up), in the shuffled orders of `seed`; the rounds paired as --rounds pairs them."""
    from couplescope.protocol.spec import RunSpec

    specs = [RunSpec(model="stride", name=n, iterations=12) for n in names]
    plan = plan_rounds.plan(specs, k, seed=seed)
    by_round = {n: {} for n in names}
    t0 = time.monotonic()
    for number, order in enumerate(plan.orders, 1):
        for name in order:
            argv = [a for a in base_argv]
            at = argv.index("--backend")
            argv[at + 1] = names[name]
            argv[argv.index("--iterations") + 1] = str(plan.share(name, number))
            doc, _ = couplescope(argv + ["--rounds", "1"])
            by_round[name][number] = [it["seconds"] for it in doc["variants"][0]["iterations"]
                                      if it["kind"] == "timed"]
    first, second = list(names)
    pair = paired.paired_ratio(by_round[first], by_round[second])
    return (pair["ratio"] if pair else None), time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--busy", type=float, default=20.0, help="seconds the busy loop lasts (default 20)")
    ap.add_argument("--busy-cores", type=int, default=1, help="busy loops at once (default 1)")
    ap.add_argument("--quiet-machine", action="store_true", help="no busy loop")
    ap.add_argument("--preset", help="run this preset instead of the stride 256 command")
    ap.add_argument("--modes", default="rounds,one after the other",
                    help="comma list of: rounds, one after the other, default")
    ap.add_argument("--pairs", default="", help="for --preset: BASE:OTHER[,BASE:OTHER] variant names")
    ap.add_argument("--design", action="store_true",
                    help="time fresh processes per round against the kept workers (4 rounds), "
                         "instead of the busy-loop trials")
    args = ap.parse_args()
    busy = None if args.quiet_machine else args.busy
    base_argv = ["--preset", args.preset, "--quiet", "--profile-iterations", "0"] if args.preset else COMMAND
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",") if p] or [(BASE, OTHER)]
    modes = [m.strip() for m in args.modes.split(",")]
    results = {m: [] for m in modes}
    expected = None
    for n in range(0 if args.design else args.trials):
        for mode in (modes if n % 2 == 0 else modes[::-1]):
            argv = base_argv + MODES[mode]
            if expected is None:   # the first run tells how long one takes
                _, expected = couplescope(argv)
            got = trial(argv, expected, busy, *pairs[0], args.busy_cores)
            if got["verdict"] == "not both in the run":   # e.g. a preset without --pairs: say what it has
                names = ", ".join(v["name"] for v in got["doc"]["variants"])
                raise SystemExit(f"the run has no variants {pairs[0][0]} and {pairs[0][1]} to pair; "
                                 f"give --pairs BASE:OTHER (its variants: {names})")
            got["others"] = {f"{o}/{b}": ratio_of(got["doc"], b, o) for b, o in pairs[1:]}
            results[mode].append(got)
            extra = "".join(f", {k} {v:.3f}" for k, v in got.get("others", {}).items() if v)
            busy_at = f", busy loop from {got['busy_at']:.1f} s" if got["busy_at"] is not None else ""
            print(f"{mode:>20} trial {n + 1}: {pairs[0][1]}/{pairs[0][0]} {got['verdict']}{extra} "
                  f"({got['seconds']:.1f} s{busy_at})" + (f"\n{'':>22}noise: {got['noise']}" if got['noise'] else ""),
                  flush=True)
    for mode, got in results.items():
        if got:
            print()
        for b, o in pairs:
            ratios = [ratio_of(g["doc"], b, o) for g in got]
            ratios = [r for r in ratios if r is not None]
            if ratios:
                print(f"{mode:>20}: {o}/{b} {', '.join(f'{r:.3f}' for r in ratios)}; range "
                      f"{max(ratios) - min(ratios):.3f}, median {statistics.median(ratios):.3f}; "
                      f"mean run {statistics.mean(g['seconds'] for g in got):.1f} s")
    if args.design:
        names = {BASE: "torchscript", OTHER: "bridge"}
        for n in range(args.trials):
            seed = random.randrange(2 ** 31)
            t0 = time.monotonic()
            doc, _ = couplescope(COMMAND + ["--rounds", "4", "--order-seed", str(seed)])
            kept = (ratio_of(doc, BASE, OTHER), time.monotonic() - t0)
            fresh = fresh_rounds(4, COMMAND, names, seed)
            print(f"design trial {n + 1}: kept workers {verdict_of(doc, BASE, OTHER)} in {kept[1]:.1f} s; "
                  f"fresh processes per round {fresh[0]:.3f} in {fresh[1]:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
