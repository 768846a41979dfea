"""The run directory: events.jsonl as the run goes, results.json after every variant.

The directory is created when the first variant has loaded its model, so bad input
(which fails before that) leaves nothing behind; an existing directory is never reused.
events.jsonl is appended line by line, so a run killed half way keeps every finished
iteration; results.json is replaced atomically (write, fsync, rename).

A write that fails (a full disk, a directory removed under us) never ends the run: the
measurements are in memory and the printer still shows them. events.jsonl is cut back
to its last whole line, the events that did not fit wait in memory and are written as
soon as they fit again (so the file holds every event that could be written, in
order); a results.json that cannot be written leaves no temporary file. Each failure
is reported once through the session (Session.write_failed), which makes the exit code
EXIT_WRITE_FAILED; at the end one line says where things stand.
"""

from __future__ import annotations

import json
import os
import re
import time

from couplescope.protocol import events
from couplescope.protocol.errors import UsageError
from couplescope.protocol.listener import Listener

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


def write_json_atomic(path: str, document: dict) -> None:
    """Write `document` to `path` whole or not at all: the temporary file it is written to
    first is removed when anything fails (a full disk, an interruption)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1, allow_nan=False, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class EventsFile:
    """events.jsonl, written a whole line at a time; what does not fit waits in memory.

    `add(line)` queues a line and writes every queued line that fits. A failed write is
    cut back (ftruncate frees space even on a full disk) to the last whole line, so the
    file never ends in half an event; the line stays queued and the next `add` tries
    again, in order. `error` is the OSError that left lines waiting (None once caught up).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._size = os.fstat(self._fd).st_size   # the end of the last whole line
        self.waiting: list[bytes] = []
        self.written = 0
        self.error: OSError | None = None
        self.last_written: dict | None = None     # the last event that reached the file
        self._events: list[dict] = []             # the events behind `waiting`

    def add(self, event: dict) -> None:
        self.waiting.append((events.dumps(event) + "\n").encode("utf-8"))
        self._events.append(event)
        self.flush()

    def flush(self) -> None:
        while self.waiting and self._fd is not None:
            line = self.waiting[0]
            try:
                done = 0
                while done < len(line):
                    done += os.write(self._fd, line[done:])
            except OSError as exc:
                self.error = exc
                try:
                    os.ftruncate(self._fd, self._size)
                except OSError:
                    pass
                return
            self._size += len(line)
            self.written += 1
            self.waiting.pop(0)
            self.last_written = self._events.pop(0)
        self.error = None

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


def new_run_directory(parent: str, title: str) -> str:
    """Create and return a fresh directory under `parent` (never an existing one)."""
    os.makedirs(parent, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-")[:60] or "run"
    base = os.path.join(parent, f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}")
    for n in range(1, 1000):
        path = base if n == 1 else f"{base}-{n}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise UsageError(f"could not create a new run directory under {parent}")


class RunDirectoryExporter(Listener):
    """Writes a run to disk. `path` is None until the directory exists."""

    def __init__(self, parent: str, title: str, announce=None) -> None:
        self.parent = check_writable(parent)
        self.title = title
        self.path: str | None = None
        self._pending: list[dict] = []
        self._events: EventsFile | None = None
        self._announce = announce
        self._session = None
        self._said: set[str] = set()      # failures reported (each once)
        self._variant = ""                # the variant the latest event belongs to
        self.results_error: OSError | None = None
        self.on_created: list = []  # callbacks(path), for exporters that add files

    def attach(self, session) -> None:
        self._session = session

    def _failed(self, key: str, message: str) -> None:
        """Report a write failure once (the run goes on; the exit code says it)."""
        if key in self._said:
            return
        self._said.add(key)
        if self._session is not None and hasattr(self._session, "write_failed"):
            self._session.write_failed(message, self._variant)

    def _create(self) -> None:
        try:
            path = new_run_directory(self.parent, self.title)
        except (OSError, UsageError) as exc:
            self._failed("create", f"export: no run directory could be created in {self.parent} "
                                   f"({getattr(exc, 'strerror', None) or exc}); nothing is written, "
                                   "the statistics printed here are complete")
            return
        try:
            self._events = EventsFile(os.path.join(path, "events.jsonl"))
        except OSError as exc:
            try:
                os.rmdir(path)
            except OSError:
                pass
            self._failed("create", f"export: {path}/events.jsonl cannot be created ({exc.strerror}); "
                                   "nothing is written, the statistics printed here are complete")
            return
        self.path = path
        pending, self._pending = self._pending, []
        for ev in pending:
            self._write(ev)
        if self._announce:
            self._announce(self.path)
        for callback in self.on_created:
            callback(self.path)

    def _write(self, ev: dict) -> None:
        ok_before = self._events.error is None
        self._events.add(ev)
        if self._events.error is not None and ok_before:
            self._failed("events", f"export: writing {self._events.path} failed "
                                   f"({self._events.error.strerror}): it holds {self.where_events_stop()}; "
                                   "later events wait in memory and are written if space frees up")

    def where_events_stop(self) -> str:
        """What events.jsonl holds, in words: up to which event of which variant."""
        last = self._events.last_written if self._events is not None else None
        if last is None:
            return "no event"
        what = last["event"]
        if what == "iteration":
            what = f"{last['kind']} iteration {last['index']}"
        return f"{self._events.written} events, up to {what} of {last.get('variant')}"

    def on_event(self, event: dict) -> None:
        self._variant = event.get("variant") or self._variant
        if self.path is None:
            self._pending.append(event)
            if event["event"] == "model_loaded" and "create" not in self._said:
                self._create()
            return
        self._write(event)

    def variant_done(self, builder) -> None:
        if self.path is None:
            return
        try:
            write_json_atomic(os.path.join(self.path, "results.json"), builder.document())
            self.results_error = None
        except OSError as exc:
            self.results_error = exc
            self._failed("results", f"export: {self.path}/results.json could not be written "
                                    f"({exc.strerror}); no partial file is left")

    def session_done(self, builder) -> None:
        self.variant_done(builder)
        if self._events is None:
            return
        self._events.flush()   # a last try: space may have been freed meanwhile
        if self._said:
            events_state = ("events.jsonl is complete" if not self._events.waiting else
                            f"events.jsonl holds {self.where_events_stop()}; the last "
                            f"{len(self._events.waiting)} events could not be written")
            results_state = ("results.json is complete" if self.results_error is None else
                             f"results.json was not written ({self.results_error.strerror})")
            self._failed("state", f"export to {self.path}: {results_state}; {events_state}; "
                                  "the statistics printed here cover every iteration")
        self._events.close()
        self._events = None
