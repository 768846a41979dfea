"""Telemetry series, the bounded timeline and the per-variant summary in results.json.

Kept apart from the sampler so results.py and the headless printer can read telemetry
without importing psutil, NVML or the session machinery. `scalar_series` is the one
definition of the plotted series: the timeline in results.json and the TensorBoard
scalars use the same names. Values that could not be read are "n/a" and are left out
of series, means and peaks.
"""

from __future__ import annotations

NA = "n/a"
#: at most this many timeline entries per variant in results.json (older ones thinned 2:1)
TIMELINE_BOUND = 2000
MIB = 1024 * 1024


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
    put("memory_percent", system.get("memory_percent"))
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
    """

    def __init__(self, bound: int = TIMELINE_BOUND) -> None:
        self.bound, self.stride, self.seen = bound, 1, 0
        self.timeline: list[dict] = []
        self.first_t = self.last_t = None
        self.stats = {k: _Stat() for k in ("cpu", "cpu_timed", "rss", "threads", "processes", "system")}
        self.gpus: dict[int, dict] = {}
        self.gpu_note = None

    def add(self, ev: dict) -> None:
        sample = ev.get("sample") or {}
        if self.seen % self.stride == 0:
            entry = {"t": ev.get("t"), "elapsed": sample.get("elapsed"), "iteration": sample.get("iteration")}
            entry.update(scalar_series(sample))
            self.timeline.append(entry)
            if len(self.timeline) > self.bound:
                self.timeline = self.timeline[::2]
                self.stride *= 2
        self.seen += 1
        self.first_t = self.first_t if self.first_t is not None else ev.get("t")
        self.last_t = ev.get("t")
        tree, s = sample.get("tree", {}), self.stats
        s["cpu"].add(tree.get("cpu_percent"))
        if (sample.get("iteration") or {}).get("kind") == "timed":
            s["cpu_timed"].add(tree.get("cpu_percent"))
        s["rss"].add(tree.get("rss"))
        s["threads"].add(tree.get("threads"))
        s["processes"].add(tree.get("processes"))
        cores = (sample.get("system") or {}).get("cpu_percent")
        if isinstance(cores, list) and cores:
            s["system"].add(sum(cores) / len(cores))
        gpu = sample.get("gpu")
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
               "rate_hz": round((self.seen - 1) / duration, 2) if duration not in (NA, 0) else NA,
               "cpu_percent_mean": s["cpu"].mean(), "cpu_percent_peak": s["cpu"].max(),
               "cpu_percent_mean_timed": s["cpu_timed"].mean(),
               "rss_peak": s["rss"].max(), "threads_peak": s["threads"].max(),
               "processes_peak": s["processes"].max(), "system_cpu_percent_mean": s["system"].mean()}
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
        return {"summary": self.summary(), "timeline_stride": self.stride, "timeline": self.timeline}


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


def summary_line(record: TelemetryRecord) -> str:
    """One line for the headless output, after a variant's statistics."""
    s = record.summary()
    gpu = (f"GPU util mean {_pct(s['gpu_utilization_mean'])} peak {_pct(s['gpu_utilization_peak'])}, "
           f"GPU memory peak {_mib(s['gpu_memory_peak'])}" if s["gpus"] != NA else "GPU n/a")
    rate = f"{s['rate_hz']:.0f} Hz" if is_number(s["rate_hz"]) else "n/a Hz"
    return (f"telemetry: worker CPU mean {_pct(s['cpu_percent_mean'])} (timed "
            f"{_pct(s['cpu_percent_mean_timed'])}) peak {_pct(s['cpu_percent_peak'])} of one core, "
            f"RSS peak {_mib(s['rss_peak'])}, threads peak {s['threads_peak']}, "
            f"system CPU mean {_pct(s['system_cpu_percent_mean'])}, {gpu} "
            f"({s['samples']} samples, {rate})")
