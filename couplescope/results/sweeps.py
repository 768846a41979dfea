"""Variants that differ only in size form a sweep: one series per everything-else.

`couplescope --size 256,512,1024`, a preset with `sizes`, or several saved runs at
different sizes all give variants whose specs agree on every field but the size (and
the fields that only say how long to measure). Grouping them lets the comparison table
rank variants within one size (a ratio to a faster variant at another size means
nothing) and lets plots draw median against size. Pure functions of results-document
variants (or anything with `spec` and `model`).
"""

from __future__ import annotations

from couplescope.protocol.options import SPEC_OPTIONS
from couplescope.results import stats
from couplescope.results.labels import size_of


def series_key(variant: dict, environment: dict | None = None) -> tuple:
    """What a variant is apart from its size (and the torch it ran with): the value of
    every spec option declared to split a series (`Option.series`,
    couplescope/protocol/options.py), an option its spec does not hold read at its
    declared default. A results document written before an option existed (no key) and
    one written after it (the default) are then the same series, and adding an option
    splits nothing; a spec key no declaration names (an option since removed) says
    nothing this version can weigh, and is left out."""
    spec = variant.get("spec") or {}
    fields = tuple((o.name, repr(_plain(spec.get(o.name, o.default)))) for o in SPEC_OPTIONS if o.series)
    return fields + (("torch", (environment or {}).get("torch")),)


def _plain(value):
    """A value as results.json holds it (a tuple read back from JSON is a list)."""
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def is_sweep(variants: list[dict]) -> bool:
    """More than one size among the variants."""
    return len({size_of(v) for v in variants if size_of(v) is not None}) > 1


def series(variants: list[dict], environments: list[dict] | None = None,
           runs: list | None = None) -> list[list[int]]:
    """Indices of `variants` grouped into series (first-seen order), each sorted by size;
    only series with at least two sizes. `environments[i]` is variant i's run environment;
    `runs[i]` names its run: a series is one run's variant, as the app's compare draws it
    (couplescope.frontends.tui.compare_sweep): runs at other sizes are not joined into one
    line (a run's size-1 point joined to another run's size-2 point was no sweep)."""
    groups: dict[tuple, list[int]] = {}
    for i, v in enumerate(variants):
        if size_of(v) is None:
            continue
        env = environments[i] if environments else None
        run = runs[i] if runs is not None else None
        groups.setdefault((run, series_key(v, env)), []).append(i)
    return [sorted(members, key=lambda i: size_of(variants[i])) for members in groups.values()
            if len({size_of(variants[i]) for i in members}) > 1]


def series_name(variants: list[dict]) -> str:
    """A series by its variants' names, less the size: "bridge-python-250",
    "bridge-python-500" -> "bridge-python" (the names the tables show). Names that differ
    in more than the size are listed."""
    names: list[str] = []
    for v in variants:
        tokens = str(v.get("name", "?")).split("-")
        size = str(size_of(v))
        if size in tokens:
            del tokens[len(tokens) - 1 - tokens[::-1].index(size)]
        if "-".join(tokens) not in names:
            names.append("-".join(tokens))
    return ", ".join(names)


def band(times: list[float]) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile) of a variant's timed calls."""
    ordered = sorted(times)
    return stats.percentile(ordered, 25), stats.percentile(ordered, 50), stats.percentile(ordered, 75)


def rows_by_size(rows: list[dict], sizes: dict[str, int | None]) -> list[tuple[int | None, list[dict]]]:
    """Comparison rows grouped by size (ascending, in first-seen order within a size),
    with `ratio` taken to the fastest median of the same size; a run in rounds keeps its
    rows' own ratios, paired with a baseline of their size (ResultsBuilder.comparison)."""
    groups: dict[int | None, list[dict]] = {}
    for r in rows:
        groups.setdefault(sizes.get(r["name"]), []).append(r)
    out = []
    for size in sorted(groups, key=lambda s: (s is None, s or 0)):
        fastest = min(r["median"] for r in groups[size])
        out.append((size, [r if "baseline" in r else {**r, "ratio": r["median"] / fastest if fastest else None}
                           for r in groups[size]]))
    return out
