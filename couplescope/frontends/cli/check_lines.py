"""Which of a variant's check lines the headless output prints: the first few, every
failure, and a count of the rest.

A line per timed check made a 10 000-step training run print 10 028 lines, and a preset
of four such variants 40 112 (issue 30): the lines after the first few repeat PASSED
and say nothing a count does not. So a variant prints its first FIRST checks that
passed, every check that failed (with its message), and at its end one line counting
the passed checks it did not print ("9 995 more steps PASSED"); each rank of a job
whose ranks print their own lines (up to 8, as FTorch's MPI example) shows its first
FIRST, and a job of more ranks its first FIRST steps. `--verbose` prints every line, `--quiet` only the failures (and no count). Every check is still made and
kept: results.json and events.jsonl hold them all.

The work per check stays a dictionary look-up and an addition: a batch of calls that all
passed, once a variant's first lines are out, is counted by its length without looking
at its calls (the parent's cost stays proportional to what is shown).
"""

from __future__ import annotations

from couplescope.frontends.formatting import thousands

#: how many passed checks a variant prints before the rest are only counted
FIRST = 5


class CheckLines:
    """Per variant: how many passed checks were printed and how many only counted."""

    def __init__(self, verbose: bool = False, quiet: bool = False) -> None:
        self.verbose = verbose
        self.quiet = quiet
        self.first = 0 if quiet else FIRST
        self._shown: dict[tuple, int] = {}    # (variant, rank) -> passed lines printed
        self._counted: dict[str, int] = {}    # variant -> passed lines not printed

    def count_batch(self, variant: str, count: int, rank: int | None = None) -> bool:
        """`count` checks (of one rank) that all passed: True when none of their lines is
        to print (they are counted); False when the caller must go through them one by one."""
        if self.verbose or self._shown.get((variant, rank), 0) < self.first:
            return False
        self._counted[variant] = self._counted.get(variant, 0) + count
        return True

    def shows(self, variant: str, passed: bool, rank: int | None = None) -> bool:
        """Whether one check's line prints; a passed one that does not is counted."""
        if self.verbose or not passed:
            return True
        shown = self._shown.get((variant, rank), 0)
        if shown < self.first:
            self._shown[(variant, rank)] = shown + 1
            return True
        self._counted[variant] = self._counted.get(variant, 0) + 1
        return False

    def rest_line(self, variant: str, unit: str) -> str | None:
        """The count of the variant's passed checks that were not printed ("9 995 more
        steps PASSED (--verbose prints every one)"), once; None when there are none or
        under --quiet."""
        counted = self._counted.pop(variant, 0)
        if not counted or self.quiet:
            return None
        unit = unit.removesuffix("s") if counted == 1 else unit
        return f"{thousands(counted)} more {unit} PASSED (--verbose prints every one)"
