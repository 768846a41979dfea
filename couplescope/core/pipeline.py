"""The one place a run is assembled: listeners attached in one order, one exit-code rule.

Every front end (the CLI, the app, the library API) and every benchmark starts a run
here, from a RunRequest (couplescope.core.request), adding only its own listeners (the
printer, the app's bridge, a user's). The order is fixed: the run directory first (so
events reach the disk before anything else can fail), telemetry, traces, then the
front end's listeners. An exported run gets summary.png at the end (export/summary_plot.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.core.session import Session
from couplescope.protocol.contract import EXIT_INTERRUPTED, EXIT_NOT_SAVED, exit_for_signal
from couplescope.results.builder import ResultsBuilder


@dataclass
class Outcome:
    builder: ResultsBuilder
    run_directory: str | None
    interrupted: bool
    #: the signal that ended the run (SIGINT for a plain Ctrl-C), None when none did
    signal: int | None = None
    #: why the run directory could not be written (a full disk), None when it was
    not_saved: str | None = None
    #: the exported run's summary.png, or why it was not drawn (None, None without --export)
    summary_plot: str | None = None
    summary_plot_error: str | None = None

    @property
    def exit_code(self) -> int:
        """protocol.contract's table: 128 + the signal for a run a signal ended, 3 when the
        results could not be written, else the results' own code (0, 1 or 2)."""
        if self.interrupted:
            return exit_for_signal(self.signal or EXIT_INTERRUPTED - 128)
        if self.not_saved:
            return EXIT_NOT_SAVED
        return self.builder.exit_code()

    def document(self) -> dict:
        """The results document, with where it was written and the exit code."""
        doc = self.builder.document()
        doc["run_directory"] = self.run_directory
        doc["exit_code"] = self.exit_code
        return doc


class Pipeline:
    """A run ready to go: `run()` measures (blocking), `stop()` ends it from any thread.

    `summary_plot=False` leaves summary.png out of an exported run (the app stages every
    run in a temporary directory and draws the picture only when a run is exported).

    `start_worker` replaces real workers (couplescope.core.replay); a replayed run has
    no process to sample, so it gets no telemetry listener: its recorded telemetry
    events are replayed with the rest.
    """

    def __init__(self, request, listeners=(), announce=None, start_worker=None, summary_plot=True) -> None:
        from couplescope.export.run_dir import RunDirectoryExporter

        self.request = request
        self.exporter = None
        self.summary_plot = None
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
        if self.exporter is not None and summary_plot:
            from couplescope.export.summary_plot import SummaryPlot

            # last: the front end's closing lines come before the second or two it takes
            self.summary_plot = SummaryPlot(self.exporter)
            chain.append(self.summary_plot)
        self.session = Session(request.specs, chain, title=request.title, start_worker=start_worker,
                               worker_env=request.worker_env())

    def run(self) -> Outcome:
        builder = self.session.run()
        path = self.exporter.path if self.exporter is not None else None
        not_saved = self.exporter.failure if self.exporter is not None else None
        plot = self.summary_plot
        return Outcome(builder, path, self.session.interrupted, self.session.signal, not_saved,
                       plot and plot.path, plot and plot.error)

    def stop(self) -> None:
        self.session.stop()


def run(request, listeners=(), announce=None, start_worker=None) -> Outcome:
    """Build the pipeline for `request` and run it."""
    return Pipeline(request, listeners, announce, start_worker).run()
