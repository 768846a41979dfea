"""The profiled window's trace summary (results.json's trace_summary) in a few lines.

Its phase times are the profiler's: each phase of a profiled iteration is a profiler
range around operators that are recorded too, 10 to 50 times the timed phase of a
microsecond model (issue 30 saw SimpleNet's zero_grad at 2.66 ms profiled beside 328 ns
timed). The line says
so, and the printer puts it after the timings, so the two are never read as one."""

from __future__ import annotations

from couplescope.frontends.formatting import seconds as _secs


def format_lines(summary: dict, top: int = 5) -> list[str]:
    """A few lines for a terminal: top operators, time per phase, the GPU if any."""
    if not summary:
        return []
    lines = []
    ops = summary.get("top_operators") or []
    if ops:
        parts = []
        for op in ops[:top]:
            share = f" ({op['self_share'] * 100:.0f}%)" if op.get("self_share") is not None else ""
            parts.append(f"{op['name']} {_secs(op['self_seconds'])}{share}")
        lines.append("trace: top operators by self time: " + ", ".join(parts))
    phases = summary.get("phases") or {}
    if phases:
        per = "per iteration" if summary.get("iterations") else "in total"
        key = "per_iteration_seconds" if summary.get("iterations") else "total_seconds"
        lines.append(f"trace: time per phase under the profiler ({per}; not the timings): "
                     + ", ".join(f"{name} {_secs(p[key])}" for name, p in phases.items()))
    gpu = summary.get("gpu")
    if gpu:
        gaps = gpu.get("launch_gaps") or {}
        text = "trace: GPU busy " + (f"{gpu['busy_share'] * 100:.0f}%, idle {gpu['idle_share'] * 100:.0f}%"
                                     if gpu.get("busy_share") is not None else "n/a")
        if gaps.get("count"):
            text += f", launch gaps median {_secs(gaps['median_seconds'])}, max {_secs(gaps['max_seconds'])}"
        if not gpu.get("reliable", True):
            text += " (unreliable: CUDA Graph replays in the trace)"
        lines.append(text)
    return lines
