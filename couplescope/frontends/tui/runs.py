"""The runs of one app session: what each one ran, its events, and its export.

A RunRecord is the app's one copy of a run's state, written on the UI thread only: the
events as they arrived (`add`) and the ResultsBuilder fed from them, which every view
reads. The run itself goes through the pipeline with a run directory in a temporary
folder, the very listeners `--export` uses, so exporting a run is copying that directory
(Pipeline.copy_to): what the app exports is what --export writes.
"""

from __future__ import annotations

import threading
import time

from couplescope.protocol.errors import UsageError
from couplescope.results.builder import ResultsBuilder, verdict_word

#: what an ended run's words promise of r; the top line puts the reason r will not run in
#: its place while the form's values are refused (top_line.py)
RUNS_AGAIN = "r runs again"
#: what an ended run's words say the keys do next; a line too narrow for them and the
#: reason r will not run says the reason alone (top_line.py: the footer offers e and c)
NEXT_KEYS = f"e exports, c compares, {RUNS_AGAIN}"


class RunRecord:
    def __init__(self, run_id: int, title: str, specs, request) -> None:
        self.id = run_id
        self.title = title
        self.specs = list(specs)
        self.request = request             # the RunRequest it ran
        self.builder = ResultsBuilder(title)
        self.status = "running"            # running | finished | stopped | error
        self.error: str | None = None
        self.started = time.time()
        self.ended: float | None = None
        self.events: list[dict] = []      # as they arrived (telemetry: the samples drawn)
        self.pipeline = None               # the run: its session, its staged run directory
        self.listener = None               # its AppListener (posted_batches: benchmarks)
        self.session = None
        self.export_path: str | None = None
        self.export_earlier: str | None = None   # where it was exported before the export going
        self.export_missing: list[str] = []     # files of its export a full disk kept out
        self.summary_error: str | None = None   # why an export has no summary.png
        self.selected = False              # marked for the compare view
        self.current: str | None = None    # variant being measured
        self.last_measured: str | None = None   # the variant of the latest call
        #: what began its stop, while its session is being stopped: "s", "q" (the quit
        #: question's yes), "ctrl+c", or a signal's name ("SIGTERM"); None while it goes on
        self.stopping: str | None = None
        self.done = threading.Event()      # set when its session thread has finished
        self.export_done = threading.Event()   # clear while an export copies it (on a thread)
        self.export_done.set()

    @property
    def name(self) -> str:
        return f"#{self.id} {self.title}"

    def add(self, events: list[dict]) -> None:
        """Events of the run, in order (UI thread): kept, and fed to the builder."""
        self.events.extend(events)
        for ev in events:
            self.builder.on_event(ev)
            if ev["event"] in ("run_started", "round_started", "iteration"):   # rounds: each variant in turn
                self.current = ev["variant"]   # (after the last round, each one's profiled calls)
            if ev["event"] == "iteration":
                self.last_measured = ev["variant"]

    def watched(self) -> str | None:
        """The variant the Watch view shows: the one measuring now (`current`); once the run
        was stopped, the last one that measured when the one it was stopped in measured
        nothing (Watch showed `bridge STOPPED no checks yet`, and nothing showed the
        variant whose steps were kept)."""
        variant = self.builder.variants.get(self.current) if self.current else None
        if self.status == "stopped" and self.last_measured and (variant is None or not variant.calls.count):
            return self.last_measured
        return self.current

    def round_words(self, variant: str) -> str:
        """"round 2/5: " while a run in rounds measures `variant` in its second round, else ""."""
        v = self.builder.variants.get(variant)
        rounds = self.builder.rounds
        return f"round {v.round}/{rounds['rounds']}: " if rounds and v is not None and v.round else ""

    def export(self, parent: str) -> str:
        """Copy the run's directory to a new one under `parent` (named by the run's start
        time), results.json first, with summary.png; its path. A file a full disk kept out
        is named in `export_missing`. Raises UsageError, or OSError when not even
        results.json could be written (nothing is left then)."""
        exporter = self.pipeline.exporter if self.pipeline is not None else None
        if exporter is None or exporter.path is None:
            raise UsageError(f"nothing to export from run #{self.id}: no variant loaded its model")
        copied = self.pipeline.copy_to(parent)
        self.summary_error, self.export_missing = copied.summary_error, copied.missing
        self.export_path = copied.path
        return copied.path

    def spec_of(self, variant: str) -> dict:
        """The variant's spec: its worker's (run_started), else the one the run asked for (a
        run in rounds names a variant at its round's start, before its worker reports)."""
        v = self.builder.variants.get(variant)
        if v is not None and v.spec:
            return v.spec
        return next((s.to_dict() for s in self.specs if s.label == variant), {})

    def expected(self, variant: str) -> int | None:
        spec = self.spec_of(variant)
        if not spec:
            return None
        return spec["warmup"] + spec["iterations"] + (spec.get("profile_iterations") or 0)

    def stopped_words(self) -> str:
        """How it was stopped: by the user's key (s, q's yes, ctrl+c), by a signal the app
        got (SIGTERM), else by one its worker got."""
        if not self.stopping:
            return "stopped"
        return f"stopped ({self.stopping})" if self.stopping.startswith("SIG") else f"stopped by you ({self.stopping})"

    def unit(self, variant: str | None = None) -> str:
        """What the run (the variant) makes: "call", or a training run's "step"."""
        tasks = {self.spec_of(variant).get("task")} if variant else {s.task for s in self.specs}
        return "step" if tasks == {"train"} else "call"

    def first_call(self, variant: str | None = None) -> str:
        """"its first call", or a training run's (variant's) "its first step"."""
        return f"its first {self.unit(variant)}"

    def fastest_median(self):
        rows = self.builder.comparison()
        return min((r["median"] for r in rows), default=None)

    def verdict(self) -> str:
        """The run's one word, as the compare view's checks column says each variant's
        (ResultsBuilder's verdicts): FAILED (a check failed, however it ended), ERROR (a
        variant broke), STOPPED (`s` or a signal ended it: the compare view said STOPPED
        where History said PASSED), running, PASSED (every variant finished and every
        check passed), or - (it ended before any call)."""
        verdicts = {v.verdict for v in self.builder.variants.values()}
        for word in ("failed", "error"):
            if word in verdicts or (word == "error" and self.status == "error"):
                return verdict_word(word)
        if self.status == "stopped" or "stopped" in verdicts:
            return verdict_word("stopped")
        if self.status == "running" or "running" in verdicts:
            return verdict_word("running")
        return verdict_word("passed") if self.measured() else "-"

    def all_finished(self) -> bool:
        """Whether every variant ran to its end (a stop that came after that stopped nothing)."""
        variants = [self.builder.variants.get(spec.label) for spec in self.specs]
        return all(v is not None and v.status == "finished" for v in variants)

    def measured(self) -> int:
        """How many of its variants made a call (a stopped run's others never started)."""
        return sum(1 for v in self.builder.variants.values() if v.calls.count)

    def measured_by_its_session(self) -> int:
        """measured(), as the run's session has it: the app's builder is fed on the UI thread,
        and on a hang-up the app's loop may be blocked (its terminal gone) with the calls'
        events still queued, while the session's builder and the run directory the export
        copies have them (a hang-up under load said `measured nothing: not saved`)."""
        builder = getattr(self.session, "builder", None)
        if builder is None:
            return self.measured()
        return max(self.measured(), sum(1 for v in list(builder.variants.values()) if v.calls.count))

    def variants_words(self) -> str:
        """The History view's variants: "4", or "1 of 4" when it ended before all made a call."""
        total = len(self.specs)
        ran = self.measured()
        return f"{ran} of {total}" if self.status in ("stopped", "error") and ran < total else str(total)

    def untitled(self, *said: str) -> tuple[str, ...]:
        """Words about the run in their forms, the fullest first (the top line says the first
        that fits: top_line.py), then the last again with `run #3` for the run's name: its
        title is History's and the Watch view's to show, and a long one (a preset's,
        deep-linear-cudagraph) wrapped the top line at 80 columns."""
        return (*said, said[-1].replace(self.name, f"run #{self.id}", 1))

    def running_words(self) -> tuple[str, ...]:
        """The top line as it starts."""
        return self.untitled(f"running {self.name}: {len(self.specs)} variant(s); s stops, q quits")

    def doing_words(self, variant: str, doing: tuple[str, ...]) -> tuple[str, ...]:
        """The top line while `variant` does `doing` (its forms: app.STATUS), in its round:
        `#1 simplenet-train: round 1/5: direct-python-host: building and loading the model`
        was 80 columns; its shorter phrase first, then without the title."""
        said = f"{self.name}: {self.round_words(variant)}{variant}: "
        return self.untitled(*(said + words for words in doing))

    def ending_words(self) -> tuple[str, ...]:
        """The status line once it has ended: how, what is kept, what the keys do next (the
        top line says why instead of RUNS_AGAIN while the form is refused: top_line.py), in
        forms that fit 80 columns for every preset's and model's name (`untitled`)."""
        keys = NEXT_KEYS
        if self.status != "stopped":
            return self.untitled(f"{self.name} {self.status}: {keys}, ? help", f"{self.name} {self.status}: {keys}")
        ran, total, stopped = self.measured(), len(self.specs), self.stopped_words()
        if not ran:
            return self.untitled(f"{self.name} {stopped} before {self.first_call()}: nothing measured; {RUNS_AGAIN}",
                                 f"{self.name} {stopped}: nothing measured; {RUNS_AGAIN}")
        short = f"stopped ({self.stopping})" if self.stopping else "stopped"
        kept = "what it measured is kept" if ran == total else f"{ran} of {total} variants kept"
        return self.untitled(f"{self.name} stopped: "
                             + ("what it measured is kept" if ran == total else
                                f"what {ran} of its {total} variants measured is kept")
                             + f"; e exports it, c compares, {RUNS_AGAIN}",
                             f"{self.name} {short}: {kept}; {keys}",
                             f"{self.name} {short}: {kept}; e exports, c compares")

    def still_stopping(self, then: str = "") -> tuple[str, ...]:
        """r's and s's answer while its stop goes on: `run #1 simplenet is still stopping: ...`,
        `then`, else how far the stop is: its workers ending, or its session closing the run."""
        then = then or ("its workers are ending" if self.workers_ending() else "closing the run")
        return self.untitled(f"run {self.name} is still stopping: {then}")

    def workers_ending(self) -> bool:
        """Whether its stop waits for workers still (stopping_words: `stopping ...`), not for
        its session writing what was measured (`closing the run ...`)."""
        return not self.builder.variants or any(v.status == "running" for v in self.builder.variants.values())

    def stopping_words(self) -> tuple[str, ...]:
        """The top line while its stop goes on, as far as it has gone: `stopping` till its
        workers have ended, each variant stopped counted (Watch read `bridge STOPPED` beside
        `stopping #2 simplenet-train ...`, the other workers still ending), then what is
        kept while its session writes its run directory."""
        how = f" ({self.stopping})" if self.stopping and self.stopping != "s" else ""
        started = list(self.builder.variants.values())
        ended = [v for v in started if v.status != "running"]
        if not ended:
            return self.untitled(f"stopping {self.name}{how} ...")
        if len(ended) < len(started):
            # every variant of the run counted: those whose workers never started too (a
            # variant's worker starts at its first round; the eleventh walk's ctrl+c in round
            # one of 6 read `2 variants stopped, 3 still ending`, the sixth not started)
            total, ending, waiting = len(self.specs), len(started) - len(ended), len(self.specs) - len(started)
            rest = f", {waiting} not started" if waiting > 0 else ""
            return self.untitled(
                f"stopping {self.name}{how}: {len(ended)} of its {total} variants stopped, {ending} still ending{rest} ...",
                f"stopping {self.name}{how}: {len(ended)} of {total} stopped, {ending} still ending{rest} ...")
        kept = "keeping what it measured" if self.measured() else "nothing measured"
        return self.untitled(f"{self.name} {self.stopped_words()}: {kept}; closing the run ...",
                             f"{self.name} stopped ({self.stopping}): {kept}; closing the run ...",
                             f"{self.name} stopped ({self.stopping}): {kept} ...")

    def finish(self, error: str | None) -> None:
        self.ended = time.time()
        self.error = error
        verdicts = {v.verdict for v in self.builder.variants.values()}
        if error or "error" in verdicts:
            self.status = "error"
        elif "stopped" in verdicts or any(v.status == "interrupted" for v in self.builder.variants.values()):
            self.status = "stopped"
        elif self.stopping and not self.all_finished():
            # stopped while it was starting (`r s` in one read): no worker was running to be
            # interrupted, and the run read as finished, or failed with no reason given
            self.status = "stopped"
        else:
            self.status = "finished"
