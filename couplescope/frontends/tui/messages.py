"""The app's messages: a run's events arriving, a run ending or exported, the catalogue read, the form changed.

Most are posted from other threads (`App.post_message` is thread-safe) and handled on
the UI thread. Every run message carries the run id, so a late message from an earlier
run can never be drawn into a later one.
"""

from __future__ import annotations

import functools

from textual.message import Message


class RunMessage(Message):
    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class EventsArrived(RunMessage):
    """Events of one kind, in the order the worker wrote them: a batch of iterations
    (coalesced by AppListener, so a fast model cannot flood the UI) or one other event.
    The app routes them by `kind` to the views that follow it."""

    def __init__(self, run_id: int, kind: str, events: list[dict]) -> None:
        super().__init__(run_id)
        self.kind = kind
        self.events = events

    def can_replace(self, message: Message) -> bool:
        """A telemetry sample replaces a pending older one of the same run: only the latest
        is drawn (the run directory, written on the run's thread, keeps every sample)."""
        return (self.kind == "telemetry" and isinstance(message, EventsArrived)
                and message.kind == "telemetry" and message.run_id == self.run_id
                and _node(message) == _node(self))


class RunEnded(RunMessage):
    """The session returned (finished, stopped, or broke: `error` says why)."""

    def __init__(self, run_id: int, error: str | None = None) -> None:
        super().__init__(run_id)
        self.error = error


class Exported(RunMessage):
    """A run's export (its copy, summary.png) ended: `path` where it went, else `error`."""

    def __init__(self, run_id: int, path: str | None, error: str | None = None) -> None:
        super().__init__(run_id)
        self.path = path
        self.error = error


class FormChanged(Message):
    """The form's Run line was drawn again: whether `r` would run something now, and
    when not, why (`reason`: the Run line's words); `request`: the run r would start."""

    def __init__(self, runnable: bool, reason: str | None = None, request=None) -> None:
        super().__init__()
        self.runnable = runnable
        self.reason = reason
        self.request = request


class CatalogueLoaded(Message):
    """Models (with default sizes), backend availability and devices, read off the UI thread."""

    def __init__(self, models: dict, backends: dict, devices: list[str], error: str | None = None) -> None:
        super().__init__()
        self.models = models
        self.backends = backends
        self.devices = devices
        self.error = error


def _node(message) -> str | None:
    """The node a telemetry message's samples come from (None: the parent's sampler): a
    multi-node job's nodes each keep their latest sample."""
    events = getattr(message, "events", None) or []
    return events[-1].get("node") if events else None



def while_shown(handler):
    """An app handler that skips a message arriving after the app has taken its screens
    down (quitting)."""

    @functools.wraps(handler)
    def wrapper(self, *args):
        if not self.screen_stack:
            return None
        return handler(self, *args)
    return wrapper
