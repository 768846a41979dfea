"""What a trace says, without a browser: read torch.profiler's Chrome-trace JSON directly.

Plain JSON (gzip or not), no pandas and no torch, so the worker, the parent, the headless
printer and a test can all use it. From the `traceEvents` of one or more files it
computes:
  - the top operators (category cpu_op) by self time: an event's duration minus the
    durations of the events directly nested in it on the same thread;
  - the time per phase: the couplescope/<phase> record_function ranges;
  - on a GPU: the share of the profiled window the device was busy (union of kernel,
    memcpy and memset intervals) versus idle, and the gaps between consecutive kernels
    on a stream (launch gaps). With CUDA Graph replays in the trace the GPU figures are
    marked unreliable: the profiler does not see the kernels inside a replayed graph
    the way it sees launched ones.
Timestamps and durations in these files are microseconds; the summary is in seconds.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections import defaultdict

PHASE_PREFIX = "couplescope/"
STEP_PREFIX = "ProfilerStep#"
#: categories whose events nest on a CPU thread (children reduce a parent's self time)
NESTING = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function"}
DEVICE_ACTIVITY = {"kernel", "gpu_memcpy", "gpu_memset"}
TOP_OPERATORS = 10


def load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    if isinstance(doc, list):   # the bare-array form of the Chrome trace format
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"{path} is not a Chrome trace (no traceEvents list)")
    return doc


def _complete(events):
    for ev in events:
        if ev.get("ph") == "X" and isinstance(ev.get("dur"), (int, float)) and "ts" in ev:
            yield ev


def self_times(events) -> list[tuple[dict, float]]:
    """(event, self microseconds) for every nesting event, per thread, by interval nesting."""
    by_thread = defaultdict(list)
    for ev in _complete(events):
        if ev.get("cat") in NESTING:
            by_thread[(ev.get("pid"), ev.get("tid"))].append(ev)
    out = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[list] = []   # [event, end, children's duration]
        for ev in evs:
            ts, dur = float(ev["ts"]), float(ev["dur"])
            while stack and stack[-1][1] <= ts:
                done = stack.pop()
                out.append((done[0], max(0.0, float(done[0]["dur"]) - done[2])))
            if stack:
                stack[-1][2] += dur
            stack.append([ev, ts + dur, 0.0])
        out.extend((e, max(0.0, float(e["dur"]) - c)) for e, _, c in stack)
    return out


def _union_length(intervals) -> float:
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _is_graph_replay(ev: dict) -> bool:
    name = str(ev.get("name", ""))
    if name.startswith("cudaGraphLaunch"):
        return True
    args = ev.get("args") or {}
    return ev.get("cat") in DEVICE_ACTIVITY and any("graph" in str(k).lower() and v not in (0, -1, None)
                                                    for k, v in args.items())


def summarize_events(events: list, top: int = TOP_OPERATORS) -> dict:
    """The summary of one trace's (or several traces') events; see the module docstring."""
    events = list(events)
    complete = list(_complete(events))
    steps = [ev for ev in complete if ev.get("cat") in ("user_annotation", "cpu_op")
             and str(ev.get("name", "")).startswith(STEP_PREFIX)]
    cpu = [ev for ev in complete if ev.get("cat") in NESTING]
    if steps:
        window = sum(float(s["dur"]) for s in steps)
    elif cpu:
        window = max(float(e["ts"]) + float(e["dur"]) for e in cpu) - min(float(e["ts"]) for e in cpu)
    else:
        window = 0.0
    ops = defaultdict(lambda: [0, 0.0, 0.0])   # name -> count, self, total
    for ev, own in self_times(cpu):
        if ev.get("cat") == "cpu_op":
            agg = ops[ev["name"]]
            agg[0] += 1
            agg[1] += own
            agg[2] += float(ev["dur"])
    ranked = sorted(ops.items(), key=lambda kv: kv[1][1], reverse=True)
    all_self = sum(v[1] for v in ops.values())
    # share of all operators' self time, as the profiler's own "Self CPU %" column
    top_ops = [{"name": name, "count": c, "self_seconds": s / 1e6, "total_seconds": t / 1e6,
                "self_share": (s / all_self) if all_self else None} for name, (c, s, t) in ranked[:top]]
    phases = defaultdict(lambda: [0, 0.0])
    for ev in cpu:
        name = str(ev.get("name", ""))
        if name.startswith(PHASE_PREFIX) and ev.get("cat") in ("user_annotation", "cpu_op"):
            phases[name[len(PHASE_PREFIX):]][0] += 1
            phases[name[len(PHASE_PREFIX):]][1] += float(ev["dur"])
    iterations = len(steps) or None
    phase_out = {name: {"count": c, "total_seconds": d / 1e6,
                        "per_iteration_seconds": (d / 1e6 / iterations) if iterations else None}
                 for name, (c, d) in phases.items()}
    return {"iterations": iterations, "window_seconds": window / 1e6, "operators": len(ops),
            "operator_calls": sum(v[0] for v in ops.values()), "operator_self_seconds": all_self / 1e6,
            "top_operators": top_ops,
            "phases": phase_out, "gpu": gpu_summary(complete, steps, window)}


def gpu_summary(events: list, steps: list, window: float) -> dict | None:
    """Busy/idle share and launch gaps on the device; None when the trace has no GPU activity."""
    device = [ev for ev in events if ev.get("cat") in DEVICE_ACTIVITY and ev.get("ph") == "X"]
    if not device:
        return None
    if steps:
        lo = min(float(s["ts"]) for s in steps)
        hi = max(float(s["ts"]) + float(s["dur"]) for s in steps)
    else:
        lo = min(float(e["ts"]) for e in device)
        hi = max(float(e["ts"]) + float(e["dur"]) for e in device)
    span = hi - lo
    by_device = defaultdict(list)
    by_stream = defaultdict(list)
    for ev in device:
        start, stop = max(float(ev["ts"]), lo), min(float(ev["ts"]) + float(ev["dur"]), hi)
        if stop > start:
            by_device[ev.get("pid")].append((start, stop))
        if ev.get("cat") == "kernel":
            by_stream[(ev.get("pid"), ev.get("tid"))].append((float(ev["ts"]), float(ev["ts"]) + float(ev["dur"])))
    busy = {str(dev): _union_length(iv) for dev, iv in by_device.items()}
    gaps = []
    for kernels in by_stream.values():
        kernels.sort()
        gaps.extend(max(0.0, b[0] - a[1]) for a, b in zip(kernels, kernels[1:]))
    graph = any(_is_graph_replay(ev) for ev in events)
    busy_total = max(busy.values()) if busy else 0.0   # the busiest device, as the plugin does
    share = (busy_total / span) if span > 0 else None
    out = {"devices": sorted(busy), "kernels": sum(1 for ev in device if ev.get("cat") == "kernel"),
           "busy_seconds": busy_total / 1e6, "window_seconds": span / 1e6,
           "busy_share": share, "idle_share": (1.0 - share) if share is not None else None,
           "launch_gaps": ({"count": len(gaps), "median_seconds": statistics.median(gaps) / 1e6,
                            "mean_seconds": statistics.fmean(gaps) / 1e6, "max_seconds": max(gaps) / 1e6}
                           if gaps else {"count": 0}),
           "cuda_graph_replays": graph, "reliable": not graph}
    if graph:
        out["note"] = ("CUDA Graph replays in the trace: kernels inside a replayed graph are not seen "
                       "one by one, so busy share and launch gaps are unreliable")
    return out


def summarize_files(paths) -> dict:
    """The summary over the events of all `paths` (one variant's trace files)."""
    events = []
    for path in paths:
        events.extend(load(path)["traceEvents"])
    summary = summarize_events(events)
    summary["files"] = len(list(paths))
    return summary
