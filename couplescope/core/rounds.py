"""Interleaved rounds: which variant measures when, so that a shared machine's drift lands
on every variant alike (--rounds; docs/shared-node.md).

A run of two or more variants is measured in K rounds. In each round every variant makes
its share of its timed iterations, in an order shuffled afresh per round (Google
Benchmark's random interleaving), from a seed that is recorded so that the order can be
repeated (`--order-seed`). A variant's worker is started once, warms up once and keeps
its model loaded between rounds (the session paces it: couplescope.core.session); the
statistics pair each variant's round with the baseline's same round
(couplescope.results.paired).

Pure functions of the variants and the options: no processes, no torch.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

from couplescope.protocol.errors import UsageError
from couplescope.protocol.options import DEFAULT_ROUNDS


@dataclass(frozen=True)
class RoundPlan:
    """The rounds of one run: how many, the seed, each round's order (variant names) and
    each variant's timed iterations per round."""

    rounds: int
    seed: int
    orders: tuple[tuple[str, ...], ...]
    shares: dict
    baseline: str | None = None

    def share(self, name: str, round_number: int) -> int:
        """Timed iterations of `name` in round `round_number` (1-based)."""
        return self.shares[name][round_number - 1]


def shares_of(iterations: int, rounds: int) -> tuple[int, ...]:
    """`iterations` split into `rounds` nearly equal parts, the larger ones first:
    10 in 4 rounds -> (3, 3, 2, 2)."""
    base, extra = divmod(iterations, rounds)
    return tuple(base + (1 if r < extra else 0) for r in range(rounds))


#: calls a round makes at the least when the rounds are chosen for the user: the first call
#: of a round pays for the caches the other variants emptied (measured: StrideNet 64 on the
#: native host, 20 ms for the first call of a round against 12.5 ms), and a round's median
#: of three calls leaves it out where one of two would not
MIN_SHARE = 3


def resolve(asked: int | None, specs) -> int:
    """The rounds a run is measured in: the user's (refused when a variant has fewer timed
    iterations than rounds), else DEFAULT_ROUNDS for a comparison of two or more variants,
    fewer when the variants' iterations would give a round less than MIN_SHARE calls; 1
    for a single variant."""
    fewest = min((s.iterations for s in specs), default=1)
    if asked is None:
        return max(1, min(DEFAULT_ROUNDS, fewest // MIN_SHARE)) if len(specs) > 1 else 1
    if asked > fewest:
        short = next(s for s in specs if s.iterations == fewest)
        raise UsageError(f"--rounds {asked}: every round measures at least one timed iteration of "
                         f"each variant, and {short.label} makes {fewest}; use --rounds {fewest} or "
                         "fewer, or more --iterations")
    return asked


def new_seed() -> int:
    return secrets.randbelow(2 ** 31)


def plan(specs, rounds: int | None, seed: int | None = None, baseline: str | None = None,
         orders=None) -> RoundPlan | None:
    """The plan of a run in `rounds` rounds (None for one round: each variant runs to its end
    in turn). `orders` replays a recorded run's own orders instead of shuffling again."""
    if not rounds or rounds <= 1:
        return None
    names = [s.label for s in specs]
    seed = new_seed() if seed is None else int(seed)
    if orders is None:
        rng = random.Random(seed)
        orders = []
        for _ in range(rounds):
            order = list(names)
            rng.shuffle(order)
            orders.append(tuple(order))
    shares = {s.label: shares_of(s.iterations, rounds) for s in specs}
    return RoundPlan(rounds=rounds, seed=seed, orders=tuple(tuple(o) for o in orders), shares=shares,
                     baseline=baseline)


def check_baseline(baseline: str | None, specs, rounds: int | None = None, asked: int | None = None) -> None:
    """--baseline must name a variant of the run (its name as the table shows it), and a
    comparison must be in rounds (`rounds`, as resolve decided it; `asked`, the user's):
    the baseline is what same-round pairs are taken against, and a run in one round ranks
    its variants against the fastest, so a baseline there would be silently ignored."""
    if baseline is None:
        return
    names = [s.label for s in specs]
    if baseline not in names:
        raise UsageError(f"--baseline {baseline} is not a variant of this run; its variants: "
                         f"{', '.join(names)}")
    if rounds == 1 and len(specs) > 1:
        fewest = min(s.iterations for s in specs)
        why = "--rounds 1" if asked == 1 else f"{fewest} iterations give fewer than {MIN_SHARE} calls a round"
        raise UsageError(f"--baseline {baseline} needs a run in rounds (its ratios come from same-round "
                         f"pairs), and this one is in one round ({why}), which ranks against the fastest: "
                         "give --rounds 2 or more, or leave out --baseline")
