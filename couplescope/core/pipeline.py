"""The one place a run is assembled: listeners attached in one order, one exit-code rule.

Every front end (the CLI, the app, the library API) and every benchmark starts a run
here, from a RunRequest (couplescope.core.request), adding only its own listeners (the
printer, the app's bridge, a user's). The order is fixed: the run directory first (so
events reach the disk before anything else can fail), telemetry, traces, then the
front end's listeners. An exported run gets summary.png at the end (export/summary_plot.py).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from couplescope.core.session import Session
from couplescope.protocol.contract import exit_code
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
    #: the run directory's files that could not be written (results.json among them when
    #: it could not be), relative to it; every file there is whole
    missing: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """protocol.contract.exit_code: 128 + the signal for a run a signal ended (Ctrl-C's
        when none is known), 3 when the results could not be written, else the results' own
        code (0, 1, 2 or 130)."""
        return exit_code(signal=(self.signal or signal.SIGINT) if self.interrupted else None,
                         not_saved=bool(self.not_saved), outcomes=self.builder.outcomes())

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

    `workers` (couplescope.core.workers) starts the variants' workers: real worker
    processes by default; a recording's (couplescope.core.replay) or made-up ones
    (couplescope.core.synthetic) have no process to sample, so such a run gets no
    telemetry listener: a recording's telemetry events are replayed with the rest.
    """

    def __init__(self, request, listeners=(), announce=None, workers=None, summary_plot=True) -> None:
        from couplescope.export.run_dir import RunDirectoryExporter

        if workers is None:
            from couplescope.core.runner import LiveWorkers

            workers = LiveWorkers()
        self.request = request
        self.exporter = None
        self.summary_plot = None
        chain = []
        if request.export is not None:
            self.exporter = RunDirectoryExporter(request.export, request.title, announce=announce)
            chain.append(self.exporter)
        if workers.processes:
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
        from couplescope.core import rounds

        plan = rounds.plan(request.specs, getattr(request, "rounds", None), getattr(request, "order_seed", None),
                           getattr(request, "baseline", None), getattr(request, "orders", None))
        self.session = Session(request.specs, chain, title=request.title, workers=workers,
                               worker_env=request.worker_env(), plan=plan)

    def run(self) -> Outcome:
        builder = self.session.run()
        path = self.exporter.path if self.exporter is not None else None
        not_saved = self.exporter.failure if self.exporter is not None else None
        missing = tuple(self.exporter.missing) if self.exporter is not None else ()
        plot = self.summary_plot
        return Outcome(builder, path, self.session.interrupted, self.session.signal, not_saved,
                       plot and plot.path, plot and plot.error, missing)

    def stop(self) -> None:
        self.session.stop()

    def copy_to(self, parent: str):
        """Copy this run's directory to a new run directory under `parent`, named by the
        run's start time, results.json first (export/run_copy.py: a CopiedRun, whose
        `missing` names what a full disk kept out). The app runs with a run directory in a
        temporary folder and exports a run by this copy, so what it exports is what
        --export writes."""
        from couplescope.export.run_copy import copy_run
        from couplescope.protocol.errors import UsageError

        if self.exporter is None or self.exporter.path is None:
            raise UsageError("nothing to export: no variant loaded its model")
        return copy_run(self.exporter.path, parent, self.request.title, self.exporter.started,
                        self.session.builder.document())


def run(request, listeners=(), announce=None, workers=None) -> Outcome:
    """Build the pipeline for `request` and run it."""
    return Pipeline(request, listeners, announce, workers).run()
