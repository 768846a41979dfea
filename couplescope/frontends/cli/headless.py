"""A headless run: the request, the pipeline with the printer, the closing lines."""

from __future__ import annotations

import errno
import os
import shlex
import signal
import sys

from couplescope.frontends.cli.parser import options_from
from couplescope.protocol.contract import TRACE_SUFFIXES


def run_headless(args) -> int:
    from couplescope.core import pipeline, request
    from couplescope.frontends.cli.printer import HeadlessPrinter

    workers = None
    if args.replay:   # a recorded run, played as it was shown live (hidden; for developers)
        from couplescope.core.replay import Recording
        from couplescope.frontends.cli.parser import refuse_with_replay

        refuse_with_replay(args)
        recording = Recording.read(args.replay)
        req, workers = recording.request(export=args.export), recording.workers()
    else:
        req = request.build(options_from(args))
    stream = sys.stderr if args.json else sys.stdout
    printer = HeadlessPrinter(len(req.specs), out=stream, quiet_iterations=args.quiet,
                              verbose=args.verbose, debug=args.debug)
    try:
        run = pipeline.Pipeline(req, [printer], announce=lambda path: printer.print(f"run directory: {path}"),
                                workers=workers)
        # before the run, once nothing can refuse it (bad input stays one line): a variant
        # that falls back to the python host
        for note in req.notes:
            print(f"couplescope: {note}", file=sys.stderr)
        outcome = run.run()
    finally:
        printer.close()
    saved = outcome.run_directory and "results.json" not in outcome.missing
    if outcome.not_saved and not saved:
        others = [name for name in outcome.missing if name != "results.json"]
        printer.print(f"couplescope: results not saved: {outcome.not_saved}; the statistics above "
                      "are what was measured" + (f"; not written either: {', '.join(others)}" if others else ""),
                      err=True)
    elif outcome.not_saved:
        printer.print(f"couplescope: export incomplete ({outcome.not_saved}): results.json was written; "
                      f"not written: {', '.join(outcome.missing) or 'none'}", err=True)
    if saved:
        printer.print(f"results: {os.path.join(outcome.run_directory, 'results.json')}")
        if outcome.summary_plot:
            printer.print(f"summary plot: {outcome.summary_plot}")
        elif outcome.summary_plot_error:
            printer.print(f"summary.png {outcome.summary_plot_error} "
                          f"(draw it later: couplescope --plot {outcome.run_directory} --output "
                          f"{os.path.join(outcome.run_directory, 'summary.png')})", err=True)
        traces = os.path.join(outcome.run_directory, "traces")
        if os.path.isdir(traces):
            has_trace = any(name.endswith(TRACE_SUFFIXES) for _, _, files in os.walk(traces) for name in files)
            command = f"couplescope --tensorboard {shlex.quote(outcome.run_directory)}"
            if has_trace:
                printer.print(f"traces: {command}  (with no internet in the browser: couplescope "
                              f"--perfetto {shlex.quote(outcome.run_directory)})")
            else:
                printer.print(f"no profiler traces (profiling was off or skipped); per-iteration "
                              f"scalars: {command}")
    json_lost = None
    if args.json:
        try:
            # as results.json is written, the calls in columns through the C encoder
            # (couplescope.results.document_text; docs/architecture.md, "What the harness
            # costs"): json's indenting encoder took longer than SimpleNet's calls did
            sys.stdout.write(outcome.builder.document_text() + "\n")
            sys.stdout.flush()
        except OSError as exc:
            # stdout went away (SIGHUP: EIO, a closed pipe: EPIPE): the run directory has it;
            # anything else (a full disk under `--json > file`) is results not written
            if exc.errno not in (errno.EIO, errno.EPIPE):
                json_lost = exc.strerror or str(exc)
                printer.print(f"couplescope: the JSON document could not be written to stdout: {json_lost}; "
                              "the statistics above are what was measured", err=True)
                try:   # what is left in the buffer would fail again at exit
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except OSError:
                    pass
    if outcome.interrupted:
        how = signal.Signals(outcome.signal or signal.SIGINT).name
        measured = sum((v.get("stats") or {}).get("n", 0) for v in outcome.builder.document().get("variants", []))
        if measured:
            printer.print(f"{how}: stopped; what was measured is kept", err=True)
        else:   # a batch job signalled during set-up: say so rather than promise results
            printer.print(f"{how}: stopped before the first timed iteration; nothing was measured"
                          + (", so nothing was exported" if req.export is not None and not outcome.run_directory
                             else ""), err=True)
    if json_lost and not outcome.not_saved:   # the results document was not written either
        outcome.not_saved = f"the JSON document could not be written to stdout: {json_lost}"
    return outcome.exit_code
