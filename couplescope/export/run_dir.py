"""The run directory: events.jsonl as the run goes, results.json after every variant.

The directory is created when the first variant has loaded its model, so bad input
(which fails before that) leaves nothing behind; an existing directory is never reused.
events.jsonl is appended and flushed per event, so a run killed half way keeps every
finished iteration; results.json is replaced atomically (write, fsync, rename). A write
that fails is reported and survived (RunDirectoryExporter says how).
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


def output_log_name(variant: str) -> str:
    """The file in the run directory that keeps what a variant's worker printed."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", variant).strip("-.") + ".output.log"


def readable_json(document: dict) -> str:
    """The document indented for people, with each variant's iterations one per line.

    json's indenting encoder is pure Python (0.8 s for 50 000 iterations here); the
    structure stays indented and the iterations, nearly all of the bytes, go through the
    C encoder, one compact line each (3-4x faster, and easier to read and to grep)."""
    compact = json.JSONEncoder(separators=(", ", ": "), allow_nan=False, default=str).encode
    blocks = []
    skeleton = dict(document)
    variants = []
    for variant in document.get("variants", []):
        its = variant.get("iterations")
        if isinstance(its, list) and its:
            variant = {**variant, "iterations": f"\0iterations {len(blocks)}\0"}
            blocks.append(",\n    ".join(map(compact, its)))
        variants.append(variant)
    if "variants" in document:
        skeleton["variants"] = variants
    text = json.dumps(skeleton, indent=1, allow_nan=False, default=str)
    for i, block in enumerate(blocks):
        text = text.replace(json.dumps(f"\0iterations {i}\0"), f"[\n    {block}\n   ]", 1)
    return text


def write_json_atomic(path: str, document: dict) -> None:
    """Write, fsync, rename: readers see the old file or the new one, never half of one.
    A failed write (a full disk) leaves no temporary file behind and raises OSError."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(readable_json(document))
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
    """Writes a run to disk. `path` is None until the directory exists.

    A write that fails (a full disk, a quota, a vanished mount) never ends the run and
    never loses what is in memory: the failure is said once (a `log` event, which the
    printer and the app show), events.jsonl stops, results.json is still attempted after
    every variant (space may have come back), no temporary file is left, and `failure`
    says what could not be written (the command then exits 3)."""

    def __init__(self, parent: str, title: str, announce=None) -> None:
        self.parent = check_writable(parent)
        self.title = title
        self.path: str | None = None
        self._pending: list[dict] = []
        self._events_file = None
        self._announce = announce
        self.on_created: list = []  # callbacks(path), for exporters that add files
        self._unwritten = True      # events results.json has not seen yet
        self.session = None
        #: what could not be written, in one line (None while everything was)
        self.failure: str | None = None
        self._events_failed = False

    def attach(self, session) -> None:
        self.session = session

    def _failed(self, what: str, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        first = self.failure is None
        self.failure = f"cannot write {what}: {reason}"
        if first and self.session is not None:
            self.session.emit(events.make("log", "", message=f"export: {self.failure}; the run goes on "
                                          "and its statistics are printed, but the run directory "
                                          "is incomplete"))

    def _create(self) -> None:
        try:
            self.path = new_run_directory(self.parent, self.title)
            self._events_file = open(os.path.join(self.path, "events.jsonl"), "a", encoding="utf-8")
        except OSError as exc:
            self._events_failed = True
            self._failed(self.path or self.parent, exc)
            return
        for ev in self._pending:
            self._write(ev)
        self._pending.clear()
        if self._announce:
            self._announce(self.path)
        for callback in self.on_created:
            callback(self.path)

    def _write(self, ev: dict) -> None:
        if self._events_failed:
            return
        try:
            self._events_file.write(events.dumps(ev) + "\n")
            self._events_file.flush()
        except OSError as exc:
            self._events_failed = True
            self._close_events()
            self._failed(os.path.join(self.path, "events.jsonl"), exc)

    def _close_events(self) -> None:
        if self._events_file is not None:
            try:
                self._events_file.close()
            except OSError:
                pass   # what could not be flushed is already reported
            self._events_file = None

    def on_event(self, event: dict) -> None:
        self._unwritten = True
        if self.path is None:
            self._pending.append(event)
            if event["event"] == "model_loaded" and not self._events_failed:
                self._create()
            return
        self._write(event)
        if event["event"] == "worker_output":
            self._write_output(event)

    def _write_output(self, ev: dict) -> None:
        """A worker's printed lines, in <variant>.output.log (a failed write is reported like
        any other; the lines stay in events.jsonl)."""
        target = os.path.join(self.path, output_log_name(ev["variant"]))
        dropped = ev["total"] - len(ev["lines"])
        head = [f"({dropped} earlier lines were not kept)"] if dropped > 0 else []
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(head + ev["lines"]) + "\n")
        except OSError as exc:
            self._failed(target, exc)

    def variant_done(self, builder) -> None:
        if self.path is None:
            return
        target = os.path.join(self.path, "results.json")
        try:
            write_json_atomic(target, builder.document())
            self._unwritten = False
        except OSError as exc:
            self._failed(target, exc)

    def session_done(self, builder) -> None:
        if self._unwritten:   # events since the last variant's write (else it is current)
            self.variant_done(builder)
        self._close_events()
