"""The event protocol: the only thing the front ends know about a run.

A worker writes one JSON object per line; every object has "event" (its type) and "t"
(seconds since the epoch). Anything that can print these lines is a worker, whatever
language it is written in. Front ends (headless printer, Textual app, exporters) read
them through `parse` and never import the engine.

Types and their fields:
  run_started      variant, spec, environment
  model_loaded     variant, seconds
  iteration        variant, index, kind ("warmup"|"timed"|"profiled"), seconds,
                   phases {name: seconds}, max_rel_error, passed, error, rank
  variant_finished variant, stats, summary (anything else the worker computed)
  variant_failed   variant, reason, kind ("usage"|"error"|"interrupted"), traceback
  trace_written    variant, path
  telemetry        sample (from the parent's sampler)
  diagnostic       variant, level, message, setting
  log              variant, message
"""

from __future__ import annotations

import json
import math
import time

TYPES = ("run_started", "model_loaded", "iteration", "variant_finished", "variant_failed",
         "trace_written", "telemetry", "diagnostic", "log", "rank_info")


def make(event: str, **fields) -> dict:
    if event not in TYPES:
        raise ValueError(f"unknown event type {event!r}")
    return {"event": event, "t": time.time(), **fields}


def _clean(value):
    """JSON has no NaN or infinity: write them as strings that `parse` turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def dumps(event: dict) -> str:
    return json.dumps(_clean(event), separators=(",", ":"))


_SPECIAL = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def parse(line: str) -> dict | None:
    """Return the event on a line, or None for a line that is not one (stray output)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("event") not in TYPES:
        return None
    if obj["event"] == "iteration" and isinstance(obj.get("max_rel_error"), str):
        obj["max_rel_error"] = _SPECIAL.get(obj["max_rel_error"], float("nan"))
    return obj
