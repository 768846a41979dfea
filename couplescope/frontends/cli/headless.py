"""A headless run: the request, the pipeline with the printer, the closing lines."""

from __future__ import annotations

import json
import os
import shlex
import sys

from couplescope.frontends.cli.parser import options_from
from couplescope.protocol.contract import EXIT_WRITE_FAILED, TRACE_SUFFIXES


def run_headless(args) -> int:
    from couplescope.core import pipeline, request
    from couplescope.frontends.cli.printer import HeadlessPrinter, discard_stream

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
    results_json = os.path.join(outcome.run_directory or "", "results.json")
    if outcome.run_directory and os.path.exists(results_json):
        printer.print(f"results: {results_json}")
        traces = os.path.join(outcome.run_directory, "traces")
        if os.path.isdir(traces):
            has_trace = any(name.endswith(TRACE_SUFFIXES) for _, _, files in os.walk(traces) for name in files)
            command = f"couplescope --tensorboard {shlex.quote(outcome.run_directory)}"
            if has_trace:
                printer.print(f"traces: {command}")
            else:
                printer.print(f"no profiler traces (profiling was off or skipped); per-iteration "
                              f"scalars: {command}")
    code = outcome.exit_code
    if args.json and sys.stdout not in printer.lost:
        try:
            sys.stdout.write(json.dumps(outcome.builder.document(), indent=1, default=str) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:   # `--json > file` on a full disk
            discard_stream(sys.stdout)
            printer.print(f"couplescope: the results document could not be written to standard output "
                          f"({exc.strerror})", err=True)
            code = code if outcome.signal is not None else EXIT_WRITE_FAILED
    if outcome.interrupted:
        from couplescope.core.signals import signal_name

        how = signal_name(outcome.signal) if outcome.signal is not None else "SIGINT"
        printer.print(f"couplescope: stopped by {how}: what was measured is kept", err=True)
    return code
