"""What the fifteenth walk-through of the app by a new user found (at 80x24 in tmux, on a
loaded 2-core machine) and this file holds: Watch's plot hid the timed calls' maximum that
its statistics gave (`max 3.85 ms` beside a scale topped at 49.6 µs, the warm-up and
profiled marks given their values above the scale, the timed line none) (M7).

The app is the real one driven by Pilot over recorded real runs played back (tests/fixtures)."""

from __future__ import annotations

import re

from test_tui_eighth_walk_watch import watched, y_labels


async def test_a_timed_call_above_the_scale_gives_its_value_in_the_legend_as_the_statistics_max():
    """simplenet-train at 40 steps: one timed step of 6.33 ms over a median of 120.4 µs; the
    scale is topped at 1.5x the 95th percentile, so the spike sits on its top edge."""
    plot, legend, _, stats = await watched("preset-train")
    most = re.search(r"max ([\d.]+ [mµ]?s)", stats).group(1)
    assert most == "6.33 ms", stats
    assert float(y_labels(plot)[0][0]) < 6330, y_labels(plot)   # (in µs) above the scale
    assert f"━ timed ↑{most}" in " ".join(legend.split()), legend


async def test_timed_calls_within_the_scale_have_no_arrow():
    _, legend, _, stats = await watched("two-backends")   # max 140.2 µs, within the scale
    assert "max 140.2 µs" in stats and "━ timed ↑" not in legend and "━ timed" in legend, legend


async def test_an_mpi_variant_s_checks_say_they_are_its_ranks():
    """simplenet-mpi: `616 checks passed` above `308/308 calls`, nothing saying two ranks
    each checked every call (M6). The recorded MPI run: 8 calls on 2 ranks."""
    _, _, _, stats = await watched("mpi")
    head, counts = stats.splitlines()[:2]
    assert head.endswith("16 checks passed on 2 ranks") and counts.startswith("8/8 calls"), stats

