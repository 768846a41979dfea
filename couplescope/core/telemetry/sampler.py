"""Live CPU and GPU telemetry, sampled by the parent while a worker runs.

Why in the parent: a sampler inside the measured process would compete with it for the
GIL and a core and skew what it measures. Here a thread of the parent watches the
worker's whole process tree from outside with psutil (every MPI rank under mpiexec is a
descendant of the worker's pid) and the GPUs through NVML, at --telemetry-hz. The
readers themselves are couplescope.probes.tree (shared with the node sampler that a
job whose ranks may run on other nodes starts on each node: couplescope.probes.node).

Every value that cannot be read -- a process gone between two samples, AccessDenied, no
NVML, a driver without a function -- is the string "n/a"; nothing here raises into a
run. Samples travel as "telemetry" events through `session.emit` (thread-safe; the
listener is couplescope.core.telemetry.listener), so every front end and exporter sees
them like any other event:

    sample = {"elapsed": s since the worker started, "iteration": {"kind", "index"} | None,
              "processes": [{pid, role, rank, name, cpu_percent, rss, threads, affinity,
                             ctx_switches: {voluntary, involuntary}}],
              "tree": {processes, cpu_percent, rss, threads},
              "system": {cpu_percent: [per core], memory_used, memory_total, memory_percent,
                         load: [1, 5, 15 minute load averages]},
              "gpu": [per device, see couplescope.probes.gpu] | "n/a"}

CPU percent is of one core (200 = two cores busy); memory is in bytes. results.json keeps
a bounded timeline of `scalar_series` per variant and a summary (telemetry_record.py).
"""

from __future__ import annotations

import os
import threading
import time

from couplescope.probes.tree import TreeSampler  # noqa: F401  (the parent's sampler reads with it)


def cores_available() -> int:
    """Cores this process (and so a worker it starts) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class SamplerThread(threading.Thread):
    """Calls `deliver(sampler.sample())` at `hz` until stopped; keeps its own CPU time.

    Ticks are scheduled on a fixed grid (a slow sample does not shift the later ones);
    missed ticks are skipped, not bunched. An unexpected error ends nothing: it is kept in
    `error` (first one only) and sampling goes on.
    """

    def __init__(self, sampler, hz: float, deliver) -> None:
        super().__init__(name="couplescope-telemetry", daemon=True)
        self.sampler, self.period, self.deliver = sampler, 1.0 / hz, deliver
        self.cpu_seconds = 0.0
        self.samples = 0
        self.error: str | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        start_cpu, tick = time.thread_time(), time.monotonic()
        while not self._halt.is_set():
            try:
                sample = self.sampler.sample()
                if sample is not None:
                    self.samples += 1
                    self.deliver(sample)
            except Exception as exc:  # a bug here must not stop a measurement
                self.error = self.error or f"{type(exc).__name__}: {exc}"
            self.cpu_seconds = time.thread_time() - start_cpu
            tick += self.period
            delay = tick - time.monotonic()
            if delay < 0:
                tick, delay = time.monotonic(), 0.0
            self._halt.wait(delay)

    def stop(self, timeout: float = 5.0) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout)
