"""The telemetry listener: a sampler thread per worker, and the diagnostics it feeds.

Samples and diagnostics become "telemetry" and "diagnostic" events through the
session, like any other event; see couplescope.core.telemetry.sampler for what a sample
holds and why it is taken in the parent.

A job whose ranks may run on other nodes (srun, host lists: Backend.samples_on_nodes)
is sampled where its ranks run instead: the listener asks for node samplers through the
worker's environment (contract.NODE_TELEMETRY_HZ_ENV), starts no sampler of its own
(the parent must not sample a rank's process, even one that happens to run on this
machine) and feeds the diagnostics from the node samples, which arrive as telemetry
events labelled with their node: each check sees every node's latest sample at once.
"""

from __future__ import annotations

import threading
import time

from couplescope.core.telemetry import diagnostics
from couplescope.core.telemetry.sampler import SamplerThread, cores_available
from couplescope.probes.gpu import GpuProbe
from couplescope.probes.node import iteration_plan, running_after
from couplescope.probes.tree import TreeSampler
from couplescope.protocol import events
from couplescope.protocol.contract import NODE_TELEMETRY_HZ_ENV
from couplescope.protocol.listener import Listener


# -- what iteration is running ------------------------------------------------------------

class IterationTracker:
    """Which iteration runs now, inferred from the last event (events arrive when one ends)."""

    def __init__(self, spec) -> None:
        self.plan = iteration_plan(spec.warmup, spec.iterations, spec.profile_iterations)
        self.current = None

    def _after(self, kind, index):
        return running_after(self.plan, kind, index)   # the node samplers' rule too

    def on_event(self, ev: dict) -> None:
        ev = events.typed(ev)
        kind = ev.event
        if kind == "model_loaded":
            self.current = self._after(None, 0)
        elif kind == "iteration":
            self.current = self._after(ev.kind, ev.index)
        elif kind == "iterations":   # the last call of the batch
            self.current = self._after(ev.kind, ev.last_index)
        elif kind in events.ENDINGS:
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
        self._nodes: dict[str, float | None] | None = None   # node -> its ranks' RSS, on node-sampled runs
        self._job_rss = 0.0
        #: a run in rounds: the workers waiting for their next round -> (tracker, checks, start)
        self._paused: dict[str, tuple] = {}

    def attach(self, session) -> None:
        self._emit = session.emit

    @staticmethod
    def _on_nodes(spec) -> bool:
        from couplescope import backends

        return backends.get(spec.backend).launcher(spec).samples_on_nodes(spec)

    def worker_env(self, spec) -> dict:
        """Node samplers for a job whose ranks may run elsewhere; nothing otherwise."""
        if self.hz > 0 and self._emit is not None and self._on_nodes(spec):
            return {NODE_TELEMETRY_HZ_ENV: f"{self.hz:g}"}
        return {}

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
        with self._lock:
            self._tracker = IterationTracker(spec)
            self._diag = diagnostics.Diagnostician(spec, cores_available())
            found = self._diag.before_run()
        self._diagnose(found)
        if self._on_nodes(spec):   # sampled on each node, by the job (couplescope.probes.node)
            self._nodes, self._job_rss = {}, 0.0
            return
        if self.gpu is None:
            self.gpu = GpuProbe()
            # said once per session, not per variant or sample, and only once a model has
            # loaded: a run refused as bad input (an unknown name, a size too big) ends with
            # its one line
            self._gpu_notice = None if self.gpu.available else (
                f"telemetry: no GPU telemetry ({self.gpu.reason}); GPU values are n/a")
        self._thread = SamplerThread(TreeSampler(proc.pid, self.gpu), self.hz, self._deliver)
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
        ev = events.typed(ev)
        if ev.event == "model_loaded" and self._gpu_notice:
            notice, self._gpu_notice = self._gpu_notice, None
            self._say("log", verbatim=True, message=notice)
        if ev.event == "telemetry" and ev.node and self._nodes is not None:
            self._node_sample(ev)
            return
        if ev.event in ("telemetry", "diagnostic", "log") or self._tracker is None:
            return
        with self._lock:
            self._tracker.on_event(ev)
            found = self._diag.on_event(ev) if self._diag is not None else []
        self._diagnose(found)

    def _node_sample(self, ev: dict) -> None:
        """A node's sample: the diagnostics judge its ranks (bound, GPUs; its cores when the
        job has one node) and the job's memory, the sum of every node's latest worker RSS
        kept by difference: a sample costs its own node's ranks, not the job's (1024 ranks
        on 128 nodes send 1280 samples a second)."""
        sample, node = ev["sample"], ev["node"]
        workers = [p for p in sample.get("processes", []) if p.get("role") == "worker"]
        rss = [p.get("rss") for p in workers]
        mine = float(sum(rss)) if rss and all(diagnostics._num(r) for r in rss) else None
        before = self._nodes.get(node)
        self._nodes[node] = mine
        if mine is not None and before is not None:
            self._job_rss += mine - before
        elif mine is not None:
            self._job_rss += mine
        elif before is not None:
            self._job_rss -= before
        known = all(v is not None for v in self._nodes.values())   # else no figure for the job
        view = {"iteration": sample.get("iteration"), "processes": workers,
                "system": sample.get("system", {}) if len(self._nodes) == 1 else {},
                "gpu": sample.get("gpu", "n/a"), "job_rss": self._job_rss if known else None}
        with self._lock:
            found = self._diag.on_sample(view) if self._diag is not None else []
        self._diagnose(found)

    #: what the listener holds of the worker it follows now (a run in rounds keeps it per
    #: variant while the worker waits for its next round)
    _FOLLOWED = ("_tracker", "_diag", "_started", "_variant", "_nodes", "_job_rss")

    def worker_paused(self, spec, proc) -> None:
        """A run in rounds: the worker waits while others measure; its sampler stops (the
        idle process says nothing of its variant) and its checks wait for it, kept."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
        with self._lock:
            self._paused[spec.label] = {k: getattr(self, k) for k in self._FOLLOWED}
            self._tracker = self._diag = self._nodes = None

    def worker_resumed(self, spec, proc) -> None:
        """Its next round: its checks where they were, a sampler again."""
        if not self._restore(spec):
            return
        if self.hz > 0 and proc.pid is not None and self._nodes is None and not self._on_nodes(spec):
            self._thread = SamplerThread(TreeSampler(proc.pid, self.gpu), self.hz, self._deliver)
            self._thread.start()

    def _restore(self, spec) -> bool:
        with self._lock:
            kept = self._paused.pop(spec.label, None)
            if kept is None:
                return False
            for k, v in kept.items():
                setattr(self, k, v)
        return True

    def worker_ended(self, spec, proc) -> None:
        self._restore(spec)   # a worker ended while it waited for a round (a stopped run)
        thread, self._thread = self._thread, None
        if self._nodes is not None:   # node-sampled: no thread of ours, the checks' last look
            self._nodes = None
            with self._lock:
                found = self._diag.finish() if self._diag else []
                self._tracker = self._diag = None
            self._diagnose(found)
            return
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
