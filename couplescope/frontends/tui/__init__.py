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
