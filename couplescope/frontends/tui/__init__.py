"""The Textual app (`couplescope --tui`, or `couplescope` alone in a terminal).

Kept import-light: textual, torch and the app's modules are imported only when the
app is launched, so `couplescope --help` and the headless CLI never pay for them.
"""


import sys

from couplescope.protocol.errors import UsageError


def launch(options) -> int:
    """Open the app with the command line's options (RunOptions) filled in; the exit code.

    Refused without a terminal (a batch job, nohup, `< /dev/null`): the app would wait
    for keys that never come and draw escape codes into a log. SIGTERM, SIGHUP and SIGINT
    stop a run in progress, export what it measured and exit with 128 + the signal, the
    terminal restored (CoupleScopeApp.stop_for_signal).
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the interactive app needs a terminal (stdin and stdout are not one); "
                         "in a batch job run headless: couplescope --preset NAME or --model NAME "
                         "(see --list and --help)")
    from couplescope.core import signals
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(options)
    with signals.stopping(app.stop_for_signal):
        app.run()
    for line in app.farewell:
        try:
            print(line, file=sys.stderr)
        except OSError:   # SIGHUP: the terminal is gone; the run directory says it all
            pass
    return app.return_code or 0
