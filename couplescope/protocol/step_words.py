"""How a training variant's steps are counted in words, one way for the worker's
results.json message, the command line and the app.

Every step a training variant makes trains its model: the warm-up, the timed and the
profiled ones (each is a train call: data filled, loss, backward, the optimizer's step),
and the learning task's check counts all of them. The eighth walk read three counts for
one run: `34/34 steps = 30 timed + 1 warm-up + 3 profiled`, a loss line of `30 timed steps
+ 1 warm-up`, and `34 of the ~10 000 steps it needs` beside advice in timed iterations.
Stdlib only (the worker and the front ends import it).
"""

from __future__ import annotations

#: a training variant's verdict word when its checks passed and its learning task was not
#: judged (too few steps): PASSED read as "it learned" (History, compare, the CLI's table)
NOT_JUDGED = "not judged"

#: the kinds of step, in the order a variant makes them, and how they are named
KINDS = (("timed", "timed"), ("warmup", "warm-up"), ("profiled", "profiled"))


def grouped(n: int) -> str:
    """10000 -> "10 000": digits grouped by a space, as the SI writes them."""
    return f"{n:,}".replace(",", " ")


def by_kind(made: dict[str, int]) -> str:
    """"30 timed + 1 warm-up + 3 profiled": the kinds made (timed always)."""
    return " + ".join(f"{grouped(made.get(kind, 0))} {word}" for kind, word in KINDS
                      if kind == "timed" or made.get(kind))


def not_judged(made: dict[str, int], needed: int) -> str:
    """`not judged: 34 of the ~10 000 steps it needs (30 timed + 1 warm-up + 3 profiled:
    all train the model)`; each front end adds its own way to give it more (the command
    line's `--iterations 10000`, the app's iterations field)."""
    return (f"not judged: {grouped(sum(made.values()))} of the ~{grouped(needed)} steps it needs "
            f"({by_kind(made)}: all train the model)")
