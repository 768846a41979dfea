"""Ratios from same-round pairs: how a variant compares with the baseline in a run measured
in interleaved rounds (--rounds; couplescope.core.rounds).

In each round the two variants ran minutes or seconds apart, under the same load, so their
round medians are a pair: the ratio of a round's two medians cancels what the machine did
to both. The estimate is the median of the per-round ratios (in logs, so that 0.5 and 2
weigh alike); the spread is the lowest and highest per-round ratio; the interval is a
two-level bootstrap: rounds resampled with replacement (the round-to-round drift that
pairing leaves), and within each drawn round both variants' iterations resampled (the
noise of its medians). RESAMPLES draws, a fixed seed: the same run always gets the same
interval.

Why not the ratio of the two overall medians: a busy neighbour during a third of the run
moves both overall medians, and by different amounts when the variants spent different
shares of their time under it; the round pairs see it in the rounds it touched and the
median of the ratios leaves those out. Why a bootstrap over rounds and not a t interval on
the log ratios: with 4 or 5 rounds a t interval rests wholly on the normal assumption,
which a round with a busy neighbour breaks.

Pure functions of lists of seconds; no torch, numpy only where the bootstrap draws.
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 21
#: at most this many iterations of one round enter the bootstrap (evenly spaced): the
#: medians of 2000 resamples of 2500 calls each are still a few milliseconds
MAX_PER_ROUND = 2000


def by_round(iterations) -> dict[int, list[float]]:
    """Timed seconds grouped by round, from results.json-style iterations (kept in order)."""
    out: dict[int, list[float]] = {}
    for it in iterations:
        if it.get("kind", "timed") == "timed" and it.get("round") is not None:
            out.setdefault(it["round"], []).append(it["seconds"])
    return out


def _median(values) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def paired_ratio(base: dict[int, list[float]], other: dict[int, list[float]],
                 confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED) -> dict | None:
    """other / base from same-round pairs: {"ratio", "low", "high" (the interval),
    "spread" ([lowest, highest] per-round ratio), "per_round" ({round: ratio}), "rounds"
    (how many rounds paired)}. None when fewer than two rounds hold both variants."""
    rounds = sorted(r for r in set(base) & set(other) if base[r] and other[r] and _median(base[r]) > 0)
    if len(rounds) < 2:
        return None
    per_round = {r: _median(other[r]) / _median(base[r]) for r in rounds}
    logs = [math.log(per_round[r]) for r in rounds if per_round[r] > 0]
    if len(logs) < 2:
        return None
    estimate = math.exp(_median(logs))
    low, high = _bootstrap(base, other, rounds, confidence, resamples, seed)
    return {"ratio": estimate, "low": low, "high": high,
            "spread": [min(per_round.values()), max(per_round.values())],
            "per_round": {str(r): v for r, v in per_round.items()}, "rounds": len(rounds)}


def _resampled_medians(values, k: int, rng):
    """k medians of resamples (with replacement) of `values`, drawn in chunks."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if len(values) > MAX_PER_ROUND:
        values = values[np.linspace(0, len(values) - 1, MAX_PER_ROUND).astype(int)]
    out = np.empty(k)
    chunk = max(1, 4_000_000 // len(values))
    for start in range(0, k, chunk):
        stop = min(k, start + chunk)
        draws = rng.integers(0, len(values), size=(stop - start, len(values)))
        out[start:stop] = np.median(values[draws], axis=1)
    return out


def _bootstrap(base, other, rounds, confidence, resamples, seed) -> tuple[float, float]:
    import numpy as np

    rng = np.random.default_rng(seed)
    # per round, `resamples` bootstrap log ratios of its two medians
    table = np.empty((len(rounds), resamples))
    for i, r in enumerate(rounds):
        b = _resampled_medians(base[r], resamples, rng)
        o = _resampled_medians(other[r], resamples, rng)
        with np.errstate(divide="ignore", invalid="ignore"):
            table[i] = np.log(o / b)
    # each draw takes len(rounds) rounds with replacement, one resample of each
    picks = rng.integers(0, len(rounds), size=(resamples, len(rounds)))
    drawn = table[picks, np.arange(resamples)[:, None]]
    estimates = np.exp(np.median(drawn, axis=1))
    estimates = estimates[np.isfinite(estimates)]
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1.0 - tail))


def half_width(row: dict) -> float | None:
    """The interval's larger distance from the ratio, as a share of it (±4% -> 0.04)."""
    ratio, low, high = row.get("ratio"), row.get("ratio_low"), row.get("ratio_high")
    if not ratio or low is None or high is None:
        return None
    return max(high - ratio, ratio - low) / ratio


def resolves(row: dict) -> bool:
    """Whether the interval tells the variant from the baseline (it does not hold 1)."""
    low, high = row.get("ratio_low"), row.get("ratio_high")
    return low is not None and high is not None and (low > 1.0 or high < 1.0)
