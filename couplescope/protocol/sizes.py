"""Amounts of memory as people write them: 512M, 16G, 1.5T (binary units), or none.

Shared by the command line (which checks --memory-limit before anything runs) and the
worker (which compares its estimate with it): stdlib only.
"""

from __future__ import annotations

import math
import re

from couplescope.protocol.errors import UsageError

UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
NO_LIMIT = ("none", "off", "unlimited")


def parse_bytes(text: str) -> int | None:
    """"16G" -> 17179869184; "none" -> None. Raises UsageError naming the valid forms."""
    value = str(text).strip()
    if value.lower() in NO_LIMIT:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", value, re.IGNORECASE)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"memory size '{text}' is not one: give a number with K, M, G or T "
                         "(binary units, e.g. 512M, 16G) or none")
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])


def bytes_text(value: float, round_up: bool = False) -> str:
    """17179869184 -> "16.0G" (the form parse_bytes reads); round_up for a limit to suggest."""
    for unit in ("T", "G", "M", "K"):
        if value >= UNITS[unit]:
            amount = value / UNITS[unit]
            if round_up:
                return f"{math.ceil(amount)}{unit}"
            return f"{amount:.1f}{unit}"
    return f"{math.ceil(value)}" if round_up else f"{value:.0f}"
