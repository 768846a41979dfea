"""Is a new run slower than a base run? Two results documents in, verdicts out.

Variants are matched by name. Per variant: the two medians of the timed calls, their
ratio (new / base), and a confidence interval for that ratio from a bootstrap of the
iterations: each run's timed calls are resampled with replacement, the ratio of the
resampled medians taken, RESAMPLES times, and the central CONFIDENCE share of those
ratios kept. The seed is fixed, so the same two runs always get the same interval.

The resampling takes runs of consecutive calls (a moving-block bootstrap, blocks of
about sqrt(n) calls), not single calls: calls are not independent on a shared machine,
a busy neighbour slows a stretch of them, and resampling single calls would count ten
slow calls in a row as ten independent pieces of evidence and give an interval far too
narrow. Measured here on a loaded machine: two runs of simplenet (300 calls, one thread)
a minute apart had a median ratio of 1.066; resampling single calls gave [1.056, 1.083],
a false alarm at 5%; blocks give [1.042, 1.104], none.

Why a bootstrap of the median ratio, not a rank test: the number a user reads is the
ratio of the two medians that are printed, and the interval is about that very
number. A rank test (Mann-Whitney, with a Hodges-Lehmann estimate) answers "does one
distribution sit above the other", and its interval for a ratio assumes the two
distributions differ by a shift only; on a shared node they differ in shape (a busy
neighbour adds a tail of slow calls to one run), which the bootstrap takes as it comes.
The median, not the mean, because those tails would drag a mean.

Two runs measured in interleaved rounds (--rounds) are resampled by round instead of by
block of calls: a round is the unit the drift moved as one, so each resampled run is
made of whole rounds drawn with replacement.

A run in rounds leaves out of the comparison the rounds its telemetry shows disturbed
(other processes at a quarter of a core or more while the variant was timed: the rule
the run's own table follows, couplescope.results.paired): the medians, the ratio and the
interval are of the other rounds. A run left with fewer than two undisturbed rounds (of
two or more) cannot be ranked against the other: its verdict is inconclusive, whatever
the interval of all its calls would say.

Verdict, with t the threshold (default 5%):
  slower                 the whole interval lies above 1 + t: slower by more than t,
                         with confidence; the only verdict that fails (exit 1)
  faster                 the whole interval lies below 1 / (1 + t) (the same factor
                         the other way)
  inconclusive           slower or faster by the interval, but other processes loaded the
                         machine differently while the two runs were timed (their
                         telemetry: other processes' CPU, not the worker's own): two runs
                         measured at different times cannot cancel that drift, so the
                         difference may be the machine's, not the code's; or a run in
                         rounds too disturbed to rank (above) (exit 5 when no variant is
                         slower)
  no significant change  anything else: the change is within t, or the iterations
                         cannot tell
Requiring the whole interval beyond the threshold (rather than the median ratio beyond
it and the interval beyond 1, asv's rule) is the conservative choice: on a shared
machine the same code measured twice moves by several percent between runs, and a gate
that fails on that is a gate people switch off. benchmarks/compare_noise.py measures
how far repeated runs of the same variant move here.
"""

from __future__ import annotations

import math

from couplescope.protocol.contract import exit_code
from couplescope.results import paired, saved, stats
from couplescope.results.noise import rounds_text

DEFAULT_THRESHOLD = 0.05
CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 14
#: at most this many resampled values held at once (memory for runs of 100 000 calls)
_CHUNK_VALUES = 4_000_000

#: other processes' CPU (percent of a core, while timed) that differs this much between the
#: two runs makes a slower or faster verdict inconclusive
OTHERS_GAP = 25.0

SLOWER, FASTER, SAME, INCONCLUSIVE = "slower", "faster", "no significant change", "inconclusive"
ONLY_BASE, ONLY_NEW, EMPTY = "only in base", "only in new", "no timed iterations"


def block_length(n: int) -> int:
    """Consecutive calls resampled together: about the square root of the run's length."""
    return max(1, round(math.sqrt(n)))


def _resampled_medians(values, k: int, rng):
    """k medians of moving-block bootstrap resamples of `values` (in call order)."""
    import numpy as np

    n, length = len(values), block_length(len(values))
    blocks = -(-n // length)
    starts = rng.integers(0, n - length + 1, size=(k, blocks))
    index = (starts[:, :, None] + np.arange(length)).reshape(k, -1)[:, :n]
    return np.median(values[index], axis=1)


def _resampled_round_medians(rounds: list, k: int, rng):
    """k medians of resamples made of whole rounds (drawn with replacement) of a run in rounds."""
    import numpy as np

    arrays = [np.asarray(r, dtype=float) for r in rounds]
    out = np.empty(k)
    picks = rng.integers(0, len(arrays), size=(k, len(arrays)))
    for i in range(k):
        out[i] = np.median(np.concatenate([arrays[j] for j in picks[i]]))
    return out


def ratio_interval(base: list[float], new: list[float], confidence: float = CONFIDENCE,
                   resamples: int = RESAMPLES, seed: int = SEED, base_rounds=None,
                   new_rounds=None) -> tuple[float, float]:
    """The bootstrap percentile interval of median(new) / median(base); both lists in the
    order the calls ran. With both runs' rounds (lists of per-round seconds, two or more
    each), whole rounds are resampled instead of blocks of calls."""
    import numpy as np

    b, n = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    rng = np.random.default_rng(seed)
    by_round = base_rounds is not None and new_rounds is not None and min(len(base_rounds), len(new_rounds)) > 1
    per_chunk = max(1, _CHUNK_VALUES // max(len(b), len(n)))
    ratios, done = [], 0
    while done < resamples:
        k = min(per_chunk, resamples - done)
        if by_round:
            ratios.append(_resampled_round_medians(new_rounds, k, rng)
                          / _resampled_round_medians(base_rounds, k, rng))
        else:
            ratios.append(_resampled_medians(n, k, rng) / _resampled_medians(b, k, rng))
        done += k
    all_ratios = np.concatenate(ratios)
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(all_ratios, tail)), float(np.quantile(all_ratios, 1.0 - tail))


def verdict(low: float, high: float, threshold: float) -> str:
    if low > 1.0 + threshold:
        return SLOWER
    if high < 1.0 / (1.0 + threshold):
        return FASTER
    return SAME


def compare_variant(name: str, base: dict | None, new: dict | None, threshold: float) -> dict:
    """One row of the comparison (a variant on one side only is a row too)."""
    row = {"name": name, "base_median": None, "new_median": None, "ratio": None,
           "ci_low": None, "ci_high": None, "base_n": 0, "new_n": 0,
           "base_checks_passed": base.get("checks_passed") if base else None,
           "new_checks_passed": new.get("checks_passed") if new else None,
           "base_ended": base.get("verdict") if base else None,
           "new_ended": new.get("verdict") if new else None, "notes": []}
    if base is None or new is None:
        row["verdict"] = ONLY_NEW if base is None else ONLY_BASE
        return row
    base_times, new_times = saved.timed_seconds(base), saved.timed_seconds(new)
    row["base_n"], row["new_n"] = len(base_times), len(new_times)
    if not base_times or not new_times:
        row["verdict"] = EMPTY
        return row
    base_rounds, new_rounds = _Rounds(base), _Rounds(new)
    row["rounds_disturbed"] = {"base": base_rounds.disturbed, "new": new_rounds.disturbed}
    too_few = [f"{len(side.disturbed)} of {side.total} rounds of {name} disturbed"
               for name, side in (("base", base_rounds), ("new", new_rounds)) if side.too_disturbed]
    if too_few:
        row["verdict"] = INCONCLUSIVE
        row["notes"] = [f"cannot rank: {' and '.join(too_few)} (other processes used a quarter of a core or "
                        "more while it was timed), fewer than two rounds left to compare; measure again on a "
                        "quieter machine"] + notes(base, new)
        return row
    base_times, new_times = base_rounds.seconds(base_times), new_rounds.seconds(new_times)
    row["base_median"] = stats.percentile(sorted(base_times), 50)
    row["new_median"] = stats.percentile(sorted(new_times), 50)
    if row["base_median"] <= 0:
        row["verdict"] = EMPTY
        return row
    row["ratio"] = row["new_median"] / row["base_median"]
    row["by_rounds"] = len(base_rounds.kept) > 1 and len(new_rounds.kept) > 1
    row["ci_low"], row["ci_high"] = ratio_interval(base_times, new_times, base_rounds=base_rounds.kept or None,
                                                   new_rounds=new_rounds.kept or None)
    row["verdict"] = verdict(row["ci_low"], row["ci_high"], threshold)
    row["notes"] = notes(base, new) + [f"{rounds_text(side.disturbed)} of {name} disturbed and left out"
                                       for name, side in (("base", base_rounds), ("new", new_rounds))
                                       if side.disturbed]
    gap = load_gap(base, new)
    if gap is not None and row["verdict"] in (SLOWER, FASTER):
        row["notes"].append(f"{row['verdict']} by the interval, but {gap}; two runs measured at "
                            "different times cannot cancel that: run both in one interleaved run "
                            "(--rounds) to compare them")
        row["verdict"] = INCONCLUSIVE
    elif gap is not None:
        row["notes"].append(gap)
    return row


class _Rounds:
    """A saved variant's timed calls by round, its disturbed rounds apart (none for a run
    not measured in rounds)."""

    def __init__(self, variant: dict) -> None:
        rounds = paired.by_round(saved.timed_steps(variant))
        self.total = len(rounds)
        self.disturbed = sorted(set(rounds) & paired.disturbed_rounds(paired.saved_loads(variant)))
        self.kept = [rounds[r] for r in sorted(rounds) if r not in self.disturbed]

    @property
    def too_disturbed(self) -> bool:
        return bool(self.disturbed) and len(self.kept) < paired.MIN_CLEAN_ROUNDS

    def seconds(self, every: list[float]) -> list[float]:
        """The calls compared: those of the undisturbed rounds, or `every` call when none was disturbed."""
        return [t for r in self.kept for t in r] if self.disturbed else every


def others_while_timed(variant: dict):
    """Other processes' mean CPU (percent of a core) while the variant was timed, from its
    telemetry; None for a run without it (telemetry off, or saved before it was kept)."""
    value = ((variant.get("telemetry") or {}).get("summary") or {}).get("others_cpu_percent_mean_timed")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def load_gap(base: dict, new: dict) -> str | None:
    """The machine's load differing between the two runs, in words, when other processes'
    CPU while timed differs by OTHERS_GAP or more (None when it does not, or is unknown)."""
    a, b = others_while_timed(base), others_while_timed(new)
    if a is None or b is None or abs(a - b) < OTHERS_GAP:
        return None
    from couplescope.results.noise import cores_text

    return (f"other processes used {cores_text(a)} while base was timed and {cores_text(b)} "
            "while new was: the machine's load differed between the runs")


def notes(base: dict, new: dict) -> list[str]:
    """What makes a verdict less certain than its interval says: a noisy run. (The machine's
    load differing between the runs is judged by load_gap, from other processes' CPU: the
    worker's own share is no sign of it, since a worker that sleeps in its calls uses
    little CPU on a quiet machine.)"""
    out = []
    for side, v in (("base", base), ("new", new)):
        s = v.get("stats") or {}
        if v.get("noisy") and s.get("median"):
            out.append(f"{side} run noisy (IQR {s['iqr'] / s['median']:.0%} of the median)")
    return out


def compare(base_doc: dict, new_doc: dict, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """The comparison document `couplescope --compare --json` prints."""
    base = {v["name"]: v for v in base_doc["variants"]}
    new = {v["name"]: v for v in new_doc["variants"]}
    names = list(base) + [n for n in new if n not in base]
    rows = [compare_variant(n, base.get(n), new.get(n), threshold) for n in names]
    slower = [r["name"] for r in rows if r["verdict"] == SLOWER]
    inconclusive = [r["name"] for r in rows if r["verdict"] == INCONCLUSIVE]
    return {"base": _describe(base_doc), "new": _describe(new_doc),
            "threshold": threshold, "confidence": CONFIDENCE, "resamples": RESAMPLES,
            "statistic": "ratio of medians (new / base), bootstrap percentile interval: blocks of "
                         "calls, or whole rounds for two runs in rounds",
            "variants": rows, "slower": slower, "inconclusive": inconclusive,
            "exit_code": exit_code(comparison=(bool(slower), bool(inconclusive)))}


def common_names(base_doc: dict, new_doc: dict) -> list[str]:
    new = {v["name"] for v in new_doc["variants"]}
    return [v["name"] for v in base_doc["variants"] if v["name"] in new]


def _describe(doc: dict) -> dict:
    env = doc.get("environment") or {}
    return {"source": doc.get("source"), "title": doc.get("title"), "torch": env.get("torch"),
            "start_time": env.get("start_time"), "hostname": env.get("hostname")}
