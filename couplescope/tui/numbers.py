"""How the app writes numbers: couplescope.format, or a fixed mask in redacted mode.

Redacted mode (`CoupleScopeApp(redact=True)`) replaces every measured number (times,
errors, percentages, telemetry) with a mask of the same shape. The screen keeps its
layout, labels, PASSED/FAILED words and counts, so screenshots and snapshot tests can
compare it exactly while the machine's timings vary from run to run.
"""

from __future__ import annotations

from couplescope import format as fmt

MASK = "##.# µs"


class Numbers:
    def __init__(self, redact: bool = False) -> None:
        self.redact = redact

    def seconds(self, value) -> str:
        if value is None:
            return "n/a"
        return MASK if self.redact else fmt.seconds(value)

    def sci(self, value) -> str:
        if value is None:
            return "n/a"
        return "#.####E+##" if self.redact else fmt.sci(value)

    def ratio(self, value) -> str:
        if value is None:
            return "n/a"
        return "#.##x" if self.redact else fmt.ratio(value)

    def measured(self, text: str) -> str:
        """Any other measured quantity already written as text (telemetry, durations)."""
        return "##" if self.redact and text != "n/a" else text
