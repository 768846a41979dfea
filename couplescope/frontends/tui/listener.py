"""The bridge from the engine to the app: a session Listener that posts Textual messages.

It runs on the run's thread (the one reading the worker's event lines), so it does as
little as possible: it posts each event as a message and keeps nothing (the run's events
are kept by the app's RunRecord, on the UI thread, and on disk by the pipeline's run
directory). Iteration events are buffered and posted as one batch at most `rate` times a
second by a small flusher thread, so a model doing 10,000 iterations a second costs
the UI ten messages, not ten thousand. Any other event first flushes the buffer, so the
app always sees events in the order the worker wrote them.
"""

from __future__ import annotations

import threading

from couplescope.frontends.tui.messages import EventsArrived
from couplescope.protocol import events
from couplescope.protocol.listener import Listener


class AppListener(Listener):
    def __init__(self, post, run_id: int, rate: float = 15.0) -> None:
        self.post = post              # App.post_message (thread-safe)
        self.run_id = run_id
        self.interval = 1.0 / rate
        self._buffer: list[dict] = []
        self._lock = threading.Lock()        # guards the buffer
        self._post_lock = threading.Lock()   # keeps posts in event order across threads
        self._done = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="couplescope-ui-flush", daemon=True)
        self.posted_batches = 0

    def attach(self, session) -> None:
        self._flusher.start()

    def on_event(self, event: dict) -> None:
        event = events.typed(event)
        kind = event.event
        if kind in ("iteration", "iterations"):   # the app draws calls one at a time
            with self._lock:
                self._buffer.extend(event.calls)  # a batch's, expanded once and shared
            return
        with self._post_lock:
            self._flush_locked()
            self.post(EventsArrived(self.run_id, kind, [event]))

    def flush(self) -> None:
        with self._post_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._lock:
            batch, self._buffer = self._buffer, []
        if batch:
            self.posted_batches += 1
            self.post(EventsArrived(self.run_id, "iteration", batch))

    def _flush_loop(self) -> None:
        while not self._done.wait(self.interval):
            self.flush()

    def session_done(self, builder) -> None:
        self._done.set()
        self.flush()
