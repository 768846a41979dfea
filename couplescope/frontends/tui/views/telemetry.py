"""The Telemetry view: the parent's samples of the worker and the machine, and the log."""

from __future__ import annotations

from textual.app import ComposeResult

from couplescope.frontends.tui.telemetry_panel import WORDS, DiagnosticsLog, TelemetryPanel
from couplescope.frontends.tui.views.base import AppView


class TelemetryView(AppView):
    key, title = "t", "Telemetry"
    focus_on = "#log"
    follows = frozenset({"telemetry"})
    redraw_seconds = 0.5
    help = """\
cores, the worker's CPU, memory and threads, each GPU (or "no GPU"), and
diagnostics in plain words: sampled by this process, never inside the worker."""

    def compose(self) -> ComposeResult:
        yield TelemetryPanel(id="telemetry-panel", classes="telemetry")
        yield DiagnosticsLog(id="log", wrap=True)

    def on_mount(self) -> None:   # (AppView's on_mount runs too, by Textual)
        # the latest sample of the shown run per node (None: the parent's sampler), not drawn yet
        self._samples: dict = {}

    def follow(self, record, events: list[dict]) -> None:
        if record is self.app.shown:   # drawn by redraw, not per sample; a multi-node job's per node
            for ev in events:
                self._samples[ev.get("node")] = (ev.get("sample") or {}, WORDS[record.unit(ev.get("variant"))])

    def redraw(self, force: bool = False) -> None:
        if self._samples:
            samples, self._samples = self._samples, {}
            for node, (sample, unit) in samples.items():
                self.query_one(TelemetryPanel).show(sample, node, unit)

    def run_ended(self, record) -> None:
        self.redraw(force=True)   # its last sample, then: idle
        self.query_one(TelemetryPanel).idle(record.name)

    def noted(self, text: str, level: str) -> None:
        self.query_one(DiagnosticsLog).note(text, level)


VIEW = TelemetryView
