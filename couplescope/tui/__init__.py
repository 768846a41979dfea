"""The Textual app (its own issue)."""


def launch(args) -> int:
    from couplescope.errors import UsageError

    raise UsageError("the interactive app is not built yet; use --preset or --model for a headless run")
