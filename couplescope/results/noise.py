"""The noise verdict of a run in rounds: was the machine shared while it measured, where,
and can its ratios rank the variants? From the telemetry already sampled and the paired
ratios; one line for the user, silent on a quiet machine.

What it looks at:
- the CPU that processes other than couplescope's own used during each variant's timed
  rounds (the whole machine less the measured worker's tree and couplescope's parent:
  couplescope.probes.tree.others_cpu_percent). A variant-round where they used at least
  DISTURBED_PERCENT of a core on average is disturbed. Not the worker's own CPU share: a
  worker that sleeps in its calls uses little CPU on a quiet machine. A round that no
  sample fell in (shorter than the sampling interval) is counted as unknown, not quiet;
- rounds whose median stands out from the variant's other rounds (SLOW_ROUND in
  results.json; in the line, STANDS_OUT and twice the variant's own relative IQR);
- the CPU frequency governor, where the OS shows it (a governor other than performance
  lets the frequency move between rounds);
- torch threads beyond the cores the worker may use.

The line names what it found, then the ratios' widest interval: "other processes used 0.9
of a core during rounds 2-3 of direct-torchscript; the ratio's interval is ±4%". The
disturbed rounds are left out of the ratios (couplescope.results.paired says why); a pair
left with too few rounds, or whose interval holds 1, cannot be ranked, and `unranked`
says so instead.
"""

from __future__ import annotations

from couplescope.results import paired

#: other processes' mean CPU (percent of one core) that makes a variant's round disturbed
DISTURBED_PERCENT = paired.DISTURBED_PERCENT
#: a round whose median is this far from the median of the variant's round medians is
#: listed in results.json; STANDS_OUT that far is named in the line
SLOW_ROUND = 0.10
STANDS_OUT = 0.25


def rounds_text(rounds: list[int]) -> str:
    """[2, 3, 5] -> "rounds 2–3, 5"; [4] -> "round 4"."""
    rounds = sorted(rounds)
    parts, start, prev = [], rounds[0], rounds[0]
    for r in rounds[1:] + [None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if r is not None:
            start = prev = r
    return ("rounds " if len(rounds) > 1 else "round ") + ", ".join(parts)


def cores_text(percent: float) -> str:
    """90 -> "0.9 of a core", 130 -> "1.3 cores"."""
    cores = percent / 100.0
    return f"{cores:.1f} of a core" if cores < 1.05 else f"{cores:.1f} cores"


def disturbed(variant) -> dict | None:
    """The rounds of `variant` in which other processes used a core's DISTURBED_PERCENT or
    more while it was timed, and how much on average."""
    loads = paired.round_loads(variant)
    hit = sorted(paired.disturbed_rounds(loads))
    if not hit:
        return None
    return {"variant": variant.name, "rounds": hit,
            "others_cpu_percent": round(sum(loads[r] for r in hit) / len(hit), 1)}


def unsampled(variant) -> dict | None:
    """The rounds of `variant` that made timed calls but got no telemetry sample while they
    ran (a round shorter than the sampling interval: microsecond calls, or a few calls a
    round), when the variant was sampled at all: their load is unknown, and a verdict
    silent about them would read as a quiet machine."""
    if getattr(variant, "telemetry", None) is None:   # telemetry off: nothing was claimed
        return None
    missing = [s["round"] for s in variant.round_summaries() if s["n"] and s["others_cpu_percent"] is None]
    return {"variant": variant.name, "rounds": missing} if missing else None


def standing_out(variant) -> list[dict]:
    """Rounds whose median is SLOW_ROUND or more from the median of the variant's round medians."""
    # a round's median of one or two calls says nothing of the round
    medians = {s["round"]: s["median"] for s in variant.round_summaries() if s["median"] and s["n"] >= 3}
    if len(medians) < 3:
        return []
    typical = paired._median(list(medians.values()))
    return [{"variant": variant.name, "round": r, "off": round(m / typical - 1.0, 3)}
            for r, m in sorted(medians.items()) if abs(m / typical - 1.0) >= SLOW_ROUND]


def verdict(builder, comparison: list[dict]) -> dict:
    """results.json's rounds.noise: what was found, the line (None on a quiet machine) and
    the pairs this run cannot rank."""
    hits = [d for d in (disturbed(v) for v in builder.variants.values()) if d]
    blind = [u for u in (unsampled(v) for v in builder.variants.values()) if u]
    slow = [s for v in builder.variants.values() for s in standing_out(v)]
    env = builder.environment or {}
    governor = env.get("cpu_governor")
    threads, cores = env.get("torch_threads"), env.get("cores_allowed")
    parts = []
    if hits:
        parts.append("other processes used " + ", ".join(
            f"{cores_text(d['others_cpu_percent'])} during {rounds_text(d['rounds'])} of {d['variant']}"
            for d in hits))
    if blind:
        missing = sum(len(u["rounds"]) for u in blind)
        total = sum(1 for v in builder.variants.values() for r in v.round_summaries() if r["n"])
        parts.append(f"no telemetry sample fell in {missing} of the variants' {total} rounds (rounds "
                     "shorter than the sampling interval): other processes' load during "
                     f"{'them' if missing > 1 else 'it'} is unknown")
    spread = {}
    for v in builder.variants.values():
        st = v.stats()
        spread[v.name] = st["iqr"] / st["median"] if st["n"] and st["median"] else 0.0
    for s in slow:
        # named only when far beyond the variant's own spread: a microsecond call's rounds
        # of a few calls each move by tens of percent on a quiet machine
        if abs(s["off"]) >= max(STANDS_OUT, 2 * spread.get(s["variant"], 0.0)):
            parts.append(f"round {s['round']} of {s['variant']} was {abs(s['off']):.0%} "
                         f"{'slower' if s['off'] > 0 else 'faster'} than its other rounds")
    if governor and governor not in ("performance", "n/a"):
        parts.append(f"the CPU frequency governor is {governor}: the clock may change between rounds")
    if isinstance(threads, int) and isinstance(cores, int) and threads > cores:
        parts.append(f"the worker ran {threads} torch threads on {cores} cores")
    widths = [w for w in (paired.half_width(r) for r in comparison) if w is not None]
    left_out = [f"{rounds_text(r['rounds_disturbed'])} left out of {r['name']} ÷ {r['baseline']}"
                for r in comparison if r.get("rounds_disturbed") and r.get("ratio") is not None]
    line = None
    if parts:
        line = "; ".join(parts + left_out)
        if widths:
            which = "the ratio's interval is" if len(widths) == 1 else "the ratios' intervals are at most"
            line += f"; {which} ±{max(widths):.0%}"
    unranked = []
    for r in comparison:
        if r.get("cannot_rank"):
            unranked.append(f"{r['name']} and {r['baseline']} cannot be ranked: {r['cannot_rank']} (other "
                            f"processes used {DISTURBED_PERCENT:g}% of a core or more while one of them was "
                            f"timed), which leaves fewer than {paired.MIN_CLEAN_ROUNDS} to pair")
        if r.get("ratio_low") is not None and not paired.resolves(r):
            span = f"({r['ratio_low']:.3f}–{r['ratio_high']:.3f})"
            unranked.append(f"{r['name']} and {r['baseline']} cannot be ranked: "
                            + (f"the ratio by round {span} holds 1, and {r.get('paired_rounds')} rounds are too "
                               "few for a narrower interval" if paired.range_only(r)
                               else f"the ratio's 95% interval {span} holds 1"))
    return {"line": line, "disturbed": hits, "unsampled": blind, "standing_out": slow,
            "governor": governor, "unranked": unranked,
            "disturbed_percent": DISTURBED_PERCENT}
