"""The compare view's ratios over several runs: each variant's median to the fastest of
the variants like it, the same model at the same size (the table holds one task).

Several runs are not paired by round, so their ratios are the medians'. Taken to the
fastest of every row they ranked unlike work: `#3 direct-torchscript-2 ... 1.32x` to a
variant at size 1, and `#1 stride-torchscript ... 325827.15x` to simplenet (the ninth
walk). A variant with nothing like it among the rows has no ratio: it reads `alone`,
as a variant of a run in rounds alone at its size does (compare_table.alone_at_size).
The names carry no size (a training run's `direct` at size 1 and at 2): where the rows'
sizes differ, the table shows each one's (`sizes_differ`).

A ratio between two variants of one run in rounds is its same-round pairs' whatever else
is compared: the variants like each other all from that run keep the ratios `c` on it
alone gives (own_pairs), marked `*`; medians only across runs. The eleventh walk's #1
read 3.18x and 2.94x alone, 3.15x and 3.29x beside a run at another size.
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt
from couplescope.results.labels import size_of


def like_key(variant) -> tuple:
    """What a variant's median may be compared with: its model and its size."""
    spec = variant.spec or {}
    return spec.get("model"), size_of({"spec": spec, "model": variant.model})


#: what a row takes from its run's own compare: its same-round pair with its baseline
PAIR_FIELDS = ("ratio", "baseline", "ratio_low", "ratio_high", "ratio_spread", "paired_rounds",
               "ratio_per_round", "rounds_disturbed", "cannot_rank")


def own_pairs(records, left_out=frozenset()) -> dict[str, dict]:
    """Each compared run in rounds' rows as `c` on it alone compares them (its same-round
    pairs, less the variants `left_out`), by "#run variant"."""
    from couplescope.frontends.tui.compare_variants import combined

    return {r["name"]: r for record in records if record.builder.rounds is not None
            for r in combined([record], left_out).comparison()}


def like_ratios(rows: list[dict], variants: dict, own: dict | None = None) -> set[str]:
    """Set each row's `ratio` to its median over the fastest median among the rows like it
    (like_key; `variants`: the builder's, by row name); a row of a run in rounds (one with
    a `baseline`) keeps its same-round ratio, as do rows like each other all of one run in
    rounds (`own`: own_pairs), marked `pairs`. Returns the rows with nothing like them."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if "baseline" not in r:
            groups.setdefault(like_key(variants[r["name"]]), []).append(r)
    alone = set()
    for members in groups.values():
        if len(members) > 1 and paired_alike(members, own or {}):
            for r in members:
                r.update({k: own[r["name"]].get(k) for k in PAIR_FIELDS}, pairs=True)
            continue
        fastest = min(r["median"] for r in members)
        for r in members:
            r["ratio"] = r["median"] / fastest if fastest else None
        if len(members) == 1:
            alone.add(members[0]["name"])
    return alone


def paired_alike(members: list[dict], own: dict) -> bool:
    """Whether rows like each other are all of one run in rounds, each paired in its own
    compare with a baseline among them."""
    names = {r["name"] for r in members}
    return (len({n.split(" ", 1)[0] for n in names}) == 1 and names <= set(own)
            and all(own[n].get("baseline") in names for n in names))


def sizes_differ(names: list[str], variants: dict) -> bool:
    """Whether the compared variants ran at more than one size (the table then shows each
    one's: `#2 direct` at size 2 read as `#1 direct` at 1)."""
    return len({size_of({"spec": variants[n].spec or {}, "model": variants[n].model})
                for n in names if n in variants}) > 1


def size_cell(variant) -> str:
    """A variant's size, as the size column shows it ("" when it reported none), its
    digits grouped as Pick and History write it (`1 024`: it read `1024` here)."""
    return size_text(like_key(variant)[1] if variant is not None else None)


def size_text(size) -> str:
    """A size as the size column writes it: "" for none, digits grouped (`1 024`)."""
    return "" if size is None else fmt.thousands(size) if isinstance(size, int) else str(size)


def row_size(name: str, builder, records) -> str:
    """A compare row's size ("#run variant"), made calls or not: its variant's in `builder`,
    else its run's (`records`) spec of it (the twelfth walk: `bridge-2  2  no steps` beside
    `direct-1      no steps`, a variant stopped before its worker started having no spec)."""
    tag, _, label = name.partition(" ")
    record = next((r for r in records if f"#{r.id}" == tag), None)
    variant = builder.variants.get(name) or (record.builder.variants.get(label) if record else None)
    if variant is not None and variant.spec:
        return size_cell(variant)
    return size_text((record.spec_of(label) if record else {}).get("size"))


def like_lines(rows: list[dict], alone: set[str], box: dict) -> list[str]:
    """Under a several-run table: what its ratios are, and which boxes have none."""
    lines = []
    medians = [r for r in rows if not r.get("pairs")]
    if len(medians) > len(alone):
        lines.append("ratios: of the medians, each to the fastest of its model and size")
    bases = sorted({box[r["baseline"]] for r in rows if r.get("pairs") and r["baseline"] in box})
    if bases:
        to = f"box {bases[0]}" if len(bases) == 1 else f"its run's box {', '.join(map(str, bases))}"
        lines.append(f"ratios*: from same-round pairs in one run, to {to}")
    if alone:
        which = sorted(box[n] for n in alone if n in box)
        boxes = f"box {which[0]} has" if len(which) == 1 else f"boxes {', '.join(map(str, which))} have"
        lines.append(f"alone: {boxes} no other variant of its model and size, no ratio")
    return lines


def ratio_cell(row: dict, alone: set[str] = frozenset()) -> str:
    """The ratio, or "cannot rank" where a run in rounds had too few undisturbed rounds, or
    "alone" where a variant of a run in rounds is the only one measured at its size
    (compare_table.alone_at_size: its 1.00x was to itself)."""
    if row["name"] in alone:
        return "alone"
    # `*`: its run's same-round pair beside other runs' medians (like_ratios.own_pairs)
    return "cannot rank" if row.get("cannot_rank") else fmt.ratio(row["ratio"]) + ("*" if row.get("pairs") else "")
