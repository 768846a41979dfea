"""What a consumer of a run implements: front ends, exporters, the telemetry sampler.

A session (couplescope.core.session) calls these hooks as a run goes. They live in the
protocol, beside the events they deliver, so that exporters (couplescope.export) can
implement them without importing the orchestration that calls them.
"""

from __future__ import annotations


class Listener:
    """Hooks a front end or exporter may override; all are no-ops here."""

    def attach(self, session) -> None:
        """Called once before the run; keep `session.emit` to add events of your own."""

    def worker_env(self, spec) -> dict:
        """Extra environment variables for the worker of `spec`."""
        return {}

    def worker_started(self, spec, proc) -> None:
        """The worker of `spec` runs (proc.pid; None for a replayed run)."""

    def on_event(self, event: dict) -> None:
        """Every event of the run, in order, from the worker and from the parent."""

    def worker_ended(self, spec, proc) -> None:
        pass

    def variant_done(self, builder) -> None:
        """A variant has ended; `builder` (a ResultsBuilder) holds everything so far."""

    def session_done(self, builder) -> None:
        pass
