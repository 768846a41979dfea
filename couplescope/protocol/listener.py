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

    def worker_paused(self, spec, proc) -> None:
        """A run in rounds: the worker of `spec` has made its share of a round and waits,
        its model loaded, while the other variants measure theirs (nothing of it runs)."""

    def worker_resumed(self, spec, proc) -> None:
        """A run in rounds: the paused worker of `spec` measures again (its next round, or
        its finish: the profiled window)."""

    def worker_ended(self, spec, proc) -> None:
        pass

    def round_done(self, builder, round_number: int) -> None:
        """A run in rounds: every variant has made its share of round `round_number`."""

    def variant_done(self, builder) -> None:
        """A variant has ended; `builder` (a ResultsBuilder) holds everything so far."""

    def session_done(self, builder) -> None:
        pass
