"""Which variants a compare holds: every variant of the compared runs, named "#run
variant", in one ResultsBuilder (combined), those a stop left without an event included
(named), and each one's task (tasks): the compare screen shows one task at a time, first
the latest that made a call or step (latest_task).
"""

from __future__ import annotations

from couplescope.frontends.tui.compare_table import task_of
from couplescope.results.builder import ResultsBuilder


def combined(records, left_out=frozenset()) -> ResultsBuilder:
    """One builder holding every variant of `records` as "#run variant", minus `left_out`,
    in one order: each run's own (the Run line's: a run in rounds meets its variants in
    a shuffled order), run after run. One run in rounds keeps its rounds, so its ratios
    are its same-round pairs, leaving out the disturbed rounds as the headless table does
    (couplescope.results.paired); several runs are not paired (round 2 of one run and
    round 2 of another ran at different times): their ratios are the medians' ratios to
    the fastest."""
    builder = ResultsBuilder("compare")
    several = len(records) > 1
    for record in records:
        tag = f"#{record.id} "
        for ev in record.events:
            if ev.get("event") == "rounds_planned":
                if several:
                    continue
                ev = tagged_plan(ev, tag)
            if ev.get("variant"):
                name = tag + ev["variant"]
                if name in left_out:
                    continue
                ev = {**ev, "variant": name}
            builder.on_event(ev)
    builder.put_in_order([f"#{r.id} {name}" for r in records for name in run_line_order(r)])
    return builder


def run_line_order(record) -> list[str]:
    """A run's variants in its Run line's order: its plan's (a run in rounds), its
    request's, then any other it met. A stopped run's builder held only the variants
    that had begun, in the order they began (round 1's shuffled one), and the rest came
    after them: `direct-torchscript-2, bridge-torchscript-1, ..., direct-torchscript-1`."""
    return list(dict.fromkeys([*record.builder.order, *(s.label for s in record.specs),
                               *(v.name for v in record.builder.in_order())]))


def named(records, variants: dict) -> list[str]:
    """Every variant of the compared runs as "#run variant", run after run, each run's in
    its Run line's order: those that made events (`variants`, combined()'s) and those a
    stop left without any (a run stopped in its first round listed one of its unstarted
    variants as `no steps`, another run's not at all; and after the ones that had begun)."""
    names = []
    for record in records:
        tag = f"#{record.id} "
        names += [tag + label for label in run_line_order(record)]
        names += [n for n in variants if n.startswith(tag) and n not in names]
    return names


def tasks(records, names: list[str], variants: dict) -> dict[str, str]:
    """Each of `names`' task ("#run variant" -> infer or train): its worker's spec's, else
    its run's spec of it (a variant a stop left unstarted has no worker's spec: a stopped
    training run's was put under inference)."""
    by_tag = {f"#{r.id}": r for r in records}
    found = {}
    for name in names:
        tag, _, variant = name.partition(" ")
        record, v = by_tag.get(tag), variants.get(name)
        found[name] = (task_of(v) if v is not None and (v.spec or record is None)
                       else (record.spec_of(variant).get("task") if record else None) or "infer")
    return found


def tagged_plan(plan: dict, tag: str) -> dict:
    """A run's `rounds_planned` with its variants named as the compare builder names them
    ("#1 direct"): untagged, its --baseline named no variant of the builder (the fastest
    was taken instead) and its order none (the first round's shuffled one was kept)."""
    return {**plan, "variants": [tag + n for n in plan.get("variants") or []],
            "orders": [[tag + n for n in order] for order in plan.get("orders") or []],
            **({"baseline": tag + plan["baseline"]} if plan.get("baseline") else {})}


def latest_task(found: dict[str, str], variants: dict) -> str:
    """The task compare opens on: that of the latest run's variants that made a call or
    step, else the latest run's (an inference run, then a training run stopped before its
    first step: compare opened on a table of nothing, the run that measured not compared)."""
    made = [n for n in found if n in variants and variants[n].calls.count]
    return next((found[n] for n in reversed(made or list(found))), "infer")
