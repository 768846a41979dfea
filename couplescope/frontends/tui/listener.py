"""The bridge from the engine to the app: a session Listener that posts Textual messages.

It runs on the run's thread (the one reading the worker's event lines), so it does as
little as possible: it records every event (export replays them later) and posts a
message. Iteration events are buffered and posted as one batch at most `rate` times a
second by a small flusher thread, so a model doing 10,000 iterations a second costs
the UI ten messages, not ten thousand. Any other event first flushes the buffer, so the
app always sees events in the order the worker wrote them.
"""

from __future__ import annotations

import threading

from couplescope.frontends.tui import messages as m
from couplescope.protocol import events
from couplescope.protocol.listener import Listener

_SINGLE = {"run_started": m.VariantStarted, "model_loaded": m.ModelLoaded,
           "variant_finished": m.VariantFinished, "variant_failed": m.VariantFailed,
           "diagnostic": m.DiagnosticRaised, "telemetry": m.TelemetrySampled}


class AppListener(Listener):
    def __init__(self, post, run_id: int, rate: float = 15.0) -> None:
        self.post = post              # App.post_message (thread-safe)
        self.run_id = run_id
        self.interval = 1.0 / rate
        self.events: list[dict] = []  # everything, in order, for export
        self._buffer: list[dict] = []
        self._lock = threading.Lock()        # guards events and the buffer
        self._post_lock = threading.Lock()   # keeps posts in event order across threads
        self._done = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="couplescope-ui-flush", daemon=True)
        self.posted_batches = 0

    def attach(self, session) -> None:
        self._flusher.start()

    def on_event(self, event: dict) -> None:
        kind = event["event"]
        with self._lock:
            self.events.append(event)
            if kind == "iteration":
                self._buffer.append(event)
                return
            if kind == "iterations":   # the app draws calls one at a time
                self._buffer.extend(events.expand(event))
                return
        with self._post_lock:
            self._flush_locked()
            self.post(_SINGLE.get(kind, m.OtherEventReceived)(self.run_id, event))

    def flush(self) -> None:
        with self._post_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._lock:
            batch, self._buffer = self._buffer, []
        if batch:
            self.posted_batches += 1
            self.post(m.IterationsMeasured(self.run_id, batch))

    def _flush_loop(self) -> None:
        while not self._done.wait(self.interval):
            self.flush()

    def session_done(self, builder) -> None:
        self._done.set()
        self.flush()

    def snapshot(self) -> list[dict]:
        """A copy of the events so far (safe while the run goes on)."""
        with self._lock:
            return list(self.events)
