"""The Textual app (`couplescope --tui`, or `couplescope` alone in a terminal).

Kept import-light: textual, torch and the app's modules are imported only when the
app is launched, so `couplescope --help` and the headless CLI never pay for them.
"""


def launch(options, recording=None) -> int:
    """Open the app with the command line's options (RunOptions) filled in; the exit code.
    With a `recording` (--replay FILE), r plays it back instead of running the form.

    The app needs a terminal on both sides: without one (an sbatch or nohup job, input from
    /dev/null) Textual would wait for keys that never come and spin a core, so that is
    refused at once. A SIGTERM or SIGHUP while it runs saves every run not yet exported
    (CoupleScopeApp.end_on_signal) and exits 128 + the signal."""
    import sys

    from couplescope.protocol.errors import UsageError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("--tui needs a terminal (its input and output are not one here); in a "
                         "batch job run headless: couplescope --model NAME or --preset NAME")
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.terminal_watch import TerminalWatch

    app = CoupleScopeApp(options, recording=recording)
    watch = TerminalWatch(sys.stdin.fileno()).start()   # a hang-up that sends no SIGHUP
    try:
        app.run()
    finally:
        watch.stop()
    for line in app.farewell:   # after the terminal is restored (it may be gone: SIGHUP)
        try:
            print(line, file=sys.stderr)
        except OSError:
            break
    return app.exit_code


def leave(code: int):
    """End the `couplescope` process at once, the app closed and its last lines written:
    the interpreter's own teardown of what the app had loaded (tensorboard, numpy and the
    rest: 0.7 to 2 s on a loaded 2-core machine) left the terminal blank after q. The
    exit handlers run first (this process's scratch folder goes), the streams are flushed,
    then the process ends with `code`; nothing of the app is running by then (its workers
    stopped, its export finished: CoupleScopeApp.on_unmount)."""
    import atexit
    import os
    import sys

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
