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

from couplescope.core import ending
from couplescope.core.runner import LiveWorkers
from couplescope.core.workers import WorkerHandle, Workers
from couplescope.protocol import events
from couplescope.protocol.listener import Listener  # noqa: F401  (re-exported for listeners)
from couplescope.results.builder import ResultsBuilder


class Session:
    def __init__(self, specs, listeners=(), title: str = "", workers: Workers | None = None,
                 worker_env: dict | None = None, plan=None) -> None:
        self.specs = list(specs)
        self.worker_env = dict(worker_env or {})   # for every worker (the memory limit)
        self.listeners = list(listeners)
        self.workers: Workers = workers if workers is not None else LiveWorkers()
        #: interleaved rounds (couplescope.core.rounds.RoundPlan), None: each variant in turn
        self.plan = plan
        self.builder = ResultsBuilder(title)
        self._stop = threading.Event()
        self._live: dict[str, WorkerHandle] = {}   # variant -> its worker, while it runs
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
        """End the running workers (a run in rounds has one per variant, all but one
        waiting); what they measured stays. Safe from any thread."""
        self._stop.set()
        with self._lock:
            handles = list(self._live.values())
        for proc in handles:
            proc.stop()

    def run(self) -> ResultsBuilder:
        for listener in self.listeners:
            listener.attach(self)
        try:
            if self.plan is None:
                for spec in self.specs:
                    if self._stop.is_set():
                        break
                    ending.raise_if_pending()
                    self.measure_variant(spec)
            else:
                self.measure_in_rounds(self.plan)
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)
        for listener in self.listeners:
            listener.session_done(self.builder)
        return self.builder

    def _interrupted_by(self, exc: BaseException) -> None:
        """A signal (or Ctrl-C) ended the run: from here on it is being stopped and saved,
        and later signals are ignored (couplescope.core.ending)."""
        ending.acknowledge()
        self._stop.set()   # the workers it ends were stopped, not broken
        self.interrupted = True
        if self.signal is None:
            self.signal = ending.signum_of(exc)

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
        last = variant.calls.last_call()
        if last is None:
            return "after loading its model, before its first call"
        kind = {"warmup": "warm-up", "timed": "timed", "profiled": "profiled"}.get(last["kind"], last["kind"])
        where = f" (round {last['round']})" if last.get("round") else ""
        return f"after {kind} iteration {last['index']}{where}"

    # -- one variant's worker: opened, its events passed on, closed -----------------------
    def measure_variant(self, spec) -> None:
        """Measure one variant from start to end (a run without rounds)."""
        proc = self._open(spec)
        if proc is None:
            return
        ended = self._pump(spec, proc)
        self._close(spec, proc, ended)

    def _open(self, spec, shares=None) -> WorkerHandle | None:
        """Prepare and start `spec`'s worker (paced when `shares` are given: its iterations
        per round); None when it cannot start (its variant_failed is said)."""
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
            return None
        proc = self.workers.start(spec, env, shares=shares)
        # what the launch says that cannot wait (a pending srun step)
        proc.on_notice = lambda message: self.emit(events.make(
            "diagnostic", spec.label, level="warning", setting="launcher", message=message,
            check="launch"))
        with self._lock:
            self._live[spec.label] = proc
        if self._stop.is_set():  # stop() came while the worker was starting: it saw no process
            proc.stop()
        for listener in self.listeners:
            listener.worker_started(spec, proc)
        return proc

    def _pump(self, spec, proc: WorkerHandle) -> bool:
        """Pass the worker's events on until it ends (paced: until it ends its round).
        True when an ending event came (the variant is over)."""
        ended = False
        try:
            for ev in proc.events():
                ended = ended or ev.event in events.ENDINGS
                self.emit(ev)
                ending.raise_if_pending()   # a signal whose Ended something swallowed
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)
            proc.stop()
            for ev in proc.events():  # the worker's last words: it reports being interrupted
                ended = ended or ev.event in events.ENDINGS
                self.emit(ev)
            self._close(spec, proc, ended)
            raise
        return ended

    def _close(self, spec, proc: WorkerHandle, ended: bool) -> None:
        """The worker has ended (or is ended now): say how, if it did not."""
        with self._lock:
            self._live.pop(spec.label, None)
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

    # -- interleaved rounds --------------------------------------------------------------
    def measure_in_rounds(self, plan) -> None:
        """Every variant's share of its timed iterations, round after round, in each round's
        shuffled order (couplescope.core.rounds). A variant's worker starts at its first
        round, warms up once and waits, model loaded, between its rounds; when the rounds
        are over each is told to finish (its profiled window, the training's last check).
        A variant that fails or breaks in a round is over: what it measured stays, and the
        rounds go on without it. An interrupt ends every worker still waiting."""
        by_name = {s.label: s for s in self.specs}
        over: set[str] = set()
        self.emit(events.make("rounds_planned", None, rounds=plan.rounds, seed=plan.seed,
                              orders=[list(o) for o in plan.orders], variants=list(by_name),
                              **({"baseline": plan.baseline} if plan.baseline else {})))
        try:
            for number, order in enumerate(plan.orders, 1):
                for position, name in enumerate(order, 1):
                    if self._stop.is_set():
                        return
                    ending.raise_if_pending()
                    if name not in over and not self._measure_round(by_name[name], plan, number, position):
                        over.add(name)
                for listener in self.listeners:
                    listener.round_done(self.builder, number)
            for name in plan.orders[-1]:
                if name not in over and not self._stop.is_set():
                    self._finish(by_name[name])
        except KeyboardInterrupt as exc:
            self._interrupted_by(exc)   # before the waiting workers are ended
            raise
        finally:
            self._end_waiting()

    def _measure_round(self, spec, plan, number: int, position: int) -> bool:
        """One variant's share of round `number`; False when the variant is over."""
        count = plan.share(spec.label, number)
        self.emit(events.make("round_started", spec.label, round=number, rounds=plan.rounds,
                              iterations=count, position=position))
        with self._lock:
            proc = self._live.get(spec.label)
        if proc is None:
            proc = self._open(spec, shares=plan.shares[spec.label])
            if proc is None:
                return False
        else:
            for listener in self.listeners:
                listener.worker_resumed(spec, proc)
        proc.run_round(number, count)
        if self._pump(spec, proc):
            self._close(spec, proc, True)
            return False
        last = self.builder.variants.get(spec.label)
        if last is None or last.round_finished != number:   # its stream ended mid-round: it died
            self._close(spec, proc, False)
            return False
        for listener in self.listeners:
            listener.worker_paused(spec, proc)
        return True

    def _finish(self, spec) -> None:
        with self._lock:
            proc = self._live.get(spec.label)
        if proc is None:
            return
        for listener in self.listeners:
            listener.worker_resumed(spec, proc)
        proc.finish()
        self._close(spec, proc, self._pump(spec, proc))

    def _end_waiting(self) -> None:
        """Workers still waiting for a round (the run was stopped, or broke): each is ended,
        says it was interrupted, and its variant keeps what it measured."""
        with self._lock:
            waiting = list(self._live.items())
        by_name = {s.label: s for s in self.specs}
        for name, proc in waiting:
            proc.stop()
            ended = False
            for ev in proc.events():
                ended = ended or ev.event in events.ENDINGS
                self.emit(ev)
            self._close(by_name[name], proc, ended)
