"""Play a recorded run back through the real pipeline, without starting a worker.

A run directory's events.jsonl holds every event of a run, the worker's and the
parent's. `ReplayWorker` yields one variant's recorded events as a live worker would,
so Session, printer, exporters and the app handle them exactly as they handle a live
run: the seam that lets presentation and bookkeeping be tested on real runs' events in
milliseconds. `document` rebuilds results.json from the events alone.
"""

from __future__ import annotations

from couplescope.protocol import events as ev_mod
from couplescope.protocol.spec import RunSpec
from couplescope.results.builder import ResultsBuilder


class ReplayWorker:
    """A recorded variant, played back. `pid` is None: there is no process to watch."""

    pid = None

    def __init__(self, spec, recorded: list[dict]) -> None:
        self.spec = spec
        self._events = [ev for ev in recorded if ev.get("variant") == spec.label]
        self._stopped = False
        self.returncode = None

    def events(self):
        for ev in self._events:
            if self._stopped:
                break
            yield dict(ev)
        self.returncode = 0

    def stop(self, timeout: float = 0.0) -> None:
        self._stopped = True

    def crash_reason(self, after: str = "") -> str:
        return "the recording ends before the variant does"


def replayer(recorded: list[dict]):
    """A Session's `start_worker` that plays `recorded` back instead of starting workers."""
    return lambda spec, env: ReplayWorker(spec, recorded)


def specs_of(recorded: list[dict]) -> list[RunSpec]:
    """The variants of a recording, in the order they ran (from their run_started events)."""
    specs, seen = [], set()
    for ev in recorded:
        if ev["event"] == "run_started" and ev["variant"] not in seen:
            seen.add(ev["variant"])
            specs.append(RunSpec.from_dict({**ev["spec"], "name": ev["variant"]}))
    return specs


def document(recorded: list[dict], title: str = "") -> dict:
    """results.json of a recorded run, rebuilt from its events alone."""
    builder = ResultsBuilder(title)
    for ev in recorded:
        builder.on_event(ev)
    return builder.document()


def read(path: str) -> list[dict]:
    """The events of an events.jsonl file."""
    return ev_mod.read_jsonl(path)
