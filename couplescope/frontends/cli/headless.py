"""A headless run: the request, the pipeline with the printer, the closing lines."""

from __future__ import annotations

import json
import os
import sys

from couplescope.frontends.cli.parser import options_from
from couplescope.protocol.contract import TRACE_SUFFIXES


def run_headless(args) -> int:
    from couplescope.core import pipeline, request
    from couplescope.frontends.cli.printer import HeadlessPrinter

    req = request.build(options_from(args))
    for note in req.notes:   # before the run: a variant that falls back to the python host
        print(f"couplescope: {note}", file=sys.stderr)
    stream = sys.stderr if args.json else sys.stdout
    printer = HeadlessPrinter(len(req.specs), out=stream, quiet_iterations=args.quiet)
    try:
        run = pipeline.Pipeline(req, [printer], announce=lambda path: printer.print(f"run directory: {path}"))
        outcome = run.run()
    finally:
        printer.close()
    if outcome.run_directory:
        printer.print(f"results: {os.path.join(outcome.run_directory, 'results.json')}")
        traces = os.path.join(outcome.run_directory, "traces")
        if os.path.isdir(traces):
            has_trace = any(name.endswith(TRACE_SUFFIXES) for _, _, files in os.walk(traces) for name in files)
            if has_trace:
                printer.print(f"traces: couplescope --tensorboard {outcome.run_directory}")
            else:
                printer.print(f"no profiler traces (profiling was off or skipped); per-iteration "
                              f"scalars: couplescope --tensorboard {outcome.run_directory}")
    if args.json:
        sys.stdout.write(json.dumps(outcome.builder.document(), indent=1, default=str) + "\n")
    if outcome.interrupted:
        from couplescope.core.signals import signal_name

        how = signal_name(outcome.signal) if outcome.signal is not None else "SIGINT"
        printer.print(f"couplescope: stopped by {how}: what was measured is kept", err=True)
    return outcome.exit_code
