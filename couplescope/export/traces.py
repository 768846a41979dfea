"""Trace export (its own issue): placeholder listener that writes no traces yet."""

from couplescope.session import Listener


class TraceListener(Listener):
    def __init__(self, exporter) -> None:
        self.exporter = exporter
