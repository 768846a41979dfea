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

from couplescope.protocol import columns


@dataclass(frozen=True)
class EventType:
    source: str                       # "worker" or "parent"
    doc: str
    fields: dict                      # field -> one-line meaning (required)
    optional: dict                    # field -> one-line meaning (present in some runs)
    one_of: tuple = ()                # optional fields of which every event holds one


EVENTS: dict[str, EventType] = {
    "run_started": EventType(
        "worker", "a variant's worker has started",
        {"spec": "the RunSpec as a dict", "environment": "versions, threads, CPU, host, pid"},
        {"coupling": "the backend and what it runs, in words",
         "label_parts": "the words the backend adds to a variant's name (the bridge's model, mpi's ranks)"}),
    "rank_info": EventType(
        "worker", "one per rank of a multi-process variant: where it runs",
        {"rank": "rank number", "world_size": "ranks in the job", "local_rank": "rank on its node",
         "local_size": "ranks on its node", "host": "host name", "pid": "process id",
         "cores": "cores it is bound to", "cores_text": "the same as text (0-2,5)",
         "host_cores": "cores of its host", "threads": "torch intra-op threads",
         "threads_from": "what set them", "interop_threads": "torch inter-op threads",
         "device": "its device", "visible_devices": "CUDA devices it sees"},
        {"node": "its node: Slurm's node name, else the host name",
         "node_cpus": "CPUs the job may use on its node", "node_cpus_from": "where that number came from",
         "gpu_slot": "the GPU index its node-local rank maps to (local rank mod visible devices)"}),
    "model_loaded": EventType(
        "worker", "the model is loaded and the coupling is ready (the run directory appears now)",
        {"seconds": "load time (the slowest rank's)", "size": "the size parameter", "dtype": "dtype",
         "tolerance": "the check's tolerance", "backend": "the backend",
         "inputs": "host input shapes by name", "outputs": "host output shapes by name"},
        {"ranks": "ranks in the job", "per_rank_seconds": "load time per rank",
         "inner_backend": "the coupling each rank runs",
         "torchscript": "the calls run a TorchScript module (false: eager Python, a user's module, AOTInductor)",
         "training": "--task train: the learning task, optimizer, learning rate, loss, the gradient "
                     "check's tolerance and the target shapes"}),
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
        {"rank": "the rank that made the call (multi-process variants)",
         "loss": "--task train: the step's loss (the mean over the iteration's calls)"}),
    "iterations": EventType(
        "worker", "consecutive calls of one kind, measured back to back by a host and each "
                  "checked, as columns (one event per batch instead of one per call); or one "
                  "rank's consecutive calls, sent together by rank 0 of a multi-process variant",
        {"kind": "warmup, timed or profiled", "first_index": "index of the first call (1-based)",
         "max_rel_error": "the check's error per call, or one value for every call (NaN and inf as strings)",
         "passed": "the check passed, per call or one value for every call",
         "error": "why each call failed (or null), per call or one value for every call"},
        {"ns": "the whole call, per call, in integer nanoseconds (this version's workers)",
         "phases_ns": "phase -> nanoseconds per call (null: absent) (with ns)",
         "seconds": "the whole call, per call, in seconds (older workers; a worker gives ns or seconds)",
         "phases": "phase -> seconds per call (null: absent) (with seconds)",
         "rank": "the rank that made the calls (multi-process variants)",
         "loss": "--task train: each step's loss"},
        one_of=("ns", "seconds")),
    "variant_finished": EventType(
        "worker", "the variant ran to its end",
        {"summary": "what the worker adds to results.json (profile, trace_summary, ranks, training)"}, {}),
    "variant_failed": EventType(
        "worker", "the variant ended early",
        {"reason": "one line", "kind": "usage, error, interrupted or lost (a node of the job failed)",
         "traceback": "for kind error"}, {}),
    "round_finished": EventType(
        "worker", "a variant measured in rounds has made the round's timed iterations and waits "
                  "for the next round (--rounds)",
        {"round": "the round (1-based)", "iterations": "timed iterations it made in this round"}, {}),
    "rounds_planned": EventType(
        "parent", "the run measures its variants in interleaved rounds (the run's own event, "
                  "before any variant starts)",
        {"rounds": "how many rounds", "seed": "the seed of the shuffled orders",
         "orders": "per round, the variants' names in the order they ran",
         "variants": "the variants' names in the run's own order (results.json lists them so)"},
        {"baseline": "the variant ratios are taken against, when one was named"}),
    "round_started": EventType(
        "parent", "a variant's share of one round begins: the timed iterations after it, until "
                  "its round_finished, belong to this round",
        {"round": "the round (1-based)", "rounds": "how many rounds",
         "iterations": "timed iterations asked of the variant in this round",
         "position": "its place in the round's order (1-based)"}, {}),
    "trace_written": EventType(
        "parent", "a profiler trace was moved into the run directory",
        {"path": "absolute path of the file"},
        {"relative_path": "the same, relative to the run directory"}),
    "host_build": EventType(
        "parent", "the host a variant runs on: being compiled (first use), built, or cached (a "
                  "library host's driver is built, and this event sent, by the worker)",
        {"status": "building, built or cached", "directory": "the cache directory of this build"},
        {"seconds": "compile time (built)", "message": "what is happening, in words (building)",
         "host": "the host built (native when absent): a library host's driver is built in the worker",
         "library": "a library host's build: the library, its version and install, the libtorch it "
                    "links, the compiler and its flags"}),
    "telemetry": EventType(
        "parent", "one CPU/GPU sample of the worker's process tree (the parent's), or of one "
                  "node's ranks (a multi-node job's node sampler: sent by the worker)",
        {"sample": "see docs/telemetry.md"}, {"node": "the node the sample was taken on"}),
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


# -- the typed form -------------------------------------------------------------------------
#
# An event is its JSON object: a dict holding exactly what events.jsonl holds, so writing it
# out, comparing it and reading it by key work as they always did. The class of each type is
# generated from EVENTS and adds the table's fields as attributes (`ev.seconds`, `ev.variant`),
# so a consumer names a field once, in the table, and a misspelt one fails loudly rather than
# reading as missing. Optional fields read as None when absent. A few attributes go beyond the
# JSON: `RunStarted.run_spec` (the spec as a RunSpec) and `calls` on `Iteration` and
# `Iterations`: a batch's calls as `Iteration` events, expanded once, when a consumer first
# asks, and shared by every consumer (the results builder reads the batch's columns instead,
# so a headless run that prints no call never pays for them). Events are not changed once made.

class Event(dict):
    """One event of any type; `EVENT` is its type's name in the table."""

    __slots__ = ()
    EVENT = ""
    #: the table's required and optional fields of this type
    FIELDS: tuple = ()
    OPTIONAL: tuple = ()

    @property
    def event(self) -> str:
        """The event's type (a name in EVENTS)."""
        return self["event"]

    @property
    def t(self) -> float:
        return self["t"]

    @property
    def variant(self) -> str | None:
        """The variant's name (None or "" for the run's own events)."""
        return self.get("variant")

    @property
    def calls(self) -> tuple:
        """The calls an event reports (`Iteration` events): none but for the two iteration types."""
        return ()

    def copy(self) -> "Event":
        return type(self)(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


def _field(name: str, required: bool, doc: str) -> property:
    if required:
        return property(lambda self: self[name], doc=doc)
    return property(lambda self: self.get(name), doc=f"{doc} (None when absent)")


def _generate(event: str, *bases: type) -> type:
    """The class of one event type, from its row in EVENTS."""
    kind = EVENTS[event]
    clash = [f for f in (*kind.fields, *kind.optional) if hasattr(dict, f) or hasattr(Event, f)]
    if clash:   # a field named like a dict method would hide it (or be hidden)
        raise TypeError(f"event {event!r}: field(s) {', '.join(clash)} clash with Event's attributes")
    slots = tuple(slot for base in bases for slot in getattr(base, "CACHED", ()))
    namespace = {"__slots__": slots, "__doc__": f"`{event}` ({kind.source}): {kind.doc}.", "EVENT": event,
                 "FIELDS": tuple(kind.fields), "OPTIONAL": tuple(kind.optional)}
    # a field the added class reads itself (an `iterations` event's columns) keeps its reader
    namespace.update({f: _field(f, True, doc) for f, doc in kind.fields.items()
                      if not any(hasattr(base, f) for base in bases)})
    namespace.update({f: _field(f, False, doc) for f, doc in kind.optional.items()
                      if not any(hasattr(base, f) for base in bases)})
    name = "".join(part.capitalize() for part in event.split("_"))
    return type(name, (*bases, Event), namespace)


# what some types add to their generated class (CACHED: the slots of values made once)

class _RunStarted:
    __slots__ = ()
    CACHED = ("_run_spec",)

    @property
    def run_spec(self):
        """The spec as a RunSpec (fields this couplescope does not know, from a recording made
        by another version, are left out); `ev["spec"]` is the spec as written."""
        try:
            return self._run_spec
        except AttributeError:
            from couplescope.protocol.spec import SPEC_KEYS, RunSpec

            spec = self["spec"]
            self._run_spec = RunSpec.from_dict({k: v for k, v in spec.items() if k in SPEC_KEYS})
            return self._run_spec


class _Iteration:
    __slots__ = ()

    @property
    def calls(self) -> tuple:
        return (self,)


class _Iterations:
    """A batch's columns as a consumer reads them, whichever form the worker wrote
    (couplescope.protocol.columns): seconds and phases in float seconds, the check's
    columns a value per call. The JSON object itself stays as it was written."""

    __slots__ = ()
    CACHED = ("_calls", "_seconds", "_phases")

    @property
    def count(self) -> int:
        """How many calls the batch holds."""
        return len(self["ns"] if "ns" in self else self["seconds"])

    @property
    def seconds(self) -> list:
        """Each call's seconds (made once from `ns`, when first asked)."""
        try:
            return self._seconds
        except AttributeError:
            self._seconds = columns.to_seconds(self["ns"]) if "ns" in self else self["seconds"]
            return self._seconds

    @property
    def phases(self) -> dict:
        """Phase -> each call's seconds in it (None where the call had none)."""
        try:
            return self._phases
        except AttributeError:
            self._phases = ({n: columns.to_seconds(c) for n, c in self.get("phases_ns", {}).items()}
                            if "ns" in self else self["phases"])
            return self._phases

    @property
    def max_rel_error(self) -> list:
        return columns.per_call(self["max_rel_error"], self.count)

    @property
    def passed(self) -> list:
        return columns.per_call(self["passed"], self.count)

    @property
    def error(self) -> list:
        return columns.per_call(self["error"], self.count)

    @property
    def calls(self) -> tuple:
        """The batch's calls as `Iteration` events, exactly what a worker reporting every
        call on its own would have written; made once (when first asked) and shared."""
        try:
            return self._calls
        except AttributeError:
            self._calls = tuple(_expand(self))
            return self._calls

    @property
    def last_index(self) -> int:
        """The index of the batch's last call."""
        return self["first_index"] + self.count - 1


_ADDED = {"run_started": (_RunStarted,), "iteration": (_Iteration,), "iterations": (_Iterations,)}

#: event type -> its class, one for every row of EVENTS (the names below are for readers)
CLASSES: dict[str, type] = {event: _generate(event, *_ADDED.get(event, ())) for event in EVENTS}

RunStarted = CLASSES["run_started"]
RankInfo = CLASSES["rank_info"]
ModelLoaded = CLASSES["model_loaded"]
ModelCompiled = CLASSES["model_compiled"]
Iteration = CLASSES["iteration"]
Iterations = CLASSES["iterations"]
VariantFinished = CLASSES["variant_finished"]
VariantFailed = CLASSES["variant_failed"]
RoundFinished = CLASSES["round_finished"]
RoundsPlanned = CLASSES["rounds_planned"]
RoundStarted = CLASSES["round_started"]
TraceWritten = CLASSES["trace_written"]
HostBuild = CLASSES["host_build"]
Telemetry = CLASSES["telemetry"]
Diagnostic = CLASSES["diagnostic"]
WorkerOutput = CLASSES["worker_output"]
Log = CLASSES["log"]


def typed(event: dict) -> Event:
    """`event` in its typed form (itself when it already is one): for events that come as
    plain dicts (from code that builds them by hand, or a JSON reader of its own)."""
    if isinstance(event, Event):
        return event
    cls = CLASSES.get(event.get("event"))
    if cls is None:
        raise ValueError(f"unknown event type {event.get('event')!r}")
    return cls(event)


def make(event: str, variant: str, **fields) -> Event:
    """An event of a known type. The one constructor every producer uses."""
    cls = CLASSES.get(event)
    if cls is None:
        raise ValueError(f"unknown event type {event!r}")
    return cls({"event": event, "t": time.time(), "variant": variant, **fields})


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
    if kind.one_of and not event.keys() & set(kind.one_of):
        return f"{event['event']} lacks one of {', '.join(kind.one_of)}"
    return None


def json_clean(value):
    """JSON has no NaN or infinity: write them as strings that `parse` turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_clean(v) for v in value]
    return value


#: json's C encoder, made once (json.dumps with options builds a new encoder per call)
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def dumps(event: dict) -> str:
    """One line of JSON. Nearly every event is plain JSON as it is; the rare one holding a
    NaN or an infinity (a failed check's error) is cleaned first."""
    try:
        return _encode(event)
    except ValueError:
        return _encode(json_clean(event))


_SPECIAL = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def parse(line: str) -> Event | None:
    """The event on a line (typed), or None for a line that is not one (stray output)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("event") not in EVENTS:
        return None
    if obj["event"] == "iteration":
        for key in ("max_rel_error", "loss"):
            if isinstance(obj.get(key), str):
                obj[key] = _SPECIAL.get(obj[key], float("nan"))
    elif obj["event"] == "iterations":
        for key in ("max_rel_error", "loss"):
            value = obj.get(key)
            if isinstance(value, list):
                if str in set(map(type, value)):
                    obj[key] = [_SPECIAL.get(e, float("nan")) if isinstance(e, str) else e for e in value]
            elif isinstance(value, str):   # one value for every call
                obj[key] = _SPECIAL.get(value, float("nan"))
    return CLASSES[obj["event"]](obj)


def expand(ev: dict) -> list[dict]:
    """The `iteration` events an `iterations` event stands for (any other event: itself).

    Typed events carry them already (`ev.calls`); this is for code that holds plain dicts."""
    if ev["event"] != "iterations":
        return [ev]
    return list(typed(ev).calls)


def _expand(ev: Iterations) -> list[Event]:
    phases = ev.phases
    first, kind, base = ev["first_index"], ev["kind"], {"t": ev["t"], "variant": ev["variant"]}
    losses = ev.get("loss")
    errs, passes, errors = ev.max_rel_error, ev.passed, ev.error
    if ev.get("rank") is not None:
        base["rank"] = ev["rank"]
    return [Iteration({"event": "iteration", **base, "index": first + i, "kind": kind, "seconds": seconds,
                       "phases": {n: v[i] for n, v in phases.items() if v[i] is not None},
                       "max_rel_error": errs[i], "passed": passes[i],
                       "error": errors[i], **({"loss": losses[i]} if losses is not None else {})})
            for i, seconds in enumerate(ev.seconds)]


def read_jsonl(path: str) -> list[Event]:
    """Every event of an events.jsonl file, in order (lines that are not events skipped)."""
    with open(path, encoding="utf-8") as f:
        return [ev for ev in map(parse, f) if ev is not None]
