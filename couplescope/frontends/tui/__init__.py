"""The Textual app (`couplescope --tui`, or `couplescope` alone in a terminal).

Kept import-light: textual, torch and the app's modules are imported only when the
app is launched, so `couplescope --help` and the headless CLI never pay for them.
"""


def launch(options) -> int:
    """Open the app with the command line's options (RunOptions) filled in; the exit code."""
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(options)
    app.run()
    return 0
