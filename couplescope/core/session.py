"""Run a list of variants, one worker each, and hand every event to listeners.

This is the run's parent end, shared by every front end through couplescope.core.pipeline.
Listeners (printer, exporters, telemetry sampler, the app) implement
couplescope.protocol.listener.Listener. `stop()` may be called from another thread.

Workers come from a `Workers` (couplescope.core.workers, the seam): real worker processes
by default (couplescope.core.runner.LiveWorkers); a recording played back
(couplescope.core.replay) or events made up from the spec (couplescope.core.synthetic)
let the printer, exporters and the app be tested without starting torch. Every event
reaches the listeners typed (couplescope.protocol.events), the same object for all.
"""

from __future__ import annotations

import threading

from couplescope.core.runner import LiveWorkers
from couplescope.core.workers import WorkerHandle, Workers
from couplescope.protocol import events
from couplescope.protocol.listener import Listener  # noqa: F401  (re-exported for listeners)
from couplescope.results.builder import ResultsBuilder


class Session:
    def __init__(self, specs, listeners=(), title: str = "", workers: Workers | None = None,
                 worker_env: dict | None = None) -> None:
        self.specs = list(specs)
        self.worker_env = dict(worker_env or {})   # for every worker (the memory limit)
        self.listeners = list(listeners)
        self.workers: Workers = workers if workers is not None else LiveWorkers()
        self.builder = ResultsBuilder(title)
        self._stop = threading.Event()
        self._current: WorkerHandle | None = None
        self._lock = threading.Lock()
        # emit() is called from the session thread and from listener threads (the telemetry
        # sampler): one event at a time reaches the builder and the listeners. Re-entrant so a
        # listener may emit from inside on_event.
        self._emit_lock = threading.RLock()
        self.interrupted = False
        #: the signal that ended the run (couplescope.core.ending), when one did
        self.signal: int | None = None

    def emit(self, event: dict) -> None:
        """Record an event and pass it on (the parent's own events use this too). Thread-safe."""
        event = events.typed(event)
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
                self.measure_variant(spec)
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)
        for listener in self.listeners:
            listener.session_done(self.builder)
        return self.builder

    def _interrupted_by(self, exc: BaseException) -> None:
        from couplescope.core.ending import signum_of

        self.interrupted = True
        if self.signal is None:
            self.signal = signum_of(exc)

    def _emit_output(self, spec, proc: WorkerHandle) -> None:
        """What the worker printed (a user module's print()s), once it has ended: shown and
        saved after the measurements, never while a call is being timed."""
        lines = list(proc.output)
        if lines:
            self.emit(events.make("worker_output", spec.label, lines=lines,
                                  total=max(proc.output_total, len(lines))))

    def _how_far(self, spec) -> str:
        """"after warm-up iteration 2": the last call the parent heard of, for a crash's line."""
        variant = self.builder.variants.get(spec.label)
        if variant is None or variant.load_seconds is None:
            return "before its model loaded"
        if not variant.iterations:
            return "after loading its model, before its first call"
        last = variant.iterations[-1]
        kind = {"warmup": "warm-up", "timed": "timed", "profiled": "profiled"}.get(last["kind"], last["kind"])
        return f"after {kind} iteration {last['index']}"

    def measure_variant(self, spec) -> None:
        """Measure one variant: prepare, start its worker, pass its events on until it ends.
        `run` calls it once per variant; rounds of the same variants would call it per round."""
        env = dict(self.worker_env)
        for listener in self.listeners:
            env.update(listener.worker_env(spec) or {})
        try:
            self.workers.prepare(spec, self.emit)
        except Exception as exc:   # a failed native build: this variant cannot run
            self.emit(events.make("variant_failed", spec.label, reason=str(exc), kind="error",
                                  traceback=""))
            for listener in self.listeners:
                listener.variant_done(self.builder)
            return
        proc = self.workers.start(spec, env)
        # what the launch says that cannot wait (a pending srun step)
        proc.on_notice = lambda message: self.emit(events.make(
            "diagnostic", spec.label, level="warning", setting="launcher", message=message,
            check="launch"))
        with self._lock:
            self._current = proc
        if self._stop.is_set():  # stop() came while the worker was starting: it saw no process
            proc.stop()
        for listener in self.listeners:
            listener.worker_started(spec, proc)
        ended = False
        try:
            for ev in proc.events():
                ended = ended or ev.event in events.ENDINGS
                self.emit(ev)
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)
            self._stop.set()
            proc.stop()
            for ev in proc.events():  # the worker's last words: it reports being interrupted
                ended = ended or ev.event in events.ENDINGS
                self.emit(ev)
        finally:
            with self._lock:
                self._current = None
            proc.stop()
            for listener in self.listeners:
                listener.worker_ended(spec, proc)
        self._emit_output(spec, proc)
        if not ended:
            interrupted = self._stop.is_set()
            crashed = "interrupted" if interrupted else getattr(proc, "crash_kind", lambda: "error")()
            self.emit(events.make("variant_failed", spec.label,
                                  reason="interrupted" if interrupted else proc.crash_reason(self._how_far(spec)),
                                  kind=crashed, traceback=""))
        for listener in self.listeners:
            listener.variant_done(self.builder)
        if self.interrupted:
            raise KeyboardInterrupt
