"""The `couplescope` command: parse, then --list, --plot/--compare, --tensorboard or
--perfetto, the app, or a headless run.

Headless when given --preset or --model; the Textual app with --tui (or with no
arguments in a terminal). The one module that knows both front ends: the CLI and the
app never import each other. Nothing heavy is imported before the mode is known, so
`couplescope --help` never imports torch or textual.
"""

from __future__ import annotations

import os
import signal
import sys

from couplescope.frontends.cli.parser import _glue_pass_through, build_parser, options_from
from couplescope.protocol.contract import exit_code
from couplescope.protocol.errors import UsageError, WriteError


#: how the closing line names the signal that ended a run
ENDED_BY = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(_glue_pass_through(sys.argv[1:] if argv is None else list(argv)))
    from couplescope.core.ending import signals_end_the_run, signum_of

    try:
        interactive = args.tui or (argv is None and len(sys.argv) == 1 and sys.stdin.isatty()
                                   and sys.stdout.isatty())
        if interactive:   # the app handles its signals in its own event loop
            from couplescope.frontends.tui import launch, leave

            code = launch(options_from(args), recording=_recording(args))
            if argv is None:   # the command itself: no blank terminal while Python tears down
                leave(code)
            return code
        with signals_end_the_run():
            return _dispatch(args)
    except (UsageError, WriteError) as exc:
        if args.debug:
            raise
        print(f"couplescope: {exc}", file=sys.stderr)
        # a file that could not be written (a full disk) is not bad input: 3, as for a run
        return exit_code(refused=isinstance(exc, UsageError), not_saved=isinstance(exc, WriteError))
    except KeyboardInterrupt as exc:   # before or after a run: Ctrl-C, SIGTERM, SIGHUP
        signum = signum_of(exc)
        try:
            print(f"couplescope: {ENDED_BY.get(signum, signal.Signals(signum).name)}", file=sys.stderr)
        except OSError:
            pass
        return exit_code(signal=signum)
    except BrokenPipeError:
        # the reader went away (`| head`): the worker was already ended; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_code(output_lost=True)


def _recording(args):
    """--replay's recording (couplescope.core.replay.Recording), None without --replay."""
    if not args.replay:
        return None
    from couplescope.core.replay import Recording
    from couplescope.frontends.cli.parser import refuse_with_replay

    refuse_with_replay(args)
    return Recording.read(args.replay)


def _dispatch(args) -> int:
    """--list, --plot/--compare of saved runs, --tensorboard, --perfetto or a headless run."""
    if args.list:
        from couplescope.frontends.cli.listing import print_list

        print_list()
        return 0
    if args.plot or args.compare or args.output or args.threshold is not None:
        from couplescope.frontends.cli.saved_runs import run_saved

        return run_saved(args)
    if args.tensorboard and args.perfetto:
        raise UsageError("--tensorboard and --perfetto each start a server: give one")
    if args.tensorboard:
        from couplescope.export.tensorboard_server import serve

        return serve(args.tensorboard, port=args.port)
    if args.perfetto:
        from couplescope.export.perfetto_server import serve

        return serve(args.perfetto, port=args.port)
    from couplescope.frontends.cli.headless import run_headless

    return run_headless(args)


if __name__ == "__main__":
    sys.exit(main())
