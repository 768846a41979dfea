"""The compare view's ratios over several runs: each variant's median to the fastest of
the variants like it, the same model at the same size (the table holds one task).

Several runs are not paired by round, so their ratios are the medians'. Taken to the
fastest of every row they ranked unlike work: `#3 direct-torchscript-2 ... 1.32x` to a
variant at size 1, and `#1 stride-torchscript ... 325827.15x` to simplenet (the ninth
walk). A variant with nothing like it among the rows has no ratio: it reads `alone`,
as a variant of a run in rounds alone at its size does (compare_table.alone_at_size).
The names carry no size (a training run's `direct` at size 1 and at 2): where the rows'
sizes differ, the table shows each one's (`sizes_differ`).
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt
from couplescope.results.labels import size_of


def like_key(variant) -> tuple:
    """What a variant's median may be compared with: its model and its size."""
    spec = variant.spec or {}
    return spec.get("model"), size_of({"spec": spec, "model": variant.model})


def like_ratios(rows: list[dict], variants: dict) -> set[str]:
    """Set each row's `ratio` to its median over the fastest median among the rows like it
    (like_key; `variants`: the builder's, by row name); a row of a run in rounds (one with
    a `baseline`) keeps its same-round ratio. Returns the rows with nothing like them."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if "baseline" not in r:
            groups.setdefault(like_key(variants[r["name"]]), []).append(r)
    alone = set()
    for members in groups.values():
        fastest = min(r["median"] for r in members)
        for r in members:
            r["ratio"] = r["median"] / fastest if fastest else None
        if len(members) == 1:
            alone.add(members[0]["name"])
    return alone


def sizes_differ(names: list[str], variants: dict) -> bool:
    """Whether the compared variants ran at more than one size (the table then shows each
    one's: `#2 direct` at size 2 read as `#1 direct` at 1)."""
    return len({size_of({"spec": variants[n].spec or {}, "model": variants[n].model})
                for n in names if n in variants}) > 1


def size_cell(variant) -> str:
    """A variant's size, as the size column shows it ("" when it reported none), its
    digits grouped as Pick and History write it (`1 024`: it read `1024` here)."""
    size = like_key(variant)[1] if variant is not None else None
    return "" if size is None else fmt.thousands(size) if isinstance(size, int) else str(size)


def like_lines(rows: list[dict], alone: set[str], box: dict) -> list[str]:
    """Under a several-run table: what its ratios are, and which boxes have none."""
    lines = []
    if len(rows) > len(alone):
        lines.append("ratios: of the medians, each to the fastest of its model and size")
    if alone:
        which = sorted(box[n] for n in alone if n in box)
        boxes = f"box {which[0]} has" if len(which) == 1 else f"boxes {', '.join(map(str, which))} have"
        lines.append(f"alone: {boxes} no other variant of its model and size, no ratio")
    return lines
