"""Telemetry sampler (its own issue): placeholder listener that samples nothing yet."""

from couplescope.session import Listener


class TelemetryListener(Listener):
    def __init__(self, hz: float) -> None:
        self.hz = hz
