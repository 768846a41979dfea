"""What the fourteenth walk-through of the app by a new user found in the Watch view (at
80x24, on a loaded two-core machine), each on the real app driven by Pilot: the statistics
break a line only where its words do not fit (4).

Runs are recorded or synthetic ones played back (couplescope.core.replay, synthetic): no
worker process."""

from __future__ import annotations

import pytest

from couplescope.core import replay, synthetic
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.protocol.spec import RunSpec
from test_tui_first_use import text
from test_tui_replay import run_replay, until

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def spec(**given) -> RunSpec:
    given = {"model": "simplenet", "warmup": 1, "iterations": 3, "profile_iterations": 0, **given}
    return RunSpec(**given)


def played(made: RunSpec) -> replay.Recording:
    return replay.Recording(synthetic.events_for(made), "simplenet")


# -- 4. the statistics break a line only where it does not fit ------------------------------------

@pytest.mark.parametrize("width", [80, 60])
async def test_the_statistics_keep_n_beside_the_figures_where_they_fit(width):
    """`median 4.5 µs  IQR 190 ns  min 4.3 µs  max 6.14 ms` (50 columns) then `n=3 000
    timed` on a row of its own at 80 columns, where the two took 65: the break was decided
    for the widest figures a run could have (`999.9 µs` four times and `noisy`), not for
    the words shown. At 60 columns they do not fit, and break."""
    app = CoupleScopeApp(load_catalogue=False, recording=played(spec(iterations=3000)))
    async with app.run_test(size=(width, 24)) as pilot:
        await run_replay(pilot)
        await until(pilot, lambda: "n=3 000 timed" in text(app, "#stats"), text(app, "#stats"))
        lines = text(app, "#stats").splitlines()
        room = app.main.query_one("#stats").content_size.width
        at = next(i for i, line in enumerate(lines) if line.startswith("median"))
        figures = lines[at].split("  n=")[0]
        assert all(len(line) <= room for line in lines), (room, lines)
        if len(f"{figures}  n=3 000 timed") <= room:
            assert lines[at] == f"{figures}  n=3 000 timed", (room, lines)
        else:
            assert lines[at] == figures and lines[at + 1] == "n=3 000 timed", (room, lines)
        assert width == 60 or lines[at].endswith("n=3 000 timed"), lines   # the walk's width: it fits
