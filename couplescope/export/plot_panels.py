"""The panels of a summary figure, each drawn on a matplotlib Axes it is given.

  sweep         median per call against size, one line per series, the 25-75th
                percentile band shaded (FTorch-benchmarks' and the functional-API
                benchmarks' picture); log axes when a range spans 10x or more
  distributions one horizontal box per variant over its timed calls: box 25-75%,
                whiskers 5-95% (one 10x outlier would otherwise flatten every box),
                the outliers as dots (far ones cut off, counted and marked), the
                medians in a column right of the axes (no cap or flier covers them)
  series        one variant's timed calls in order, phases stacked (marshal_in,
                forward, marshal_out ...; "other" is the call time no phase covers);
                calls far above the rest are cut off and counted (axis_top)
  losses        --task train: every step's loss against the step, one line per variant,
                on a log axis (a loss falls by decades as a model learns)

Times are plotted in seconds and labelled by an engineering formatter, so every axis
reads in the unit its data calls for (ns, µs, ms, s). Only matplotlib's object API is
used (no pyplot state), and only from couplescope.export.plots, which imports it lazily.
"""

from __future__ import annotations

import textwrap

from couplescope.results import stats, time_text

PHASE_ORDER = ("marshal_in", "h2d", "zero_grad", "forward", "loss", "backward", "allreduce", "step",
               "replay", "train", "d2h", "marshal_out", "load")
PHASE_COLORS = {"marshal_in": "tab:cyan", "h2d": "tab:purple", "forward": "tab:green", "d2h": "tab:olive",
                "marshal_out": "tab:blue", "load": "tab:red", "other": "tab:gray",
                "zero_grad": "lightgray", "loss": "gold", "backward": "tab:orange", "allreduce": "tab:brown",
                "step": "tab:pink", "replay": "darkgreen", "train": "darkviolet"}
#: a range at least this wide (max / min) gets a log axis
LOG_RANGE = 10.0


def time_formatter(places: int | None = None):
    from matplotlib.ticker import EngFormatter

    return EngFormatter(unit="s", places=places, sep=" ")


def seconds_text(value: float) -> str:
    """A time as the app and the printer write it (results.time_text): 779.3 ms, 4.9 µs."""
    return time_text.seconds(value)


def _time_axis(axis, low: float, high: float) -> None:
    """Seconds with engineering units; log scale when the range calls for it, with ticks
    at 1, 2 and 5 of each decade (a decade or two would otherwise show one label)."""
    from matplotlib.ticker import LogLocator, NullFormatter

    if low > 0 and high / low >= LOG_RANGE:
        axis.axes.set_xscale("log") if axis.axis_name == "x" else axis.axes.set_yscale("log")
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(time_formatter())


def sweep(ax, lines: list[dict], size_label: str, unit: str = "call") -> None:
    """lines: {label, color, sizes, low, median, high} per series; `unit`: what a variant
    makes ("call", a training run's "step")."""
    all_sizes = sorted({s for line in lines for s in line["sizes"]})
    for line in lines:
        ax.fill_between(line["sizes"], line["low"], line["high"], color=line["color"], alpha=0.22, linewidth=0)
        ax.plot(line["sizes"], line["median"], marker="o", color=line["color"], label=line["label"])
    if all_sizes[0] > 0 and all_sizes[-1] / all_sizes[0] >= LOG_RANGE:
        ax.set_xscale("log")
    ax.set_xticks(all_sizes, [str(s) for s in all_sizes])
    ax.minorticks_off() if ax.get_xscale() == "log" else None
    low = min(min(line["low"]) for line in lines)
    high = max(max(line["high"]) for line in lines)
    _time_axis(ax.yaxis, low, high)
    ax.set_xlabel(size_label)
    ax.set_ylabel(f"time per {unit}")
    ax.set_title(f"median per {unit} vs size (band: 25-75th percentile of the timed {unit}s)", fontsize=10)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")


def whisker_high(values: list[float]) -> float:
    """Where a 95th-percentile whisker ends: the largest call at or below the percentile
    (matplotlib's rule)."""
    ordered = sorted(values)
    p95 = stats.percentile(ordered, 95)
    return max(v for v in ordered if v <= p95)


def axis_top(values: list[float]) -> float:
    """The top of a time axis that a few far outliers should not flatten: the median
    plus four times the IQR (at least 10% of the median), or the slowest call if lower."""
    ordered = sorted(values)
    median = stats.percentile(ordered, 50)
    spread = max(stats.percentile(ordered, 75) - stats.percentile(ordered, 25), 0.1 * median)
    return min(ordered[-1], median + 4 * spread)


def shown_high(values: list[float]) -> float:
    """The slowest call a distribution shows: its whisker, or its slowest call within
    axis_top (calls beyond are cut off and counted)."""
    top = axis_top(values)
    return max(whisker_high(values), max(v for v in values if v <= top))


def distributions(ax, labels: list[str], times: list[list[float]], colors: list[str], unit: str = "call"):
    """One horizontal box per variant, the first at the top; returns the axis that holds
    the medians (a column right of the boxes, one per row).

    The medians are written outside the axes, so no whisker cap or flier can run over
    them and the axis needs no room for text: it ends at the slowest call shown. Calls
    beyond a variant's axis_top are cut off: counted in its median's line and marked by
    an arrow at the right edge."""
    positions = list(range(len(times), 0, -1))
    parts = ax.boxplot(times, orientation="horizontal", positions=positions, whis=(5, 95), widths=0.6,
                       patch_artist=True, tick_labels=labels, manage_ticks=True,
                       flierprops={"marker": ".", "markersize": 3, "alpha": 0.5},
                       medianprops={"color": "black", "linewidth": 1.5})
    for box, color in zip(parts["boxes"], colors):
        box.set_facecolor(color)
        box.set_alpha(0.55)
    low = min(min(t) for t in times)
    high = max(shown_high(t) for t in times)
    _time_axis(ax.xaxis, low, high)
    left, right = _margins(ax, low, high)
    ax.set_xlim(left, right)
    notes = []
    for y, values in zip(positions, times):
        ordered = sorted(values)
        beyond = sum(1 for v in ordered if v > right)
        note = f"{seconds_text(stats.percentile(ordered, 50))}  (n={len(values)}"
        notes.append(note + (f", {beyond} off the axis)" if beyond else ")"))
        if beyond:
            ax.plot([0.988], [y], marker=">", markersize=5, color="black", linestyle="none",
                    transform=ax.get_yaxis_transform(), clip_on=False)
    medians = ax.secondary_yaxis("right")
    medians.set_yticks(positions, notes)
    medians.tick_params(axis="y", length=0, labelsize=8)
    ax.set_xlabel(f"time per {unit} (timed {unit}s; warm-up and profiled left out)")
    ax.set_title("distribution per variant: box 25-75%, whiskers 5-95%; median at the right", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3, which="both")
    ax.tick_params(axis="y", labelsize=8)
    return medians


def _margins(ax, low: float, high: float) -> tuple[float, float]:
    """x limits from the data with a little space either side (the labels are outside)."""
    if ax.get_xscale() == "log":
        return low / 1.08, high * 1.08
    pad = (high - low) * 0.03 or high * 0.05
    return max(0.0, low - pad), high + pad


def wrapped(title: str, width: int) -> list[str]:
    """A panel title's lines of at most `width` characters, broken at spaces only (a
    variant's name stays whole)."""
    return textwrap.wrap(title, width, break_long_words=False, break_on_hyphens=False) or [title]


def series(ax, title: str, steps: list[dict], first_warmup: float | None, xlabel: bool = True,
           title_width: int = 60, unit: str = "call") -> list[str]:
    """Phases stacked per timed call; returns the layer names drawn (for the legend).
    `xlabel`: name the x axis (the figure names it under the lowest panel of a column);
    `title_width`: the characters a title line may take before it wraps (at spaces only:
    two runs' long labels side by side ran into each other)."""
    from matplotlib.ticker import MaxNLocator

    n = len(steps)
    xs = list(range(1, n + 1))
    names = [p for p in PHASE_ORDER if any(p in s.get("phases", {}) for s in steps)]
    layers = [[s.get("phases", {}).get(p, 0.0) for s in steps] for p in names]
    other = [max(0.0, s["seconds"] - sum(s.get("phases", {}).values())) for s in steps]
    if any(other):
        names.append("other")
        layers.append(other)
    kwargs = {}
    if n <= 60:   # one bar a call, call k from k - 0.5 to k + 0.5 (the first and last whole too)
        xs = [k - 0.5 for k in xs] + [n + 0.5]
        layers = [layer + layer[-1:] for layer in layers]
        kwargs = {"step": "post"}
    ax.stackplot(xs, *layers, colors=[PHASE_COLORS.get(p, "tab:gray") for p in names], alpha=0.85,
                 linewidth=0, **kwargs)
    ordered = sorted(s["seconds"] for s in steps)
    median = stats.percentile(ordered, 50)
    ax.axhline(median, color="black", linewidth=0.8, linestyle="--")
    top = axis_top(ordered)
    cut = sum(1 for v in ordered if v > top)
    ax.set_ylim(0, top * 1.08)
    ax.set_xlim(0.5, n + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # calls are counted: no call 1.5
    ax.yaxis.set_major_formatter(time_formatter())
    ax.tick_params(labelsize=7)
    notes = [f"median {seconds_text(median)}"]
    if first_warmup is not None:
        notes.append(f"warm-up {seconds_text(first_warmup)}")
    ax.set_title("\n".join(wrapped(title, title_width) + [", ".join(notes)]), fontsize=8)
    if cut:
        ax.text(0.99, 0.97, f"{cut} off the top", transform=ax.transAxes, ha="right", va="top", fontsize=7,
                bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})
    ax.grid(True, axis="y", alpha=0.3)
    _round_marks(ax, steps)
    if xlabel:
        ax.set_xlabel(f"timed {unit}", fontsize=8)
    return names


def _round_marks(ax, steps: list[dict]) -> None:
    """A run in rounds: a dotted line where each round begins, labelled r2, r3 ... (the
    calls between two lines ran back to back; the other variants ran at the lines)."""
    previous = None
    for k, step in enumerate(steps, 1):
        number = step.get("round")
        if number is not None and previous is not None and number != previous:
            ax.axvline(k - 0.5, color="black", linewidth=0.6, linestyle=":", alpha=0.7)
            ax.text(k - 0.5, 1.0, f" r{number}", transform=ax.get_xaxis_transform(), fontsize=6,
                    va="top", ha="left", color="dimgray")
        previous = number if number is not None else previous


def round_ratios(ax, lines: list[dict], baseline: str) -> None:
    """A run in rounds: each variant's ratio to the baseline round by round (markers), its
    paired ratio (dashed) and 95% interval (band); a round where both variants met the same
    drift has the same ratio as a quiet one, which is why the pairs are taken per round.
    With 5 rounds or fewer the interval is the rounds' range (paired.range_only), and the
    title says so rather than 95%.
    lines: {label, color, rounds, ratios, ratio, low, high, range_only}."""
    from matplotlib.ticker import MaxNLocator

    for line in lines:
        ax.plot(line["rounds"], line["ratios"], marker="o", markersize=4, linewidth=0.8,
                color=line["color"], label=line["label"])
        if line.get("ratio") is not None:
            ax.axhline(line["ratio"], color=line["color"], linewidth=0.8, linestyle="--")
        if line.get("low") is not None and line.get("high") is not None:
            ax.axhspan(line["low"], line["high"], color=line["color"], alpha=0.12, linewidth=0)
    ax.axhline(1.0, color="black", linewidth=0.6, alpha=0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    banded = [line for line in lines if line.get("low") is not None]
    band = ("the rounds' range: too few rounds for a 95% interval"
            if banded and all(line.get("range_only") for line in banded) else
            "its 95% interval, or the rounds' range with 5 rounds or fewer"
            if any(line.get("range_only") for line in banded) else "its 95% interval")
    ax.set_title(f"ratio to {baseline} per round (dashed: from same-round pairs; band: {band})", fontsize=9)
    ax.set_xlabel("round", fontsize=8)
    ax.set_ylabel("ratio", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best", frameon=False)


def losses(ax, lines: list[dict]) -> None:
    """lines: {label, color, steps, losses} per training variant: the loss after each step
    (warm-up steps first, then the timed ones), on a log axis; a loss that was not finite
    ends its line, marked with an x (the title explains the x only when one is drawn)."""
    import math

    drawn = crossed = False
    for line in lines:
        points = [(s, v) for s, v in zip(line["steps"], line["losses"]) if v is not None]
        finite = [(s, v) for s, v in points if math.isfinite(v) and v > 0]
        if not finite:
            continue
        xs, ys = zip(*finite)
        ax.plot(xs, ys, color=line["color"], linewidth=1.0, label=line["label"])
        bad = [s for s, v in points if not math.isfinite(v)]
        if bad:
            ax.plot([bad[0]], [ys[-1]], marker="x", color=line["color"], markersize=8)
            crossed = True
        drawn = True
    if drawn:
        ax.set_yscale("log")
        ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.set_title("loss per training step" + (" (x: the loss stopped being finite)" if crossed else ""), fontsize=9)
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel("loss", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)

