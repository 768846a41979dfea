"""Play a recorded run back through the real pipeline, without starting a worker.

A run directory's events.jsonl holds every event of a run, the worker's and the
parent's. A `Recording` is such a file read back: its variants as they were recorded
(their specs and names, hosts included: nothing is decided again on this machine, so a
recording made with the native host replays where no compiler is), the request that
measures them, and `ReplayWorkers`, which play each variant's events back as a live
worker would (couplescope.core.workers, the seam). Session, printer, exporters and the
app handle them exactly as they handle a live run: presentation and bookkeeping are
tested on real runs' events in milliseconds, and `couplescope --replay FILE` shows a
recording as the printer or the app showed it live. `document` rebuilds results.json
from the events alone.
"""

from __future__ import annotations

import json
import os

from couplescope.protocol import events as ev_mod
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import RunSpec
from couplescope.results.builder import ResultsBuilder


class PlayedWorker:
    """A WorkerHandle whose events are given, not measured: `pid` is None (there is no
    process to watch); `output` is what it "printed". Paced (a run in rounds), `events()`
    plays up to the next round_finished and the rest waits for the next round."""

    pid = None

    def __init__(self, spec, played: list, output=(), short: str = "the recording ends before the variant does",
                 paced: bool = False) -> None:
        self.spec = spec
        self._events = list(played)
        self._next = 0
        self.paced = paced
        self._stopped = False
        self._short = short
        self.returncode = None
        self.output = list(output)
        self.output_total = len(self.output)
        self.on_notice = None

    def events(self):
        while self._next < len(self._events) and not self._stopped:
            ev = ev_mod.typed(self._events[self._next])
            self._next += 1
            yield ev
            if self.paced and ev.event == "round_finished":
                return
        self.returncode = 0

    def run_round(self, round_number: int, iterations: int) -> None:
        """The next round's events are already there."""

    def finish(self) -> None:
        """The events after the last round are already there."""

    def stop(self, timeout: float = 0.0) -> None:
        self._stopped = True

    def crash_reason(self, after: str = "") -> str:
        return f"{self._short} {after}" if after else self._short


class ReplayWorkers:
    """Workers that play each variant's recorded events (matched by the variant's name)."""

    processes = False   # the recording holds the telemetry it was recorded with

    #: the parent's own pacing of a run in rounds: the replaying session says them again
    PACING = ("rounds_planned", "round_started")

    def __init__(self, recorded: list) -> None:
        self._by_variant: dict[str, list] = {}
        for ev in map(ev_mod.typed, recorded):
            if ev.event not in self.PACING:
                self._by_variant.setdefault(ev.variant, []).append(ev)

    def prepare(self, spec, emit) -> None:
        """Nothing to build: the recording's host_build events say what was."""

    def start(self, spec, env: dict, shares=None) -> PlayedWorker:
        return PlayedWorker(spec, self._by_variant.get(spec.label, []), paced=shares is not None)


def replayer(recorded: list) -> ReplayWorkers:
    """The `workers` of a Session or Pipeline that play `recorded` back."""
    return ReplayWorkers(recorded)


def specs_of(recorded: list) -> list[RunSpec]:
    """The variants of a recording (from their run_started events), in the run's order: a
    run in rounds planned them in its request's (rounds_planned), and started them in its
    first round's shuffled order, which a replay took for the run's."""
    specs, seen, planned = [], set(), []
    for ev in map(ev_mod.typed, recorded):
        if ev.event == "rounds_planned":
            planned = list(ev.variants or [])
        if ev.event == "run_started" and ev.variant not in seen:
            seen.add(ev.variant)
            specs.append(ev.run_spec.replace(name=ev.variant))
    rank = {name: i for i, name in enumerate(planned)}
    return sorted(specs, key=lambda spec: rank.get(spec.name, len(rank)))


class Recording:
    """A recorded run: `request()` measures its variants, `workers()` plays them back."""

    def __init__(self, recorded: list, title: str = "", source: str | None = None) -> None:
        self.events = [ev_mod.typed(ev) for ev in recorded]
        self.specs = specs_of(self.events)
        self.source = source
        self.title = title or (os.path.basename(self.specs[0].model) if self.specs else "replay")

    @classmethod
    def read(cls, path: str, title: str = "") -> "Recording":
        """An events.jsonl, or the run directory holding one. The title is the run's own
        (results.json beside it) unless given. UsageError for a file that holds no run."""
        if os.path.isdir(path):
            path = os.path.join(path, "events.jsonl")
        try:
            recorded = ev_mod.read_jsonl(path)
        except OSError as exc:
            raise UsageError(f"--replay {path}: {exc.strerror or exc}") from None
        if not title:
            try:
                with open(os.path.join(os.path.dirname(path), "results.json"), encoding="utf-8") as f:
                    title = json.load(f).get("title") or ""
            except (OSError, ValueError, AttributeError):
                title = ""
        recording = cls(recorded, title, source=path)
        if not recording.specs:
            raise UsageError(f"--replay {path}: no run in it (no run_started event); give a run "
                             "directory's events.jsonl")
        return recording

    def request(self, export: str | None = None):
        """The request of the recorded variants, as they were recorded (no validation or
        host resolution here: they ran). No telemetry: the recording has its samples."""
        from couplescope.core.request import RunRequest

        planned = next((ev for ev in self.events if ev.event == "rounds_planned"), None)
        rounds = {}
        if planned is not None:   # played in the recorded rounds, in the recorded orders
            rounds = {"rounds": planned.rounds, "order_seed": planned.seed, "baseline": planned.baseline,
                      "orders": tuple(tuple(o) for o in planned.orders)}
        return RunRequest(title=self.title, specs=tuple(self.specs), export=export, telemetry_hz=0,
                          **rounds)

    def workers(self) -> ReplayWorkers:
        return ReplayWorkers(self.events)


def document(recorded: list, title: str = "") -> dict:
    """results.json of a recorded run, rebuilt from its events alone."""
    builder = ResultsBuilder(title)
    for ev in recorded:
        builder.on_event(ev)
    return builder.document()


def read(path: str) -> list:
    """The events of an events.jsonl file."""
    return ev_mod.read_jsonl(path)
