"""Traces and TensorBoard scalars in the run directory (the parent's side of profiling).

Layout, one TensorBoard run per variant (the TensorBoard profiler plugin treats every
directory holding *.pt.trace.json[.gz] files as a run, the scalars dashboard every
directory holding event files):

    <run_dir>/traces/<variant>/<worker>.<time_ns>.pt.trace.json.gz   (torch.profiler)
    <run_dir>/traces/<variant>/events.out.tfevents.*                 (per-iteration scalars)

Why staging: the run directory is created only when the first variant has loaded its
model (so bad input leaves nothing), but the worker must be told where to write before
it starts. So each worker writes its trace into a private staging directory (passed as
COUPLESCOPE_TRACE_DIR) and this listener moves the files into the run directory when
the worker has ended, then records where they went in results.json and events.jsonl.

The scalars (iteration time by kind, each phase, the check's error, a training step's
loss) are written here,
from the iteration events the parent receives: never in the worker's timed loop. They
use tensorboard's own event writer, so the parent does not import torch for them.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from couplescope.export.disk_full import remove_quietly
from couplescope.protocol import events, scratch
from couplescope.protocol.contract import TRACE_DIR_ENV, TRACE_SUFFIXES
from couplescope.protocol.errors import UsageError
from couplescope.protocol.listener import Listener

TRACES = "traces"


def run_name(label: str) -> str:
    """The directory name of a variant's TensorBoard run."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "variant"


#: timed iterations of a variant written as scalars in full; beyond this, every k-th
MAX_TIMED_SCALARS = 10_000


class ScalarWriter:
    """Per-iteration scalars for one variant, in tensorboard's event file format.

    A long run's timed iterations are thinned to about MAX_TIMED_SCALARS points (every
    k-th, at its own step; failed checks always written; under MPI counting every rank's,
    so 1024 ranks keep every k-th step of each): tensorboard's writer checksums
    every record in pure Python (about 50 us per iteration, seconds of the parent's CPU
    for a 50 000-call run), and its dashboard shows 1 000 points per series by default.
    results.json and events.jsonl keep every iteration.

    Records are written here, in the order they come, rather than by tensorboard's own
    EventFileWriter: its background thread waited on a 10-deep queue for every record, and a
    failed write (a full disk) killed that thread with a traceback on stderr, then raised on
    the next record; written here, a failure is an OSError the listener handles."""

    def __init__(self, logdir: str, timed: int = 0) -> None:
        import socket
        import time

        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        # the name tensorboard's reader looks for (EventFileWriter's pattern)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.0"
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "wb")
        self._writer = RecordWriter(self._file)
        try:
            self._add(self._event(wall_time=time.time(), file_version="brain.Event:2"))
        except OSError:
            self.discard()
            raise
        self.steps: dict = {}   # per rank (None outside MPI)
        self.node_samples: dict = {}   # telemetry samples have their own step axis (per node)
        self.every = max(1, -(-timed // MAX_TIMED_SCALARS))

    def iteration(self, ev: events.Iteration) -> None:
        """One call's iteration event: steps count every iteration of the variant (of a
        rank), in order.

        Under MPI every rank reports each iteration, so the tags end in /rank<R>."""
        rank = ev.rank
        step = self.steps[rank] = self.steps.get(rank, 0) + 1
        if self.every > 1 and ev.kind == "timed" and ev.passed and ev.index % self.every:
            return
        suffix = f"/rank{rank}" if rank is not None else ""
        values = [(f"iteration_seconds/{ev.kind}", ev.seconds)]
        values += [(f"phase_seconds/{name}", sec) for name, sec in (ev.phases or {}).items()]
        err = ev.max_rel_error
        if isinstance(err, (int, float)) and err == err and err not in (float("inf"), float("-inf")):
            values.append(("check/max_rel_error", err))
        loss = ev.loss   # a training step's (--task train)
        if isinstance(loss, (int, float)) and loss == loss and loss not in (float("inf"), float("-inf")):
            values.append(("training/loss", loss))
        summary = self._summary(value=[self._summary.Value(tag=tag + suffix, simple_value=float(v))
                                       for tag, v in values if isinstance(v, (int, float))])
        self._add(self._event(wall_time=ev.t, step=step, summary=summary))

    def _add(self, event) -> None:
        self._writer.write(event.SerializeToString())

    def telemetry(self, ev: events.Telemetry) -> None:
        """A telemetry sample: the series of results.json's timeline, under telemetry/
        (a node's sample under telemetry/<node>/, on that node's own step axis)."""
        from couplescope.results.telemetry import scalar_series

        node = ev.node
        prefix = f"telemetry/{node}/" if node else "telemetry/"
        self.node_samples[node] = step = self.node_samples.get(node, 0) + 1
        values = scalar_series(ev.sample or {})
        summary = self._summary(value=[self._summary.Value(tag=f"{prefix}{k}", simple_value=float(v))
                                       for k, v in values.items()])
        self._add(self._event(wall_time=ev.t, step=step, summary=summary))

    def close(self, quietly: bool = False) -> bool:
        """Flush and close; with `quietly`, a failure (a full disk) is returned, not raised."""
        try:
            self._file.close()
            return True
        except OSError:
            if not quietly:
                raise
            return False

    def discard(self) -> None:
        """Close and remove the file: it could not be written whole (a full disk), and
        TensorBoard would read a cut-off file as if it held every scalar."""
        try:
            self._file.close()
        except OSError:
            pass
        remove_quietly(self.path)


class TraceListener(Listener):
    """Moves each variant's trace into the run directory and writes its scalars."""

    def __init__(self, exporter) -> None:
        self.exporter = exporter
        self.session = None
        self.staging = None
        self._writers: dict[str, ScalarWriter] = {}
        #: variants whose scalars file was closed whole (a sample that comes after its worker
        #: ended, as telemetry's last may, writes nothing more into it)
        self._whole: set[str] = set()
        self._timed: dict[str, int] = {}   # variant -> timed iterations asked for
        self._scalars_failed = False
        self._without_scalars: set[str] = set()   # variants whose scalars are not written
        if exporter is not None:
            # Checked now (bad input before anything runs), created when a worker starts:
            # a listener that never runs leaves nothing behind.
            os.rmdir(self._make_staging())

    @staticmethod
    def _make_staging() -> str:
        try:
            return scratch.subfolder("traces-")
        except OSError as exc:
            raise UsageError(f"cannot create a staging directory for traces in {tempfile.gettempdir()} "
                             f"({exc.strerror or exc}); set TMPDIR to a writable directory") from None

    def attach(self, session) -> None:
        self.session = session

    def variant_dir(self, label: str) -> str | None:
        if self.exporter is None or not self.exporter.path:
            return None
        return os.path.join(self.exporter.path, TRACES, run_name(label))

    def worker_env(self, spec) -> dict:
        if self.exporter is None or not spec.profile_iterations:
            return {}
        if self.staging is None:
            try:
                self.staging = self._make_staging()
            except UsageError as exc:  # mid-run: the worker summarizes into its own temp dir instead
                self._emit("diagnostic", spec.label, level="warning", setting="export",
                           message=f"traces not kept: {exc}")
                return {}
        return {TRACE_DIR_ENV: os.path.join(self.staging, run_name(spec.label))}

    def on_event(self, ev: dict) -> None:
        ev = events.typed(ev)
        if ev.event == "run_started":
            self._timed[ev.variant or ""] = ev.run_spec.iterations or 0
        elif ev.event == "model_loaded" and ev.ranks:   # each rank reports every iteration
            label = ev.variant or ""
            self._timed[label] = self._timed.get(label, 0) * ev.ranks
        if ev.event not in ("iteration", "iterations", "telemetry"):
            return
        label = ev.variant or ""
        if label in self._whole:   # closed whole when its worker ended: nothing more goes in
            return
        if self._scalars_failed:
            if self.variant_dir(label) is not None and label not in self._without_scalars:
                self._without_scalars.add(label)
                # its file, begun before another variant's write failed, would end part-way:
                # removed, as the failed one's is, and named with it
                writer = self._writers.pop(label, None)
                if writer is not None:
                    writer.discard()
                self.exporter.lost(self._relative(os.path.join(self.variant_dir(label), "events.out.tfevents.*")))
            return
        writer = self._writers.get(label)
        if writer is None:
            target = self.variant_dir(label)
            if target is None:
                return
            try:
                os.makedirs(target, exist_ok=True)
                writer = self._writers[label] = ScalarWriter(target, self._timed.get(label, 0))
            except ImportError as exc:
                self._scalars_failed = True
                self._emit("diagnostic", label, level="warning", setting="export",
                           message=f"TensorBoard scalars not written: {type(exc).__name__}: {exc} "
                                   "(pip install tensorboard torch-tb-profiler)")
                return
            except OSError as exc:
                self._scalars_lost(label, exc, os.path.join(target, "events.out.tfevents.*"))
                return
        try:
            if ev.event == "telemetry":
                writer.telemetry(ev)
            else:
                for call in ev.calls:   # a batch's, expanded once and shared
                    writer.iteration(call)
        except OSError as exc:   # a full disk
            self._scalars_lost(label, exc)

    def _relative(self, path: str) -> str:
        return os.path.relpath(path, self.exporter.path)

    def _scalars_lost(self, label: str, exc: OSError, path: str | None = None) -> None:
        """Scalars cannot be written (a full disk): the variant's unfinished file is removed,
        the run goes on without scalars, and the exporter lists what is missing."""
        self._scalars_failed = True
        writer = self._writers.pop(label, None)
        if writer is not None:
            writer.discard()
            path = writer.path
        self._without_scalars.add(label)
        self.exporter.lost(self._relative(path), exc)
        self._emit("diagnostic", label, level="warning", setting="export",
                   message=f"TensorBoard scalars not written: {exc.strerror or exc}")

    def worker_ended(self, spec, proc) -> None:
        label = spec.label
        writer = self._writers.get(label)
        if writer is not None:
            try:
                writer.close()
                del self._writers[label]
                self._whole.add(label)
            except OSError as exc:   # its last records: the file is not whole
                self._scalars_lost(label, exc)
        if self.staging is None:
            return
        source = os.path.join(self.staging, run_name(label))
        files = sorted(f for f in os.listdir(source) if f.endswith(TRACE_SUFFIXES)) if os.path.isdir(source) else []
        target = self.variant_dir(label)
        moved = self._move_traces(label, source, files, target) if files and target is not None else []
        shutil.rmtree(source, ignore_errors=True)
        for path in moved:   # results.json learns where they went from these events alone
            self._emit("trace_written", label, path=path,
                       relative_path=os.path.relpath(path, self.exporter.path))

    def _move_traces(self, label: str, source: str, files: list[str], target: str) -> list[str]:
        """Move the worker's trace files into the run directory; one that cannot be moved
        whole is removed (a 0-byte .gz is not a trace) and listed as missing."""
        moved, error = [], None
        for name in files:
            path = os.path.join(target, name)
            if error is None:
                try:
                    os.makedirs(target, exist_ok=True)
                    shutil.move(os.path.join(source, name), path)
                    moved.append(path)
                    continue
                except OSError as exc:
                    error = exc
                    remove_quietly(path)
                    self._emit("diagnostic", label, level="warning", setting="export",
                               message=f"profiler trace not kept: {exc.strerror or exc}")
            self.exporter.lost(self._relative(path), error)
        _remove_if_empty(target)
        return moved

    def _emit(self, kind: str, label: str, **fields) -> None:
        if self.session is not None:
            self.session.emit(events.make(kind, label, **fields))

    def session_done(self, builder) -> None:
        for label, writer in list(self._writers.items()):
            if not writer.close(quietly=True):
                writer.discard()
                self.exporter.lost(self._relative(writer.path), OSError("the last scalars could not be written"))
        self._writers.clear()
        if self.exporter is not None and self.exporter.path:
            traces = os.path.join(self.exporter.path, TRACES)
            for label in os.listdir(traces) if os.path.isdir(traces) else []:
                _remove_if_empty(os.path.join(traces, label))
            _remove_if_empty(traces)
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None


def _remove_if_empty(folder: str) -> None:
    """A folder whose files could not be written is not left behind, empty."""
    try:
        os.rmdir(folder)
    except OSError:
        pass   # not empty (or gone)
