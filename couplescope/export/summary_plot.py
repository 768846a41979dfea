"""summary.png beside results.json when a run is exported: the run at a glance.

Drawn once, after the last variant (matplotlib and the drawing cost a second or two,
which must not fall between variants or inside one). A picture that cannot be drawn
never costs the run: results.json is already on disk, the reason is kept in `error`
for the front end to print, and `couplescope --plot` can draw it later. An interrupted
run gets none: Ctrl-C (or a scheduler's SIGTERM) should end the command at once.
"""

from __future__ import annotations

from couplescope.protocol.errors import WriteError
from couplescope.protocol.listener import Listener


class SummaryPlot(Listener):
    """Writes summary.png into the exporter's run directory at the end of the session."""

    def __init__(self, exporter) -> None:
        self.exporter = exporter
        self.path: str | None = None
        self.error: str | None = None

    def session_done(self, builder) -> None:
        if self.exporter.path is None:
            return
        if any(v.status == "interrupted" for v in builder.variants.values()):
            self.error = "not drawn: the run was interrupted"
            return
        if not any(v.calls.of_kind("timed") for v in builder.variants.values()):
            return
        from couplescope.export import plots

        try:
            self.path = plots.write_summary(self.exporter.path, builder.document())
        except WriteError as exc:   # a full disk: the run directory lacks it (no part of it is left)
            self.error = f"not written: {exc}"
            self.exporter.lost(plots.SUMMARY_FILE, str(exc).rsplit(": ", 1)[-1])
        except Exception as exc:   # a picture must never cost the results
            self.error = f"not drawn: {type(exc).__name__}: {exc}"
