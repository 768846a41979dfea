"""Plain-words warnings about how a run uses the machine, each naming the setting to change.

Why these five: they are the traps behind most "coupling is slow" reports. The best
known is CPU inference running several times slower under mpirun/srun because each
rank is bound to one core with one torch thread (docs/telemetry.md has the list and
what to do). The checks are pure: a `Diagnostician` (one per variant) is fed the spec,
the worker's events and the telemetry samples, and returns diagnostics as dicts
{check, level, message, setting}; the telemetry listener emits them as "diagnostic"
events. Each check speaks at most once per variant.

  oversubscribed   torch threads > cores available (before the run; MPI ranks: rank 0
                   judges each node from the ranks' reports, backends/mpi/nodes.py)
  bound            a process is bound to fewer cores than its threads  (samples)
  idle_cores       one torch thread while cores it may use sit idle    (timed samples)
  rss_growth       the worker's RSS keeps growing across iterations,    (timed samples)
                   after the warm-up plateau
  launch_bound     the GPU mostly idle while forward dominates         (timed samples)
"""

from __future__ import annotations

import statistics

from couplescope.protocol import events

MIB = 1024 * 1024
#: RSS growth over the timed iterations that counts as a leak: at least this much ...
LEAK_MIN_BYTES = 16 * MIB
#: ... and at least this fraction of where it started ...
LEAK_MIN_FRACTION = 0.05
#: ... seen over at least this many distinct timed iterations after the warm-up plateau
MIN_LEAK_ITERATIONS = 6
#: the first timed iterations, where caches fill and lazy initialisation happens (the
#: warm-up plateau: cgdrag's RSS rises 50 MiB over its first 5 calls, then levels off)
PLATEAU_FRACTION = 0.25
#: mean GPU utilisation (percent) below which a forward-dominated run is launch-bound
LAUNCH_BOUND_UTIL = 30.0


def _num(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _here() -> str:
    import socket

    return socket.gethostname()


def _device_index(device: str):
    if not device.startswith("cuda"):
        return None
    return int(device.split(":", 1)[1]) if ":" in device else 0


class Diagnostician:
    """Diagnoses one variant. `cores` = cores the run may use (the parent's affinity)."""

    def __init__(self, spec, cores: int) -> None:
        from couplescope import backends

        self.spec, self.cores = spec, max(1, int(cores))
        backend = backends.get(spec.backend)
        self.ranks = backend.launcher(spec).processes(spec)
        self.mpi = self.ranks > 1          # several worker processes: the ranks of an MPI job
        self.placement_known = backend.launcher(spec).placement_known(spec)
        self._rank_hosts: dict = {}   # rank -> host, from rank_info (where srun put them)
        # a GPU idle behind a replayed graph is not launch-bound (the graph launches it all)
        self.replays_graphs = backend.coupling_backend(spec).launches_one_graph
        self.default_threads = None    # torch's own choice, from the worker's run_started
        self.said: set[str] = set()
        self.timed_seconds = self.forward_seconds = 0.0
        self.rss: list[tuple[int, float]] = []      # (timed iteration index, worker RSS)
        self._rss_iterations = 0                     # distinct iterations in self.rss
        self._next_rss_look = 3 * MIN_LEAK_ITERATIONS
        self.idle: list[tuple[float, float]] = []   # (idle cores it may use, worker CPU %)
        self.gpu_util: list[float] = []

    @property
    def threads(self):
        """Torch intra-op threads per worker process, once known."""
        return self.spec.threads or self.default_threads

    def _once(self, check: str, message: str, setting: str) -> list[dict]:
        if check in self.said:
            return []
        self.said.add(check)
        return [{"check": check, "level": "warning", "message": message, "setting": setting}]

    # -- before the run ------------------------------------------------------------------
    def before_run(self) -> list[dict]:
        return self._oversubscribed()

    def _oversubscribed(self) -> list[dict]:
        threads = self.threads
        if self.mpi or not threads or threads <= self.cores:
            # MPI: rank 0 judges every node from the ranks' own placement (cores, threads,
            # the node's CPUs), whichever node the parent runs on (backends/mpi/nodes.py)
            return []
        return self._once("oversubscribed",
                          f"{threads} torch threads on {self.cores} available core(s): the threads "
                          f"compete for cores and slow each other down; use --threads {self.cores}",
                          "--threads")

    # -- events from the worker ------------------------------------------------------------
    def on_event(self, ev: dict) -> list[dict]:
        ev = events.typed(ev)
        kind = ev.event
        if kind == "rank_info" and not self.placement_known:
            # a launcher that may place ranks elsewhere (srun, host lists) placed them all on
            # one node, and that node is this host: the parent's cores are theirs
            self._rank_hosts[ev.rank] = (ev.node or ev.host, ev.host)
            places = set(self._rank_hosts.values())
            if len(self._rank_hosts) == self.ranks and len(places) == 1 and places.pop()[1] == _here():
                self.placement_known = True
        if kind == "run_started" and self.default_threads is None:
            threads = (ev.environment or {}).get("torch_threads")
            if _num(threads) and threads >= 1:
                self.default_threads = int(threads)
                return self._oversubscribed()
        elif kind == "iteration" and ev.kind == "timed" and _num(ev.seconds):
            self.timed_seconds += ev.seconds
            forward = (ev.phases or {}).get("forward")
            self.forward_seconds += forward if _num(forward) else 0.0
        elif kind == "iterations" and ev.kind == "timed" and "ns" in ev:   # nanoseconds: summed whole
            self.timed_seconds += sum(ev["ns"]) / 1e9
            self.forward_seconds += sum(filter(None, ev.get("phases_ns", {}).get("forward") or ())) / 1e9
        elif kind == "iterations" and ev.kind == "timed":   # the batch's columns: no call by call
            self.timed_seconds += sum(s for s in ev.seconds if _num(s))
            self.forward_seconds += sum(f for f in (ev.phases.get("forward") or []) if _num(f))
        return []

    # -- telemetry samples -----------------------------------------------------------------
    def on_sample(self, sample: dict) -> list[dict]:
        iteration = sample.get("iteration")
        if not iteration:   # loading or finishing: the worker is not in its steady state
            return []
        workers = [p for p in sample.get("processes", []) if p.get("role") == "worker"]
        found = self._bound(workers)
        if iteration.get("kind") != "timed":
            return found
        # a node's sample of a multi-node job carries the job's total (the listener's sum of
        # every node's latest), so the leak check sees the job, not one node after another
        rss = [sample["job_rss"]] if "job_rss" in sample else [p.get("rss") for p in workers]
        index = iteration.get("index", 0)
        if rss and all(_num(r) for r in rss):
            if not self.rss or self.rss[-1][0] != index:
                self._rss_iterations += 1
            self.rss.append((index, float(sum(rss))))
        self._collect_idle(workers, (sample.get("system") or {}).get("cpu_percent"))
        self._collect_gpu(sample.get("gpu"))
        # a verdict during the run only on plenty of iterations (the plateau is only known
        # in hindsight), looked at again each time they double (each look reads them all)
        if self._rss_iterations >= self._next_rss_look:
            self._next_rss_look *= 2
            found += self._rss_growth(running=index)
        if len(self.idle) >= 5:
            found += self._idle_cores()
        return found

    def finish(self) -> list[dict]:
        """Last look when the worker has ended, with whatever was sampled."""
        found = []
        if self.rss:
            found += self._rss_growth()
        if len(self.idle) >= 3:
            found += self._idle_cores()
        if len(self.gpu_util) >= 3:
            found += self._launch_bound()
        return found

    def _bound(self, workers: list) -> list[dict]:
        threads = self.threads
        for p in workers:
            affinity = p.get("affinity")
            if not (threads and isinstance(affinity, list) and affinity):
                continue
            if len(affinity) < threads and len(affinity) < self.cores:
                rank = f" (rank {p['rank']})" if _num(p.get("rank")) else ""
                return self._once(
                    "bound",
                    f"worker process {p['pid']}{rank} is bound to {len(affinity)} core(s) "
                    f"{sorted(affinity)} but runs {threads} torch threads, which take turns on "
                    f"them; use --threads {len(affinity)}, or let it use more cores (for MPI "
                    f"ranks: the launcher's binding, e.g. --launcher-args '--bind-to none')",
                    "--threads")
        return []

    def _collect_idle(self, workers: list, cores) -> None:
        if self.threads != 1 or not isinstance(cores, list) or not workers:
            return
        cpus = [p.get("cpu_percent") for p in workers]
        if not all(_num(c) for c in cpus):
            return
        if self.mpi:   # ranks each bound to one core while the run's other cores idle
            affinities = [p.get("affinity") for p in workers]
            if (self.ranks >= self.cores or not self.placement_known
                    or not all(isinstance(a, list) and len(a) == 1 for a in affinities)):
                return
            mine = range(len(cores))
        else:
            affinity = workers[0].get("affinity")
            if not isinstance(affinity, list) or len(affinity) < 2:
                return
            mine = affinity
        idle = sum(max(0.0, 100.0 - cores[c]) / 100.0 for c in mine if c < len(cores))
        self.idle.append((idle, statistics.fmean(cpus)))

    def _idle_cores(self) -> list[dict]:
        idle = statistics.fmean(i for i, _ in self.idle)
        busy = statistics.fmean(c for _, c in self.idle)
        if idle < 0.75 or busy < 60.0:   # nothing to gain, or the worker is not CPU-bound
            return []
        if self.mpi:
            per_rank = max(1, self.cores // self.ranks)
            return self._once(
                "idle_cores",
                f"each of the {self.ranks} ranks is bound to one core and runs one torch thread "
                f"while about {idle:.1f} of the {self.cores} cores sit idle (why CPU inference under "
                f"mpirun/srun can run several times slower): give each rank {per_rank} cores and "
                f"threads (--threads {per_rank} with --launcher-args '--map-by slot:PE={per_rank}' "
                f"or '--bind-to none'), or run more --ranks",
                "--threads, --launcher-args, --ranks")
        return self._once(
            "idle_cores",
            f"torch runs one thread (worker CPU {busy:.0f}% of one core) while about {idle:.1f} of "
            f"the cores it may use sit idle; use --threads {self.cores} to let torch use them",
            "--threads")

    def _rss_growth(self, running: int | None = None) -> list[dict]:
        """A leak: the memory the worker keeps between calls rises steadily, after the plateau.

        Per timed iteration the lowest RSS sampled (what stays between calls; a forward's
        own allocations come and go within the call and made the last sample noisy). The
        first PLATEAU_FRACTION of the iterations are left out: caches filling up is not a
        leak. The rest, in thirds, must rise from each third to the next (a step, such as a
        cache allocated once, rises in one place only), by at least LEAK_MIN_BYTES and
        LEAK_MIN_FRACTION overall; the rate is a least-squares slope over them. `running`:
        the iteration under way (its lowest RSS is not known yet), left out.
        """
        troughs: dict[int, float] = {}
        for index, rss in self.rss:
            if index != running:
                troughs[index] = min(rss, troughs.get(index, rss))
        samples = sorted(troughs.items())
        kept = samples[int(len(samples) * PLATEAU_FRACTION):]
        if len(kept) < MIN_LEAK_ITERATIONS:
            return []
        third = len(kept) // 3
        groups = [kept[:third], kept[third:2 * third], kept[2 * third:]]
        m1, m2, m3 = (statistics.median(r for _, r in g) for g in groups)
        grew = m3 - m1
        if grew < max(LEAK_MIN_BYTES, LEAK_MIN_FRACTION * m1):
            return []
        if min(m2 - m1, m3 - m2) < grew / 4:   # not steady: one step, or rising then flat
            return []
        (i0, r0), (i1, r1) = kept[0], kept[-1]
        xs, ys = [i for i, _ in kept], [r for _, r in kept]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        spread = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / spread if spread else 0.0
        rate = (f"{slope / MIB:.1f} MiB" if slope >= MIB else f"{slope / 1024:.0f} KiB")
        setting = ("--reload-every-call" if self.spec.reload_every_call
                   else "the coupling/model code (what it keeps between calls)")
        return self._once(
            "rss_growth",
            f"the worker's memory (RSS) kept growing across the timed iterations after the "
            f"warm-up plateau, from {r0 / MIB:.0f} MiB to {r1 / MIB:.0f} MiB (iterations {i0}-{i1}, "
            f"about {rate} per iteration): something keeps a reference every call (a leak in the "
            f"coupling or model); "
            + ("--reload-every-call reloads the model each call: turn it off"
               if self.spec.reload_every_call else "check what the coupling or model stores between calls"),
            setting)

    def _collect_gpu(self, gpus) -> None:
        index = _device_index(self.spec.device)
        if index is None or self.replays_graphs or not isinstance(gpus, list):
            return
        used = [g for g in gpus if _num(g.get("worker_memory")) and g["worker_memory"] > 0]
        pick = used or [g for g in gpus if g.get("index") == index]
        utils = [g.get("utilization") for g in pick if _num(g.get("utilization"))]
        if utils:
            self.gpu_util.append(max(utils))

    def _launch_bound(self) -> list[dict]:
        util = statistics.fmean(self.gpu_util)
        share = self.forward_seconds / self.timed_seconds if self.timed_seconds > 0 else 0.0
        if util >= LAUNCH_BOUND_UTIL or share < 0.5:
            return []
        return self._once(
            "launch_bound",
            f"the GPU was busy only {util:.0f}% of the time while forward took {share:.0%} of each "
            f"iteration: the run is launch-bound (the CPU issues many small kernels one by one); "
            f"capture forward once and replay it with --backend cudagraph",
            "--backend cudagraph")
