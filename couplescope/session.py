"""Run a list of variants, one worker process each, and hand every event to listeners.

This is the pipeline's parent end, shared by the headless CLI, the Textual app and the
library API. Listeners (printer, exporters, telemetry sampler, the app) subclass
`Listener` and override what they need. `stop()` may be called from another thread.
"""

from __future__ import annotations

import threading

from couplescope import events
from couplescope.results import ResultsBuilder
from couplescope.runner import WorkerProcess


class Listener:
    """Hooks a front end or exporter may override; all are no-ops here."""

    def attach(self, session: "Session") -> None:
        """Called once before the run; keep `session.emit` to add events of your own."""

    def worker_env(self, spec) -> dict:
        """Extra environment variables for the worker of `spec`."""
        return {}

    def worker_started(self, spec, proc: WorkerProcess) -> None:
        pass

    def on_event(self, event: dict) -> None:
        pass

    def worker_ended(self, spec, proc: WorkerProcess) -> None:
        pass

    def variant_done(self, builder: ResultsBuilder) -> None:
        pass

    def session_done(self, builder: ResultsBuilder) -> None:
        pass


class Session:
    def __init__(self, specs, listeners=(), title: str = "") -> None:
        self.specs = list(specs)
        self.listeners = list(listeners)
        self.builder = ResultsBuilder(title)
        self._stop = threading.Event()
        self._current: WorkerProcess | None = None
        self._lock = threading.Lock()
        # emit() is called from the session thread and from listener threads (the telemetry
        # sampler): one event at a time reaches the builder and the listeners. Re-entrant so a
        # listener may emit from inside on_event.
        self._emit_lock = threading.RLock()
        self.interrupted = False

    def emit(self, event: dict) -> None:
        """Record an event and pass it on (the parent's own events use this too). Thread-safe."""
        with self._emit_lock:
            self.builder.on_event(event)
            for listener in self.listeners:
                listener.on_event(event)

    def stop(self) -> None:
        """End the running worker; what it measured stays. Safe from any thread."""
        self._stop.set()
        with self._lock:
            proc = self._current
        if proc is not None:
            proc.stop()

    def run(self) -> ResultsBuilder:
        for listener in self.listeners:
            listener.attach(self)
        try:
            for spec in self.specs:
                if self._stop.is_set():
                    break
                self._run_one(spec)
        except KeyboardInterrupt:
            self.interrupted = True
        for listener in self.listeners:
            listener.session_done(self.builder)
        return self.builder

    def _run_one(self, spec) -> None:
        env = {}
        for listener in self.listeners:
            env.update(listener.worker_env(spec) or {})
        proc = WorkerProcess(spec, env=env)
        with self._lock:
            self._current = proc
        if self._stop.is_set():  # stop() came while the worker was starting: it saw no process
            proc.stop()
        for listener in self.listeners:
            listener.worker_started(spec, proc)
        ended = False
        try:
            for ev in proc.events():
                ended = ended or ev["event"] in ("variant_finished", "variant_failed")
                self.emit(ev)
        except KeyboardInterrupt:
            self.interrupted = True
            self._stop.set()
            proc.stop()
            for ev in proc.events():  # the worker's last words: it reports being interrupted
                ended = ended or ev["event"] in ("variant_finished", "variant_failed")
                self.emit(ev)
        finally:
            with self._lock:
                self._current = None
            proc.stop()
            for listener in self.listeners:
                listener.worker_ended(spec, proc)
        if not ended:
            interrupted = self._stop.is_set()
            self.emit(events.make("variant_failed", variant=spec.label,
                                  reason="interrupted" if interrupted else proc.crash_reason(),
                                  kind="interrupted" if interrupted else "error", traceback=""))
        for listener in self.listeners:
            listener.variant_done(self.builder)
        if self.interrupted:
            raise KeyboardInterrupt
