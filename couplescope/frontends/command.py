"""The `couplescope` command: parse, then --list, --tensorboard, the app, or a headless run.

Headless when given --preset or --model; the Textual app with --tui (or with no
arguments in a terminal). The one module that knows both front ends: the CLI and the
app never import each other. Nothing heavy is imported before the mode is known, so
`couplescope --help` never imports torch or textual.
"""

from __future__ import annotations

import os
import sys

from couplescope.core import signals
from couplescope.frontends.cli.parser import _glue_pass_through, build_parser, options_from
from couplescope.protocol import scratch
from couplescope.protocol.contract import EXIT_USAGE
from couplescope.protocol.errors import UsageError


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(_glue_pass_through(sys.argv[1:] if argv is None else list(argv)))
    # the scratch folders of runs killed with SIGKILL (couplescope.protocol.scratch)
    scratch.sweep()
    with signals.handled():   # SIGTERM and SIGHUP end a run as Ctrl-C does
        return _dispatch(args, argv)


def _dispatch(args, argv) -> int:
    try:
        if args.list:
            from couplescope.frontends.cli.listing import print_list

            print_list()
            return 0
        if args.tensorboard:
            from couplescope.export.tensorboard_server import serve

            return serve(args.tensorboard, port=args.port)
        interactive = args.tui or (argv is None and len(sys.argv) == 1 and sys.stdin.isatty()
                                   and sys.stdout.isatty())
        if interactive:
            from couplescope.frontends.tui import launch

            return launch(options_from(args))
        from couplescope.frontends.cli.headless import run_headless

        return run_headless(args)
    except UsageError as exc:
        if args.debug:
            raise
        print(f"couplescope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:   # Ctrl-C, or SIGTERM/SIGHUP before a worker ran
        _say(f"couplescope: stopped by {signals.signal_name(signals.signum_of(exc))}")
        return signals.exit_code_of(exc)
    except BrokenPipeError:
        # the reader went away (`| head`): the worker was already ended; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _say(text: str) -> None:
    """A last line on stderr, which may be gone (SIGHUP: the terminal closed)."""
    try:
        print(text, file=sys.stderr)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
