"""The app's messages: one per thing that happened in a run, named in the past tense.

They are posted from the run's thread (`App.post_message` is thread-safe) by
`AppListener` and handled on the UI thread. Every message carries the run id, so a
late message from an earlier run can never be drawn into a later one.
"""

from __future__ import annotations

from textual.message import Message


class RunMessage(Message):
    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class EventMessage(RunMessage):
    """A single engine event (run_started, model_loaded, variant_finished ...)."""

    def __init__(self, run_id: int, event: dict) -> None:
        super().__init__(run_id)
        self.event = event


class VariantStarted(EventMessage):
    pass


class ModelLoaded(EventMessage):
    pass


class VariantFinished(EventMessage):
    pass


class VariantFailed(EventMessage):
    pass


class DiagnosticRaised(EventMessage):
    pass


class OtherEventReceived(EventMessage):
    """log, trace_written, rank_info: recorded, shown in the log."""


class IterationsMeasured(RunMessage):
    """A batch of iteration events, coalesced so a fast model cannot flood the UI."""

    def __init__(self, run_id: int, events: list[dict]) -> None:
        super().__init__(run_id)
        self.events = events


class TelemetrySampled(EventMessage):
    """The latest telemetry sample; a newer one replaces a pending older one."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TelemetrySampled) and message.run_id == self.run_id


class RunEnded(RunMessage):
    """The session returned (finished, stopped, or broke: `error` says why)."""

    def __init__(self, run_id: int, error: str | None = None) -> None:
        super().__init__(run_id)
        self.error = error


class CatalogueLoaded(Message):
    """Models (with default sizes), backend availability and devices, read off the UI thread."""

    def __init__(self, models: dict, backends: dict, devices: list[str], error: str | None = None) -> None:
        super().__init__()
        self.models = models
        self.backends = backends
        self.devices = devices
        self.error = error
