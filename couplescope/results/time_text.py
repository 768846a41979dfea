"""How every figure of couplescope writes a time: the app, the printer and the pictures.

One rule, so that a time reads alike wherever it is shown: at most four significant
figures, as many decimals as the unit's range gives (trailing zeros kept), in the unit the
value calls for. The Watch view wrote `max 116.17 ms` (five figures) beside `max 11.30
ms`, and summary.png `474 µs` (matplotlib's `.4g` drops the zero) beside `473.3 µs`.
"""

from __future__ import annotations

import math

#: (the unit, its seconds, the decimals it is written with at most), largest first
UNITS = (("s", 1.0, 3), ("ms", 1e-3, 2), ("µs", 1e-6, 1), ("ns", 1e-9, 0))
#: the significant figures a time is written with at most
FIGURES = 4


def seconds(value) -> str:
    """2.023 s, 12.35 ms, 116.2 ms, 41.2 µs, 512 ns: three to four significant figures."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    v = float(value)
    unit, scale, most = next((u for u in UNITS if v >= u[1]), UNITS[-1])
    scaled = v / scale
    text = next(t for t in (f"{scaled:.{d}f}" for d in range(most, -1, -1))   # 116.2 ms, not 116.17 ms
                if len(t.replace(".", "").lstrip("0")) <= FIGURES or "." not in t)
    if float(text) >= 1000 and unit != "s":   # 999.96 µs rounds to 1.00 ms, not 1000.0 µs
        return seconds(1000 * scale)
    return f"{text} {unit}"
