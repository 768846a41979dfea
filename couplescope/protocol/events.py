"""The event protocol: the only thing front ends and exporters know about a run.

A worker writes one JSON object per line; every object has "event" (its type), "t"
(seconds since the epoch) and "variant" (the variant's name). Anything that can print
these lines is a worker, whatever language it is written in. The parent adds events of
its own (telemetry, diagnostics, where traces went) through the same function, so
events.jsonl holds everything a run produced and results.json can always be rebuilt
from it (couplescope.core.replay).

`EVENTS` below is the single source of truth: every producer builds events with
`make`, which refuses unknown types, and a test checks that docs/results.md documents
exactly these types and fields and that real runs emit nothing else.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class EventType:
    source: str                       # "worker" or "parent"
    doc: str
    fields: dict                      # field -> one-line meaning (required)
    optional: dict                    # field -> one-line meaning (present in some runs)


EVENTS: dict[str, EventType] = {
    "run_started": EventType(
        "worker", "a variant's worker has started",
        {"spec": "the RunSpec as a dict", "environment": "versions, threads, CPU, host, pid"},
        {"coupling": "the backend and what it runs, in words"}),
    "rank_info": EventType(
        "worker", "one per rank of a multi-process variant: where it runs",
        {"rank": "rank number", "world_size": "ranks in the job", "local_rank": "rank on its node",
         "local_size": "ranks on its node", "host": "host name", "pid": "process id",
         "cores": "cores it is bound to", "cores_text": "the same as text (0-2,5)",
         "host_cores": "cores of its host", "threads": "torch intra-op threads",
         "threads_from": "what set them", "interop_threads": "torch inter-op threads",
         "device": "its device", "visible_devices": "CUDA devices it sees"}, {}),
    "model_loaded": EventType(
        "worker", "the model is loaded and the coupling is ready (the run directory appears now)",
        {"seconds": "load time (the slowest rank's)", "size": "the size parameter", "dtype": "dtype",
         "tolerance": "the check's tolerance", "backend": "the backend",
         "inputs": "host input shapes by name", "outputs": "host output shapes by name"},
        {"ranks": "ranks in the job", "per_rank_seconds": "load time per rank",
         "inner_backend": "the coupling each rank runs",
         "torchscript": "the calls run a TorchScript module (false: eager Python, a user's module, AOTInductor)"}),
    "model_compiled": EventType(
        "worker", "the model was compiled before its load (aoti: torch.export + AOTInductor, or "
                  "its package found in the cache; the bridge's compiled model: torch.compile's "
                  "first call); comes just before model_loaded",
        {"status": "compiled or cached", "seconds": "compile time, not in the load time (0 when cached)",
         "compiler": "AOTInductor or torch.compile"},
        {"export_seconds": "torch.export's share of seconds (aoti)",
         "package": "the .pt2 package, in the cache directory (aoti)"}),
    "iteration": EventType(
        "worker", "one call measured and checked",
        {"index": "1-based within its kind", "kind": "warmup, timed or profiled",
         "seconds": "the whole call", "phases": "seconds per phase",
         "max_rel_error": "the check's error (NaN and inf as strings)", "passed": "the check passed",
         "error": "why the call failed (or null)"},
        {"rank": "the rank that made the call (multi-process variants)"}),
    "iterations": EventType(
        "worker", "consecutive calls of one kind, measured back to back by the native host and "
                  "each checked, as columns (one event per batch instead of one per call)",
        {"kind": "warmup, timed or profiled", "first_index": "index of the first call (1-based)",
         "seconds": "the whole call, per call", "phases": "phase -> seconds per call (null: absent)",
         "max_rel_error": "the check's error per call (NaN and inf as strings)",
         "passed": "the check passed, per call", "error": "why each call failed (or null)"}, {}),
    "variant_finished": EventType(
        "worker", "the variant ran to its end",
        {"summary": "what the worker adds to results.json (profile, trace_summary, ranks)"}, {}),
    "variant_failed": EventType(
        "worker", "the variant ended early",
        {"reason": "one line", "kind": "usage, error or interrupted", "traceback": "for kind error"}, {}),
    "trace_written": EventType(
        "parent", "a profiler trace was moved into the run directory",
        {"path": "absolute path of the file"},
        {"relative_path": "the same, relative to the run directory"}),
    "host_build": EventType(
        "parent", "the native host a variant runs on: being compiled (first use), built, or cached",
        {"status": "building, built or cached", "directory": "the cache directory of this build"},
        {"seconds": "compile time (built)", "message": "what is happening, in words (building)"}),
    "telemetry": EventType(
        "parent", "one CPU/GPU sample of the worker's process tree",
        {"sample": "see docs/telemetry.md"}, {}),
    "diagnostic": EventType(
        "parent", "a warning about how the run uses the machine (ranks warn from the worker)",
        {"level": "warning", "message": "plain words", "setting": "the option to change"},
        {"check": "which check spoke", "rank": "the rank that spoke (multi-process variants)"}),
    "worker_output": EventType(
        "parent", "what a variant's worker printed (a user module's print()s, warnings), "
                  "sent once the worker has ended",
        {"lines": "its last lines (at most 1000)", "total": "how many lines it printed"}, {}),
    "log": EventType(
        "parent", "a line for the user (also from the worker)",
        {"message": "the text"}, {"verbatim": "print as is, without the variant's name"}),
}

TYPES = tuple(EVENTS)
#: the events that end a variant
ENDINGS = ("variant_finished", "variant_failed")


def make(event: str, variant: str, **fields) -> dict:
    """An event of a known type. The one constructor every producer uses."""
    if event not in EVENTS:
        raise ValueError(f"unknown event type {event!r}")
    return {"event": event, "t": time.time(), "variant": variant, **fields}


def conforms(event: dict) -> str | None:
    """Why `event` does not match the table (a missing or unknown field), or None."""
    kind = EVENTS.get(event.get("event"))
    if kind is None:
        return f"unknown event type {event.get('event')!r}"
    required = {"event", "t", "variant", *kind.fields}
    missing = required - event.keys()
    if missing:
        return f"{event['event']} lacks {', '.join(sorted(missing))}"
    unknown = event.keys() - required - kind.optional.keys()
    if unknown:
        return f"{event['event']} has undocumented {', '.join(sorted(unknown))}"
    return None


def _clean(value):
    """JSON has no NaN or infinity: write them as strings that `parse` turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


#: json's C encoder, made once (json.dumps with options builds a new encoder per call)
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def dumps(event: dict) -> str:
    """One line of JSON. Nearly every event is plain JSON as it is; the rare one holding a
    NaN or an infinity (a failed check's error) is cleaned first."""
    try:
        return _encode(event)
    except ValueError:
        return _encode(_clean(event))


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
    if not isinstance(obj, dict) or obj.get("event") not in EVENTS:
        return None
    if obj["event"] == "iteration" and isinstance(obj.get("max_rel_error"), str):
        obj["max_rel_error"] = _SPECIAL.get(obj["max_rel_error"], float("nan"))
    elif obj["event"] == "iterations" and isinstance(obj.get("max_rel_error"), list):
        obj["max_rel_error"] = [_SPECIAL.get(e, float("nan")) if isinstance(e, str) else e
                                for e in obj["max_rel_error"]]
    return obj


def iteration_columns(kind: str, first_index: int, records: list[dict]) -> dict:
    """The fields of an `iterations` event from per-call records (index, seconds, phases,
    max_rel_error, passed, error), in order."""
    names = []
    for r in records:
        names.extend(n for n in r["phases"] if n not in names)
    return {"kind": kind, "first_index": first_index,
            "seconds": [r["seconds"] for r in records],
            "phases": {n: [r["phases"].get(n) for r in records] for n in names},
            "max_rel_error": [r["max_rel_error"] for r in records],
            "passed": [r["passed"] for r in records],
            "error": [r["error"] for r in records]}


def expand(ev: dict) -> list[dict]:
    """The `iteration` events an `iterations` event stands for (any other event: itself).

    For consumers that handle calls one at a time; they see exactly what a worker that
    reports every call on its own would have written."""
    if ev["event"] != "iterations":
        return [ev]
    phases = ev["phases"]
    first, kind, base = ev["first_index"], ev["kind"], {"t": ev["t"], "variant": ev["variant"]}
    return [{"event": "iteration", **base, "index": first + i, "kind": kind, "seconds": seconds,
             "phases": {n: v[i] for n, v in phases.items() if v[i] is not None},
             "max_rel_error": ev["max_rel_error"][i], "passed": ev["passed"][i], "error": ev["error"][i]}
            for i, seconds in enumerate(ev["seconds"])]


def read_jsonl(path: str) -> list[dict]:
    """Every event of an events.jsonl file, in order (lines that are not events skipped)."""
    with open(path, encoding="utf-8") as f:
        return [ev for ev in map(parse, f) if ev is not None]
