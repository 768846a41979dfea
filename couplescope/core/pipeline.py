"""The one place a run is assembled: listeners attached in one order, one exit-code rule.

Every front end (the CLI, the app, the library API) and every benchmark starts a run
here, from a RunRequest (couplescope.core.request), adding only its own listeners (the
printer, the app's bridge, a user's). The order is fixed: the run directory first (so
events reach the disk before anything else can fail), telemetry, traces, then the
front end's listeners.
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.core import signals
from couplescope.core.session import Session
from couplescope.protocol.contract import EXIT_INTERRUPTED, EXIT_WRITE_FAILED, exit_code_for_signal
from couplescope.results.builder import ResultsBuilder


@dataclass
class Outcome:
    builder: ResultsBuilder
    run_directory: str | None
    interrupted: bool
    #: the signal that stopped the run (SIGINT, SIGTERM, SIGHUP), if one did
    signal: int | None = None
    #: what could not be written (Session.write_errors)
    write_errors: tuple = ()

    @property
    def exit_code(self) -> int:
        """The command's exit code (docs/usage.md has the table), first that applies: 128 +
        the signal that stopped the run; 3 when results could not all be written; else
        what the variants' verdicts say (ResultsBuilder.exit_code: 130, 2, 1, 0)."""
        if self.signal is not None:
            return exit_code_for_signal(self.signal)
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.write_errors:
            return EXIT_WRITE_FAILED
        return self.builder.exit_code()

    def document(self) -> dict:
        """The results document, with where it was written and the exit code."""
        doc = self.builder.document()
        doc["run_directory"] = self.run_directory
        doc["exit_code"] = self.exit_code
        return doc


class Pipeline:
    """A run ready to go: `run()` measures (blocking), `stop()` ends it from any thread.

    `start_worker` replaces real workers (couplescope.core.replay); a replayed run has
    no process to sample, so it gets no telemetry listener: its recorded telemetry
    events are replayed with the rest.
    """

    def __init__(self, request, listeners=(), announce=None, start_worker=None) -> None:
        from couplescope.export.run_dir import RunDirectoryExporter

        require_scratch()
        self.request = request
        self.exporter = None
        chain = []
        if request.export is not None:
            self.exporter = RunDirectoryExporter(request.export, request.title, announce=announce)
            chain.append(self.exporter)
        if start_worker is None:
            from couplescope.core.telemetry.listener import TelemetryListener

            chain.append(TelemetryListener(request.telemetry_hz))
        if self.exporter is not None:
            from couplescope.export.traces import TraceListener

            chain.append(TraceListener(self.exporter))
        chain.extend(listeners)
        self.session = Session(request.specs, chain, title=request.title, start_worker=start_worker,
                               worker_env=request.worker_env())

    def run(self) -> Outcome:
        """Measure every variant. SIGINT, SIGTERM and SIGHUP stop the run and keep what was
        measured (couplescope.core.signals), when this runs in the main thread."""
        with signals.handled():
            builder = self.session.run()
        path = self.exporter.path if self.exporter is not None else None
        return Outcome(builder, path, self.session.interrupted, self.session.signal,
                       tuple(self.session.write_errors))

    def stop(self) -> None:
        self.session.stop()


def require_scratch() -> str:
    """The process's scratch folder (couplescope.protocol.scratch), made before anything
    runs: a $TMPDIR that cannot be written is bad input, not a failure half way."""
    import tempfile

    from couplescope.protocol import scratch
    from couplescope.protocol.errors import UsageError

    try:
        return scratch.folder()
    except OSError as exc:
        raise UsageError(f"cannot create a temporary folder in {tempfile.gettempdir()} "
                         f"({exc.strerror or exc}); set TMPDIR to a writable directory") from None


def run(request, listeners=(), announce=None, start_worker=None) -> Outcome:
    """Build the pipeline for `request` and run it."""
    return Pipeline(request, listeners, announce, start_worker).run()
