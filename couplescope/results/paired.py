"""Ratios from same-round pairs: how a variant compares with the baseline in a run measured
in interleaved rounds (--rounds; couplescope.core.rounds).

In each round the two variants ran minutes or seconds apart, under the same load, so their
round medians are a pair: the ratio of a round's two medians cancels what the machine did
to both. The estimate is the median of the per-round ratios (in logs, so that 0.5 and 2
weigh alike); the spread is the lowest and highest per-round ratio; the interval is a
bootstrap over rounds: the per-round ratios resampled with replacement, RESAMPLES times,
the median of each resample taken (a cluster bootstrap, the round being the cluster: a
round's ratio already holds that round's noise). A fixed seed: the same run always gets
the same interval. With few rounds the interval is about the range of the per-round
ratios, which is what they can say; more rounds narrow it.

Why not the ratio of the two overall medians: a busy neighbour during a third of the run
moves both overall medians, and by different amounts when the variants spent different
shares of their time under it; the round pairs see it in the rounds it touched and the
median of the ratios leaves those out. Why not a t interval on the log ratios: with 4 or
5 rounds it rests wholly on the normal assumption, which a round with a busy neighbour
breaks. Why not also resample the calls within each round (a two-level bootstrap): with
two or three calls a round, a resampled round median is often one outlying call, and the
interval came out several times wider than the rounds' own spread (±27% for per-round
ratios of 1.54 to 1.68, measured here).

No ranking from disturbed rounds. A round in which other processes used a quarter of a
core or more (DISTURBED_PERCENT) while either variant was timed (the telemetry's
`others_cpu_percent`, couplescope.results.noise) is left out of that pair: a busy
neighbour that lands on one variant's share of a round and not on the other's moves
that round's ratio, and with 4 rounds one or two such rounds decided the median and the
interval (stride 256 under a busy loop: 1.22x, interval 1.03-1.85, for two variants
quiet runs put at 0.94-1.03). A pair is ranked only from MIN_CLEAN_ROUNDS or more rounds
that neither variant was disturbed in; with fewer it `cannot_rank` ("3 of 4 rounds
disturbed"), and no ratio is given. Why not widen the interval by what the disturbed
rounds could hide: how far a busy core moves a call depends on the model, the threads
and the scheduler, and no bound on it holds for every run. A round no telemetry sample
fell in (shorter than the sampling interval) is not known to be disturbed and is kept;
the noise verdict says how many there were. The regression gate (`--compare`,
couplescope.results.regression) leaves out the same rounds of a saved run, and the
phases of the same calls from two hosts (couplescope.results.phase_pairs) are paired
under the same rule (`pair_disturbed`).

Pure functions of lists of seconds (pair_rows: of the builder's rows and variants); no
torch, numpy only where the bootstrap draws.
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 21
#: other processes' mean CPU (percent of one core) while a variant was timed in a round
#: that makes the round disturbed
DISTURBED_PERCENT = 25.0
#: rounds neither variant was disturbed in that a ranking needs
MIN_CLEAN_ROUNDS = 2


def disturbed_rounds(loads: dict) -> set[int]:
    """The rounds of `loads` (round -> other processes' mean CPU while the variant was
    timed in it, None when unknown) in which it reached DISTURBED_PERCENT."""
    return {int(r) for r, load in loads.items() if load is not None and load >= DISTURBED_PERCENT}


def saved_loads(variant: dict) -> dict:
    """round -> other processes' CPU while timed, of a saved variant (results.json's
    `rounds`; empty for a run saved before they were kept)."""
    return {s["round"]: s.get("others_cpu_percent") for s in variant.get("rounds") or []
            if isinstance(s, dict) and s.get("round") is not None}


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
                 confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED,
                 disturbed: set[int] = frozenset()) -> dict | None:
    """other / base from same-round pairs: {"ratio", "low", "high" (the interval),
    "spread" ([lowest, highest] per-round ratio), "per_round" ({round: ratio}), "rounds"
    (how many rounds paired), "disturbed" (the rounds in common left out), "cannot_rank"
    (None, or why not)}. None when fewer than two rounds hold both variants. The rounds in
    `disturbed` (either variant's) are left out of the ratio and its interval; with fewer
    than MIN_CLEAN_ROUNDS left, the ratio and interval are None and `cannot_rank` says
    why, while "spread" and "per_round" still show every round."""
    rounds = sorted(r for r in set(base) & set(other) if base[r] and other[r] and _median(base[r]) > 0)
    if len(rounds) < 2:
        return None
    left_out = sorted(set(rounds) & set(disturbed))
    if left_out:
        clean = [r for r in rounds if r not in left_out]
        pair = (paired_ratio({r: base[r] for r in clean}, {r: other[r] for r in clean}, confidence,
                             resamples, seed) if len(clean) >= MIN_CLEAN_ROUNDS else None)
        every = {r: _median(other[r]) / _median(base[r]) for r in rounds}
        if pair is None:
            return {"ratio": None, "low": None, "high": None,
                    "spread": [min(every.values()), max(every.values())],
                    "per_round": {str(r): v for r, v in every.items()}, "rounds": len(clean),
                    "disturbed": left_out,
                    "cannot_rank": f"{len(left_out)} of {len(rounds)} rounds disturbed"}
        return {**pair, "per_round": {str(r): v for r, v in every.items()}, "disturbed": left_out}
    per_round = {r: _median(other[r]) / _median(base[r]) for r in rounds}
    logs = [math.log(per_round[r]) for r in rounds if per_round[r] > 0]
    if len(logs) < 2:
        return None
    estimate = math.exp(_median(logs))
    low, high = _bootstrap([per_round[r] for r in rounds if per_round[r] > 0], confidence, resamples, seed)
    return {"ratio": estimate, "low": low, "high": high,
            "spread": [min(per_round.values()), max(per_round.values())],
            "per_round": {str(r): v for r, v in per_round.items()}, "rounds": len(rounds),
            "disturbed": [], "cannot_rank": None}


def _bootstrap(ratios: list[float], confidence: float, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile interval of the median of the per-round ratios, resampled by round."""
    import numpy as np

    logs = np.log(np.asarray(ratios, dtype=float))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(logs), size=(resamples, len(logs)))
    estimates = np.exp(np.median(logs[picks], axis=1))
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1.0 - tail))


#: with this many rounds or fewer a pair's percentile interval is its rounds' range: of 5,
#: a resample's median is the lowest round's ratio when three picks of the five or more
#: are that round (probability 0.058, of 4 rounds 0.051), over the 0.025 a 95% interval
#: leaves out at each end; of 6 rounds 0.009, and the interval is narrower than the range
RANGE_ROUNDS = 5


def range_only(row: dict) -> bool:
    """Whether a row's interval (`ratio_low`, `ratio_high`) is no more than the range of
    the rounds it pairs (its lowest and highest round's ratio): with RANGE_ROUNDS rounds
    or fewer it always is, and to call it a 95% interval says more than the rounds do."""
    low, high, per_round = row.get("ratio_low"), row.get("ratio_high"), row.get("ratio_per_round")
    if low is None or high is None or not per_round:
        return False
    left_out = {str(r) for r in row.get("rounds_disturbed") or []}
    paired = [v for r, v in per_round.items() if str(r) not in left_out]
    return bool(paired) and math.isclose(low, min(paired)) and math.isclose(high, max(paired))


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


def unpaired(row: dict) -> bool:
    """A row of a run in rounds whose ratio is not from same-round pairs: it shares fewer
    than two rounds with its baseline (ResultsBuilder's fallback: the medians' ratio)."""
    return ("baseline" in row and row["baseline"] != row["name"] and row.get("ratio") is not None
            and row.get("ratio_low") is None)


# -- the comparison table's rows of a run in rounds ------------------------------------------

def pair_rows(rows: list[dict], variants: dict, named: str | None, cache: dict) -> None:
    """Each row's ratio to its baseline (the variant `named`, else the fastest; in a sweep,
    at the row's own size) from same-round pairs, with its interval and spread, set in the
    row; the rounds either variant was disturbed in left out (`rounds_disturbed`), and a
    pair with too few rounds left not ranked (`cannot_rank`). `variants`: name -> the
    builder's VariantResult; `cache` keeps each pair's figures while neither variant's
    calls nor disturbed rounds change (the bootstrap costs)."""
    for group in _size_groups(rows, variants):
        base = _baseline_of(group, variants, named)
        base_rounds = variants[base["name"]].round_seconds()
        for r in group:
            r["baseline"] = base["name"]
            if r is base:
                r.update(ratio=1.0, ratio_low=None, ratio_high=None, ratio_spread=None, paired_rounds=None,
                         rounds_disturbed=[], cannot_rank=None)
                continue
            disturbed = pair_disturbed(variants[base["name"]], variants[r["name"]])
            key = (base["name"], r["name"], variants[base["name"]].calls.count,
                   variants[r["name"]].calls.count, tuple(sorted(disturbed)))
            if key not in cache:
                cache[key] = paired_ratio(base_rounds, variants[r["name"]].round_seconds(), disturbed=disturbed)
            pair = cache[key]
            if pair is None:   # fewer than two rounds in common: the plain ratio of the medians
                r.update(ratio=r["median"] / base["median"] if base["median"] else None,
                         ratio_low=None, ratio_high=None, ratio_spread=None, paired_rounds=None,
                         rounds_disturbed=[], cannot_rank=None)
                continue
            r.update(ratio=pair["ratio"], ratio_low=pair["low"], ratio_high=pair["high"],
                     ratio_spread=pair["spread"], paired_rounds=pair["rounds"],
                     ratio_per_round=pair["per_round"], rounds_disturbed=pair["disturbed"],
                     cannot_rank=pair["cannot_rank"])


def pair_disturbed(base, other) -> set[int]:
    """The rounds a pair of the builder's VariantResults leaves out: those either was
    disturbed in (what `paired_ratio`'s `disturbed` takes, wherever two variants are
    paired: the comparison's rows, results.phase_pairs' phases)."""
    return disturbed_rounds(round_loads(base)) | disturbed_rounds(round_loads(other))


def round_loads(variant) -> dict:
    """round -> other processes' mean CPU while the builder's VariantResult was timed in it."""
    return {r: total / n for r, (total, n) in variant.round_load.items() if n}


def _size_groups(rows: list[dict], variants: dict) -> list[list[dict]]:
    """The rows by size: a sweep in rounds pairs each variant with a baseline of its own
    size (a ratio to a variant at another size mixes the model's cost with the
    coupling's, and the table ranks each size on its own)."""
    from couplescope.results.labels import size_of

    groups: dict = {}
    for r in rows:
        v = variants[r["name"]]
        groups.setdefault(size_of({"spec": v.spec, "model": v.model}), []).append(r)
    return list(groups.values())


def _baseline_of(group: list[dict], variants: dict, named: str | None) -> dict:
    """The group's baseline: the one --baseline names, else (a sweep) the variant of the
    named one's series at this size, else the fastest."""
    from couplescope.results import sweeps

    base = next((r for r in group if r["name"] == named), None)
    if base is None and named in variants:
        key = sweeps.series_key({"spec": variants[named].spec})
        base = next((r for r in group if sweeps.series_key({"spec": variants[r["name"]].spec}) == key), None)
    return base or min(group, key=lambda r: r["median"])
