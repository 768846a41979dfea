"""The telemetry listener: a sampler thread per worker, and the diagnostics it feeds.

Samples and diagnostics become "telemetry" and "diagnostic" events through the
session, like any other event; see couplescope.core.telemetry.sampler for what a sample
holds and why it is taken in the parent.
"""

from __future__ import annotations

import threading
import time

from couplescope.core.telemetry import diagnostics
from couplescope.core.telemetry.gpu import GpuProbe
from couplescope.core.telemetry.sampler import SamplerThread, TreeSampler, cores_available
from couplescope.protocol import events
from couplescope.protocol.listener import Listener


# -- what iteration is running ------------------------------------------------------------

class IterationTracker:
    """Which iteration runs now, inferred from the last event (events arrive when one ends)."""

    def __init__(self, spec) -> None:
        self.plan = [(k, n) for k, n in (("warmup", spec.warmup), ("timed", spec.iterations),
                                          ("profiled", spec.profile_iterations)) if n > 0]
        self.current = None

    def _after(self, kind, index):
        kinds = [k for k, _ in self.plan]
        if kind is None:
            return {"kind": self.plan[0][0], "index": 1} if self.plan else None
        if kind not in kinds:
            return None
        if index < dict(self.plan)[kind]:
            return {"kind": kind, "index": index + 1}
        later = kinds[kinds.index(kind) + 1:]
        return {"kind": later[0], "index": 1} if later else None

    def on_event(self, ev: dict) -> None:
        kind = ev["event"]
        if kind == "model_loaded":
            self.current = self._after(None, 0)
        elif kind == "iteration":
            self.current = self._after(ev.get("kind"), ev.get("index", 0))
        elif kind == "iterations":   # the last call of the batch
            self.current = self._after(ev.get("kind"), ev["first_index"] + len(ev["seconds"]) - 1)
        elif kind in ("variant_finished", "variant_failed"):
            self.current = None


# -- the listener -------------------------------------------------------------------------

class TelemetryListener(Listener):
    """Starts a sampler thread per worker and emits its samples and the diagnostics."""

    def __init__(self, hz: float) -> None:
        self.hz = float(hz or 0)
        self.gpu: GpuProbe | None = None
        self._emit = None
        self._thread: SamplerThread | None = None
        self._variant = ""
        self._started = 0.0
        self._tracker: IterationTracker | None = None
        self._gpu_notice: str | None = None   # "no GPU telemetry", said at the first model load
        self._diag: diagnostics.Diagnostician | None = None
        self._lock = threading.Lock()   # guards tracker and diagnostician (two threads use them)

    def attach(self, session) -> None:
        self._emit = session.emit

    def _say(self, kind: str, **fields) -> None:
        self._emit(events.make(kind, self._variant, **fields))

    def _diagnose(self, found: list) -> None:
        for d in found:
            self._say("diagnostic", **d)

    def worker_started(self, spec, proc) -> None:
        if self._emit is None:
            return
        self._variant, self._started = spec.label, time.time()
        if self.hz <= 0 or proc.pid is None:   # off, or a replayed run: no process to watch
            # telemetry off: the checks that need only the settings still run
            self._diagnose(diagnostics.Diagnostician(spec, cores_available()).before_run())
            return
        if self.gpu is None:
            self.gpu = GpuProbe()
            # said once per session, not per variant or sample, and only once a model has
            # loaded: a run refused as bad input (an unknown name, a size too big) ends with
            # its one line
            self._gpu_notice = None if self.gpu.available else (
                f"telemetry: no GPU telemetry ({self.gpu.reason}); GPU values are n/a")
        with self._lock:
            self._tracker = IterationTracker(spec)
            self._diag = diagnostics.Diagnostician(spec, cores_available())
            found = self._diag.before_run()
        self._diagnose(found)
        from couplescope import backends

        adopt = backends.get(spec.backend).workers_outside_tree(spec)   # srun's tasks
        self._thread = SamplerThread(TreeSampler(proc.pid, self.gpu, adopt_workers=adopt), self.hz,
                                     self._deliver)
        self._thread.start()

    def _deliver(self, sample: dict) -> None:
        """On the sampler thread: tag, emit, then check the diagnostics that need samples."""
        with self._lock:
            sample["elapsed"] = round(time.time() - self._started, 3)
            sample["iteration"] = self._tracker.current if self._tracker else None
            diag = self._diag
        self._say("telemetry", sample=sample)
        if diag is not None:
            with self._lock:
                found = diag.on_sample(sample)
            self._diagnose(found)

    def on_event(self, ev: dict) -> None:
        if ev["event"] == "model_loaded" and self._gpu_notice:
            notice, self._gpu_notice = self._gpu_notice, None
            self._say("log", verbatim=True, message=notice)
        if ev["event"] in ("telemetry", "diagnostic", "log") or self._tracker is None:
            return
        with self._lock:
            self._tracker.on_event(ev)
            found = self._diag.on_event(ev) if self._diag is not None else []
        self._diagnose(found)

    def worker_ended(self, spec, proc) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        thread.stop()
        if thread.error:
            self._say("log", message=f"telemetry: sampling error (values may be missing): {thread.error}")
        with self._lock:
            found = self._diag.finish() if self._diag else []
            self._tracker = self._diag = None
        self._diagnose(found)

    def session_done(self, builder) -> None:
        if self.gpu is not None:
            self.gpu.close()
