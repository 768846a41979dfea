"""Pure statistics of a list of times: no torch, no I/O.

numpy sorts and sums: a run of a million calls is summarised at its end, while the user
waits, and Python's sort and sums over floats took a microsecond per call there.

Median and IQR rather than mean and stddev lead, because shared HPC nodes give skewed,
outlier-prone timings; the mean and stddev are kept because the reference suite prints
them. Quartiles use linear interpolation (numpy's default), so they match what users
compute themselves.
"""

from __future__ import annotations

import math

NOISE_IQR_OVER_MEDIAN = 0.10
SLOW_FIRST_FACTOR = 2.0


def percentile(sorted_values: list[float], q: float) -> float:
    """q in [0, 100] of an already sorted list, linearly interpolated."""
    if not len(sorted_values):
        return float("nan")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_and_iqr(sorted_values) -> tuple[float, float]:
    """The median and the interquartile range of an already sorted list (or array)."""
    return (float(percentile(sorted_values, 50)),
            float(percentile(sorted_values, 75) - percentile(sorted_values, 25)))


def sorted_array(values):
    """The values as a sorted array of floats."""
    import numpy as np

    return np.sort(np.asarray(values, dtype=np.float64))


def summarize(times) -> dict:
    """n, min, median, mean, max, stddev (sample, n-1), iqr, and a noise flag, of a list or
    an array of times."""
    values = sorted_array(times)
    n = len(values)
    if n == 0:
        return {"n": 0, "min": None, "median": None, "mean": None, "max": None,
                "stddev": None, "iqr": None, "noisy": False}
    mean = float(values.mean())
    stddev = float(values.std(ddof=1)) if n > 1 else 0.0
    median, iqr = median_and_iqr(values)
    return {"n": n, "min": float(values[0]), "median": median, "mean": mean, "max": float(values[-1]),
            "stddev": stddev, "iqr": iqr,
            "noisy": bool(median > 0 and iqr / median > NOISE_IQR_OVER_MEDIAN)}


def warnings_for(stats: dict, first_seconds: float | None = None, timed: list[float] | None = None,
                 torchscript: bool = False, warmup: int = 1) -> list[str]:
    """Plain-words warnings a careful user would want, hyperfine-style.

    first_seconds: the first (warm-up) call; timed: the timed calls in the order they ran;
    torchscript: the calls ran a TorchScript module (its profiling executor optimises over
    the first calls), so the warm-up hint may name it; anything else warms up for other
    reasons (caches, allocations, lazy imports) and the hint does not guess which.
    warmup: the warm-up calls already made, which the hint's --warmup adds to (a preset
    that warms up 10 times was told "use --warmup 2 or more").
    """
    out = []
    median = stats.get("median")
    if timed is not None and len(timed) >= 4 and median and timed[0] > SLOW_FIRST_FACTOR * median:
        slow = next((i for i, t in enumerate(timed) if t <= SLOW_FIRST_FACTOR * median), len(timed))
        out.append(f"the first {slow} timed call(s) took up to {float(max(timed[:slow])) / median:.1f}x the median: "
                   "the model was still warming up"
                   f"{' (TorchScript optimises over its first calls)' if torchscript else ''}; "
                   f"use --warmup {warmup + slow} or more")
    if stats.get("noisy"):
        ratio = stats["iqr"] / stats["median"]
        out.append(f"noisy: IQR is {ratio:.0%} of the median (over {NOISE_IQR_OVER_MEDIAN:.0%}); "
                   "use more --iterations, fewer threads or a quieter node")
    if first_seconds is not None and stats.get("median") and first_seconds > SLOW_FIRST_FACTOR * stats["median"]:
        out.append(f"the first (warm-up) call took {first_seconds / stats['median']:.1f}x the median; "
                   "it is excluded from the statistics")
    return out


def phase_summaries(iterations: list[dict]) -> dict:
    """Median (and IQR) of each phase over the given iterations."""
    columns: dict[str, list[float]] = {}   # in the order the phases first appear
    for it in iterations:
        for name, value in it.get("phases", {}).items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = []
            column.append(value)
    return column_summaries(columns)


def column_summaries(columns: dict) -> dict:
    """Median (and IQR, and n) of each column (a phase's seconds: a list or an array)."""
    out = {}
    for name, column in columns.items():   # (summarize's mean and stddev: not asked for)
        median, iqr = median_and_iqr(sorted_array(column))
        out[name] = {"median": median, "iqr": iqr, "n": len(column)}
    return out
