"""Run a list of variants, one worker each, and hand every event to listeners.

This is the run's parent end, shared by every front end through couplescope.core.pipeline.
Listeners (printer, exporters, telemetry sampler, the app) implement
couplescope.protocol.listener.Listener. `stop()` may be called from another thread.

The seam for fast tests is `start_worker`: a callable (spec, env) -> a worker with
events(), stop(), pid, returncode and crash_reason(after); `output` and `output_total` (what
it printed) when it has them. By default it starts a real worker
process (couplescope.core.runner); couplescope.core.replay gives one that plays back a
recorded events.jsonl, so the printer, exporters and the app are tested on real runs'
events without starting torch.
"""

from __future__ import annotations

import threading

from couplescope.core.runner import WorkerProcess
from couplescope.protocol import events
from couplescope.protocol.listener import Listener  # noqa: F401  (re-exported for listeners)
from couplescope.results.builder import ResultsBuilder


class Session:
    def __init__(self, specs, listeners=(), title: str = "", start_worker=None,
                 worker_env: dict | None = None) -> None:
        self.specs = list(specs)
        self.worker_env = dict(worker_env or {})   # for every worker (the memory limit)
        self.listeners = list(listeners)
        self.start_worker = start_worker or WorkerProcess
        self.builder = ResultsBuilder(title)
        self._stop = threading.Event()
        self._current: WorkerProcess | None = None
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

    def _emit_output(self, spec, proc) -> None:
        """What the worker printed (a user module's print()s), once it has ended: shown and
        saved after the measurements, never while a call is being timed."""
        lines = list(getattr(proc, "output", ()))
        if lines:
            self.emit(events.make("worker_output", spec.label, lines=lines,
                                  total=max(getattr(proc, "output_total", 0), len(lines))))

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

    def _run_one(self, spec) -> None:
        env = dict(self.worker_env)
        for listener in self.listeners:
            env.update(listener.worker_env(spec) or {})
        prepare = getattr(self.start_worker, "prepare", None)
        if prepare is not None:
            try:
                prepare(spec, self.emit)
            except Exception as exc:   # a failed native build: this variant cannot run
                self.emit(events.make("variant_failed", spec.label, reason=str(exc), kind="error",
                                      traceback=""))
                for listener in self.listeners:
                    listener.variant_done(self.builder)
                return
        proc = self.start_worker(spec, env)
        if hasattr(proc, "on_notice"):   # what the launch says that cannot wait (a pending step)
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
                ended = ended or ev["event"] in events.ENDINGS
                self.emit(ev)
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)
            self._stop.set()
            proc.stop()
            for ev in proc.events():  # the worker's last words: it reports being interrupted
                ended = ended or ev["event"] in events.ENDINGS
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
            self.emit(events.make("variant_failed", spec.label,
                                  reason="interrupted" if interrupted else proc.crash_reason(self._how_far(spec)),
                                  kind="interrupted" if interrupted else "error", traceback=""))
        for listener in self.listeners:
            listener.variant_done(self.builder)
        if self.interrupted:
            raise KeyboardInterrupt
