"""The run directory: events.jsonl as the run goes, results.json after every variant.

The directory is created when the first variant has loaded its model, so bad input
(which fails before that) leaves nothing behind; an existing directory is never reused.
events.jsonl is appended and flushed per event, so a run killed half way keeps every
finished iteration; results.json is replaced atomically (write, fsync, rename). A write
that fails is reported and survived (RunDirectoryExporter says how).
"""

from __future__ import annotations

import os
import re
import time

from couplescope.export.disk_full import RESERVE_BYTES, RESERVE_NAME, EventsFile, Reserve, remove_quietly
from couplescope.protocol import events
from couplescope.protocol.errors import UsageError
from couplescope.protocol.listener import Listener
from couplescope.results.document_text import readable_json

DEFAULT_PARENT = "couplescope-runs"


def check_writable(parent: str) -> str:
    """Make sure runs can be created under `parent`; return its absolute path.

    Probes for real (a temporary directory in the nearest existing ancestor, removed at
    once): permission bits lie for root and on special file systems such as /proc.
    """
    import tempfile

    parent = os.path.abspath(parent)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"export directory {parent} exists and is not a directory")
    probe = parent
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise UsageError(f"export directory {parent} cannot be created: {probe} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".couplescope-probe-", dir=probe))
    except OSError as exc:
        raise UsageError(f"export directory {parent} cannot be written ({exc.strerror} in {probe})") from None
    return parent


def output_log_name(variant: str) -> str:
    """The file in the run directory that keeps what a variant's worker printed."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", variant).strip("-.") + ".output.log"


def write_json_atomic(path: str, document: dict) -> None:
    """Write, fsync, rename: readers see the old file or the new one, never half of one.
    A failed write (a full disk) leaves no temporary file behind and raises OSError."""
    write_text_atomic(path, readable_json(document) + "\n")


def write_text_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def new_run_directory(parent: str, title: str, started: float | None = None) -> str:
    """Create and return a fresh directory under `parent` (never an existing one), named
    by the run's start time (`started`, seconds since the epoch; default now): a run made
    at 10:00 and exported at 11:00 is the 10:00 run."""
    os.makedirs(parent, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-")[:60] or "run"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    base = os.path.join(parent, f"{stamp}-{slug}")
    for n in range(1, 1000):
        path = base if n == 1 else f"{base}-{n}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise UsageError(f"could not create a new run directory under {parent}")


class RunDirectoryExporter(Listener):
    """Writes a run to disk. `path` is None until the directory exists.

    A write that fails (a full disk, a quota, a vanished mount) never ends the run and
    never loses what is in memory: the failure is said once (a `log` event, which the
    printer and the app show), results.json comes first (couplescope.export.disk_full: room
    is held for it; an unfinished events.jsonl, then the other files give their room up for
    it), a file that could not be finished is removed rather than left cut short, `missing` names what is
    not in the run directory and `failure` says why (the command then exits 3). Other
    exporters report the files they could not write with `lost()`."""

    def __init__(self, parent: str, title: str, announce=None) -> None:
        self.parent = check_writable(parent)
        self.title = title
        self.path: str | None = None
        self._pending: list[dict] = []
        self._events: EventsFile | None = None
        self._reserve: Reserve | None = None
        self._last_size = 0   # bytes of the last results.json written
        self._next_round_save = 0.0   # the clock's time before which a round's write waits
        self.clock = time.monotonic
        self._announce = announce
        self.on_created: list = []  # callbacks(path), for exporters that add files
        self._unwritten = True      # events results.json has not seen yet
        self._create_failed = False
        self.session = None
        #: when the run started (its directory's name), set when the session starts
        self.started: float | None = None
        self._first_failure: str | None = None
        self._results_failure: str | None = None
        #: the run directory's files that are not there, relative to it, in the order lost
        self.missing: list[str] = []

    @property
    def failure(self) -> str | None:
        """Why results.json is not there, else what could not be written first, in one
        line; None while everything was written."""
        if "results.json" in self.missing and self._results_failure:
            return self._results_failure
        return self._first_failure

    def attach(self, session) -> None:
        self.session = session
        self.started = time.time()

    def _failed(self, what: str, exc: OSError | str) -> None:
        line = f"cannot write {what}: {exc if isinstance(exc, str) else exc.strerror or exc}"
        if what.endswith("results.json"):
            self._results_failure = line
        if self._first_failure is not None:
            return
        self._first_failure = line
        if self.session is not None:
            self.session.emit(events.make("log", "", message=f"export: {line}; the run goes on "
                                          "and its statistics are printed, but the run directory "
                                          "is incomplete (what is missing is listed at the end)"))

    def lost(self, name: str, exc: OSError | str | None = None) -> None:
        """`name` (relative to the run directory) could not be written and is not there;
        `exc` why (the error, or its words), unless it was said already."""
        if name not in self.missing:
            self.missing.append(name)
        if exc is not None:
            self._failed(os.path.join(self.path or self.parent, name), exc)

    def _found(self, name: str) -> None:
        if name in self.missing:
            self.missing.remove(name)

    def _create(self) -> None:
        try:
            self.path = new_run_directory(self.parent, self.title, self.started)
        except OSError as exc:
            self._create_failed = True
            self._failed(self.parent, exc)
            return
        self._reserve = Reserve(self.path)
        self._reserve.claim()   # results.json's room, before anything else takes it
        try:
            self._events = EventsFile(os.path.join(self.path, "events.jsonl"))
        except OSError as exc:
            self.lost("events.jsonl", exc)
        for ev in self._pending:
            self._write(ev)
        self._pending.clear()
        if self._announce:
            self._announce(self.path)
        for callback in self.on_created:
            callback(self.path)

    def _write(self, ev: dict) -> None:
        if self._events is None:
            return
        error = self._events.append(events.dumps(ev) + "\n")
        if error is not None:
            self._failed(self._events.path, error)

    def on_event(self, event: dict) -> None:
        self._unwritten = True
        if self.path is None:
            self._pending.append(event)
            if event["event"] == "model_loaded" and not self._create_failed:
                self._create()
            return
        self._write(event)
        if event["event"] == "worker_output":
            self._write_output(event)

    def _write_output(self, ev: dict) -> None:
        """A worker's printed lines, in <variant>.output.log (a file that cannot be written
        whole is removed; the lines stay in events.jsonl)."""
        name = output_log_name(ev["variant"])
        target = os.path.join(self.path, name)
        dropped = ev["total"] - len(ev["lines"])
        head = [f"({dropped} earlier lines were not kept)"] if dropped > 0 else []
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(head + ev["lines"]) + "\n")
        except OSError as exc:
            remove_quietly(target)
            self.lost(name, exc)

    def variant_done(self, builder) -> None:
        if self.path is None:
            return
        saved = self._save_results(builder)
        if self._reserve is not None:
            # the next results.json's room first: it is written beside the one it replaces,
            # and grows (a run in rounds writes one nearly whole after every round)
            self._reserve.claim(max(RESERVE_BYTES, self._last_size * 3 // 2))
        if saved and self._events is not None:
            self._events.finish()   # then lines that waited for room, if there is some now

    #: a run in rounds spends at most about this share of its time rewriting results.json
    ROUND_WRITE_SHARE = 0.1

    def round_done(self, builder, round_number: int) -> None:
        """A run in rounds ends its variants only after the last round: results.json is
        written after the rounds too, so a parent killed outright (SIGKILL) keeps the
        rounds written. The file holds every call so far, and grows with every round: a
        run of hundreds of rounds spent nine tenths of its parent's time rewriting it. So
        a round's write waits until the last one's time is at most ROUND_WRITE_SHARE of
        the time since (short runs still write after every round). Nothing is lost by an
        interruption: a signal's ending writes results.json whole, and events.jsonl has
        every event as it came."""
        started = self.clock()
        if started < self._next_round_save:
            return
        self.variant_done(builder)
        took = self.clock() - started
        self._next_round_save = started + took / self.ROUND_WRITE_SHARE

    def _save_results(self, builder) -> bool:
        """results.json, replaced atomically; when there is no room, the reserve is given
        back, then an events.jsonl that could not be finished is given up for it, then the
        results.json it replaces, then the run's other files, the largest first."""
        target = os.path.join(self.path, "results.json")
        text = builder.document_text() + "\n"
        self._last_size = len(text.encode("utf-8"))

        def room():   # True each time there may be room for one more try
            yield True
            for make_room in (self._give_back_reserve, self._give_up_events, self._drop_outdated):
                yield make_room()
            while self._give_up_another():
                yield True
        for tried in room():
            if not tried:
                continue
            try:
                write_text_atomic(target, text)
            except OSError as exc:
                error = exc
                continue
            self._unwritten = False
            self._found("results.json")
            return True
        self.lost("results.json", error)
        return False

    def _give_back_reserve(self) -> bool:
        if self._reserve is None or not self._reserve.held:
            return False
        self._reserve.release()
        return True

    def _drop_outdated(self) -> bool:
        """The last resort: the results.json being replaced goes first, so that the new one
        needs no room beside it (it held less than the new one will)."""
        target = os.path.join(self.path, "results.json")
        return os.path.exists(target) and remove_quietly(target)

    def _give_up_another(self) -> bool:
        """results.json first: the largest other file of the run directory (a trace, a
        worker's output, the picture) is given up for it and named missing. A run's
        telemetry timeline grows with its time, so on a slow machine results.json outgrew
        the reserve (test_full_disk lost it at a load of 8)."""
        others = []
        for root, _, names in os.walk(self.path):
            for name in names:
                full = os.path.join(root, name)
                relative = os.path.relpath(full, self.path)
                if relative in ("results.json", "events.jsonl", RESERVE_NAME) or ".tmp-" in name:
                    continue
                try:
                    others.append((os.path.getsize(full), relative, full))
                except OSError:
                    continue
        if not others:
            return False
        _, relative, full = max(others)
        if not remove_quietly(full):
            return False
        self.lost(relative)
        return True

    def _give_up_events(self) -> bool:
        if self._events is None or self._events.complete or self._events.removed:
            return False
        self._events.remove()
        self.lost("events.jsonl")
        return True

    def session_done(self, builder) -> None:
        if self.path is not None and (self._unwritten or "results.json" in self.missing):
            self._save_results(builder)   # events since the last variant's write
        if self._reserve is not None:
            self._reserve.release()
        if self._events is not None:
            if not self._events.removed and not self._events.finish():
                self._events.remove()
                self.lost("events.jsonl")
            self._events.close()
