"""Telemetry series, the bounded timeline and the per-variant summary in results.json.

Kept apart from the sampler so results.py and the headless printer can read telemetry
without importing psutil, NVML or the session machinery. `scalar_series` is the one
definition of the plotted series: the timeline in results.json and the TensorBoard
scalars use the same names. Values that could not be read are "n/a" and are left out
of series, means and peaks.
"""

from __future__ import annotations

from couplescope.probes.tree import NA, others_cpu_percent

#: at most this many timeline entries per variant in results.json (older ones thinned 2:1)
TIMELINE_BOUND = 2000
MIB = 1024 * 1024
#: a gap between two samples longer than this is a pause (a worker waiting for its next
#: round), not sampling: the rate counts the time sampled only
PAUSE_SECONDS = 2.0


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def scalar_series(sample: dict) -> dict:
    """name -> number for plotting (TensorBoard scalars, the timeline); "n/a" values left out."""
    out = {}

    def put(name, value, scale=1.0):
        if is_number(value):
            out[name] = round(value / scale, 3) if scale != 1.0 else value
    tree, system = sample.get("tree", {}), sample.get("system", {})
    put("cpu_percent", tree.get("cpu_percent"))
    put("rss_mib", tree.get("rss"), MIB)
    put("threads", tree.get("threads"))
    cores = system.get("cpu_percent")
    if isinstance(cores, list) and cores:
        put("system_cpu_percent", sum(cores) / len(cores))
    put("others_cpu_percent", others_cpu_percent(sample))
    put("memory_percent", system.get("memory_percent"))
    load = system.get("load")
    if isinstance(load, list) and load:
        put("load", load[0])
    for p in sample.get("processes", []):
        if p.get("role") == "worker" and is_number(p.get("rank")):
            put(f"rank{p['rank']}/cpu_percent", p.get("cpu_percent"))
            put(f"rank{p['rank']}/rss_mib", p.get("rss"), MIB)
    if isinstance(sample.get("gpu"), list):
        for g in sample["gpu"]:
            i = g.get("index")
            put(f"gpu{i}/utilization", g.get("utilization"))
            put(f"gpu{i}/memory_used_mib", g.get("memory_used"), MIB)
            put(f"gpu{i}/worker_memory_mib", g.get("worker_memory"), MIB)
            put(f"gpu{i}/power_w", g.get("power_w"))
            put(f"gpu{i}/temperature_c", g.get("temperature_c"))
            put(f"gpu{i}/sm_clock_mhz", g.get("sm_clock_mhz"))
    return out


class _Stat:
    __slots__ = ("total", "n", "peak")

    def __init__(self) -> None:
        self.total, self.n, self.peak = 0.0, 0, None

    def add(self, value) -> None:
        if is_number(value):
            self.total += value
            self.n += 1
            self.peak = value if self.peak is None else max(self.peak, value)

    def mean(self):
        return round(self.total / self.n, 2) if self.n else NA

    def max(self):
        return self.peak if self.peak is not None else NA


class TelemetryRecord:
    """One variant's telemetry in results.json: a bounded timeline and a summary of all samples.

    The timeline keeps every `stride`-th sample; when it passes TIMELINE_BOUND, every
    second entry is dropped and the stride doubles, so an hour at 10 Hz stays about as
    small as a minute. The summary is accumulated from every sample, never the thinned ones.

    Samples labelled with a node (a multi-node job's node samplers) go to that node's own
    record (`nodes`: its ranks' series, its cores, its GPUs), and the variant's figures
    are the job's: at each node sample, the sums of every node's latest tree (CPU, RSS,
    threads, processes), kept up to date by difference, so a sample costs the same
    whatever the number of nodes.
    """

    def __init__(self, bound: int = TIMELINE_BOUND) -> None:
        self.bound, self.stride, self.seen = bound, 1, 0
        self.timeline: list[dict] = []
        self.first_t = self.last_t = None
        self.sampling = 0.0   # seconds between samples, gaps of PAUSE_SECONDS and more left out
        self.stats = {k: _Stat() for k in ("cpu", "cpu_timed", "rss", "threads", "processes", "system",
                                           "others_timed")}
        self.gpus: dict[int, dict] = {}
        self.gpu_note = None
        self.nodes: dict[str, TelemetryRecord] = {}
        self._node_latest: dict[str, tuple] = {}   # node -> (cpu, rss, threads, processes, system)
        self._job = [0.0, 0.0, 0.0, 0.0, 0.0]        # their sums

    def add(self, ev: dict) -> None:
        sample = ev.get("sample") or {}
        node = ev.get("node")
        if node is not None:
            self._add_node(node, ev, sample)
            return
        self._accumulate(ev.get("t"), sample, scalar_series(sample), sample.get("gpu"))

    def _add_node(self, node: str, ev: dict, sample: dict) -> None:
        record = self.nodes.get(node)
        if record is None:
            record = self.nodes[node] = TelemetryRecord(self.bound)
        record._accumulate(ev.get("t"), sample, scalar_series(sample), sample.get("gpu"))
        tree, cores = sample.get("tree", {}), (sample.get("system") or {}).get("cpu_percent")
        now = tuple(v if is_number(v) else 0.0 for v in (tree.get("cpu_percent"), tree.get("rss"),
                                                          tree.get("threads"), tree.get("processes")))
        now += (sum(cores) / len(cores) if isinstance(cores, list) and cores else 0.0,)
        before = self._node_latest.get(node, (0.0,) * 5)
        self._node_latest[node] = now
        for i in range(5):
            self._job[i] += now[i] - before[i]
        cpu, rss, threads, processes, system = self._job
        job = {"iteration": sample.get("iteration"), "elapsed": sample.get("elapsed"),
               "tree": {"cpu_percent": round(cpu, 1), "rss": int(rss), "threads": int(threads),
                        "processes": int(processes)},
               "system": {"cpu_percent": [system / len(self._node_latest)]}}
        gpus = sample.get("gpu")   # the job's devices, named by node: n1:0, n2:0
        if isinstance(gpus, list):
            gpus = [{**g, "index": f"{node}:{g.get('index')}"} for g in gpus]
        series = scalar_series({"tree": job["tree"]})
        series["nodes"] = len(self._node_latest)
        self._accumulate(ev.get("t"), job, series, gpus)

    def _accumulate(self, t, sample: dict, series: dict, gpu) -> None:
        if self.seen % self.stride == 0:
            entry = {"t": t, "elapsed": sample.get("elapsed"), "iteration": sample.get("iteration")}
            entry.update(series)
            self.timeline.append(entry)
            if len(self.timeline) > self.bound:
                self.timeline = self.timeline[::2]
                self.stride *= 2
        self.seen += 1
        self.first_t = self.first_t if self.first_t is not None else t
        if self.last_t is not None and t is not None and 0 <= t - self.last_t <= PAUSE_SECONDS:
            self.sampling += t - self.last_t   # a run in rounds: the waits between are left out
        self.last_t = t
        tree, s = sample.get("tree", {}), self.stats
        s["cpu"].add(tree.get("cpu_percent"))
        if (sample.get("iteration") or {}).get("kind") == "timed":
            s["cpu_timed"].add(tree.get("cpu_percent"))
            s["others_timed"].add(others_cpu_percent(sample))
        s["rss"].add(tree.get("rss"))
        s["threads"].add(tree.get("threads"))
        s["processes"].add(tree.get("processes"))
        cores = (sample.get("system") or {}).get("cpu_percent")
        if isinstance(cores, list) and cores:
            s["system"].add(sum(cores) / len(cores))
        if isinstance(gpu, list):
            for g in gpu:
                d = self.gpus.setdefault(g.get("index"), {"name": g.get("name"), "memory_total": NA,
                                                          **{k: _Stat() for k in _GPU_KEYS}})
                if is_number(g.get("memory_total")):
                    d["memory_total"] = g["memory_total"]
                for k in _GPU_KEYS:
                    d[k].add(g.get(k))

    def summary(self) -> dict:
        s = self.stats
        duration = (self.last_t - self.first_t) if self.seen > 1 else NA
        out = {"samples": self.seen, "duration_s": round(duration, 3) if duration != NA else NA,
               "rate_hz": round((self.seen - 1) / self.sampling, 2) if self.seen > 1 and self.sampling else NA,
               "cpu_percent_mean": s["cpu"].mean(), "cpu_percent_peak": s["cpu"].max(),
               "cpu_percent_mean_timed": s["cpu_timed"].mean(),
               "rss_peak": s["rss"].max(), "threads_peak": s["threads"].max(),
               "processes_peak": s["processes"].max(), "system_cpu_percent_mean": s["system"].mean(),
               # other processes than couplescope's, percent of one core, while timed
               "others_cpu_percent_mean_timed": s["others_timed"].mean()}
        if self.nodes:   # the job's samples come from every node: the rate is each node's
            rates = [r.summary()["rate_hz"] for r in self.nodes.values()]
            rates = [r for r in rates if is_number(r)]
            out["rate_hz"] = round(sum(rates) / len(rates), 2) if rates else NA
        if not self.gpus:
            out.update({"gpu_utilization_mean": NA, "gpu_utilization_peak": NA, "gpu_memory_peak": NA,
                        "gpu_worker_memory_peak": NA, "gpus": NA})
            return out
        devices = [{"index": i, "name": d["name"], "memory_total": d["memory_total"],
                    "utilization_mean": d["utilization"].mean(), "utilization_peak": d["utilization"].max(),
                    "memory_used_peak": d["memory_used"].max(), "worker_memory_peak": d["worker_memory"].max(),
                    "power_w_peak": d["power_w"].max(), "temperature_c_peak": d["temperature_c"].max()}
                   for i, d in sorted(self.gpus.items(), key=lambda kv: str(kv[0]))]
        # headline GPU figures: the busiest device (the one the worker used, on one-GPU runs)
        busiest = max(devices, key=lambda d: d["utilization_peak"] if is_number(d["utilization_peak"]) else -1)
        out.update({"gpu_utilization_mean": busiest["utilization_mean"],
                    "gpu_utilization_peak": busiest["utilization_peak"],
                    "gpu_memory_peak": busiest["memory_used_peak"],
                    "gpu_worker_memory_peak": busiest["worker_memory_peak"], "gpus": devices})
        return out

    def to_dict(self) -> dict:
        out = {"summary": self.summary(), "timeline_stride": self.stride, "timeline": self.timeline}
        if self.nodes:
            out["summary"]["nodes"] = len(self.nodes)
            out["nodes"] = {name: record.to_dict() for name, record in self.nodes.items()}
        return out


_GPU_KEYS = ("utilization", "memory_used", "worker_memory", "power_w", "temperature_c")


def record_sample(variant_result, ev: dict) -> None:
    """results.py's hook: add a telemetry event to a VariantResult's TelemetryRecord."""
    if getattr(variant_result, "telemetry", None) is None:
        variant_result.telemetry = TelemetryRecord()
    variant_result.telemetry.add(ev)


def _pct(v) -> str:
    return f"{v:.0f}%" if is_number(v) else NA


def _mib(v) -> str:
    return f"{v / MIB:.0f} MiB" if is_number(v) else NA


#: nodes the headless output gives a line each; the rest are in results.json
NODE_LINES = 8


def summary_line(record: TelemetryRecord) -> str:
    """The headless output's lines after a variant's statistics: one, or for a job sampled
    on its nodes, the job's and then one per node (up to NODE_LINES)."""
    s = record.summary()
    if not record.nodes:
        return "telemetry: " + _figures(s, "worker")
    lines = [f"telemetry (sampled on each of {len(record.nodes)} node{'s' if len(record.nodes) > 1 else ''}, "
             f"ranks summed): " + _figures(s, "ranks")]
    for name, node in list(record.nodes.items())[:NODE_LINES]:
        n = node.summary()
        load = _load(node)
        lines.append(f"  {name}: " + _figures(n, "ranks") + (f", load {load}" if load else ""))
    if len(record.nodes) > NODE_LINES:
        lines.append(f"  ... and {len(record.nodes) - NODE_LINES} more nodes (results.json: telemetry.nodes)")
    return "\n".join(lines)


def _figures(s: dict, who: str) -> str:
    gpu = (f"GPU util mean {_pct(s['gpu_utilization_mean'])} peak {_pct(s['gpu_utilization_peak'])}, "
           f"GPU memory peak {_mib(s['gpu_memory_peak'])}" if s["gpus"] != NA else "GPU n/a")
    rate = f"{s['rate_hz']:.0f} Hz" if is_number(s["rate_hz"]) else "n/a Hz"
    return (f"{who} CPU mean {_pct(s['cpu_percent_mean'])} (timed "
            f"{_pct(s['cpu_percent_mean_timed'])}) peak {_pct(s['cpu_percent_peak'])} of one core, "
            f"RSS peak {_mib(s['rss_peak'])}, threads peak {s['threads_peak']}, "
            f"system CPU mean {_pct(s['system_cpu_percent_mean'])}, {gpu} "
            f"({s['samples']} samples, {rate})")


def _load(record: TelemetryRecord) -> str:
    """The node's last 1-minute load average, from its timeline."""
    for entry in reversed(record.timeline):
        if is_number(entry.get("load")):
            return f"{entry['load']:.2f}"
    return ""
