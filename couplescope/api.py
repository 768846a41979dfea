"""The library API: run variants from Python and get the results document back.

    import couplescope
    spec = couplescope.RunSpec(model="simplenet", iterations=100)
    results = couplescope.run(spec)
    print(results["variants"][0]["stats"]["median"])

Runs go through the same Session, worker processes and exporters as the CLI, so a
number from the API means exactly what the same number printed by the CLI means.
"""

from __future__ import annotations

from couplescope.errors import UsageError
from couplescope.spec import RunSpec, validate


def run(specs, export: str | None = None, telemetry_hz: float = 0.0, listeners=(),
        title: str = "") -> dict:
    """Measure one RunSpec or a list of them; return the results document (results.json).

    export: a parent directory for a new run directory (like --export DIR).
    telemetry_hz: sample CPU/GPU telemetry at this rate (0: off).
    listeners: extra couplescope.session.Listener objects (to watch events live).
    Raises UsageError for bad input, before anything runs.
    """
    from types import SimpleNamespace

    from couplescope.pipeline import optional_listeners
    from couplescope.session import Session

    if isinstance(specs, RunSpec):
        specs = [specs]
    specs = list(specs)
    if not specs:
        raise UsageError("nothing to run: give at least one RunSpec")
    for spec in specs:
        validate(spec)
    title = title or specs[0].model
    chain = []
    exporter = None
    if export is not None:
        from couplescope.export.run_dir import RunDirectoryExporter

        exporter = RunDirectoryExporter(export, title)
        chain.append(exporter)
    chain += optional_listeners(SimpleNamespace(telemetry_hz=telemetry_hz), exporter)
    chain += list(listeners)
    session = Session(specs, chain, title=title)
    builder = session.run()
    document = builder.document()
    document["run_directory"] = exporter.path if exporter else None
    document["exit_code"] = 130 if session.interrupted else builder.exit_code()
    return document


def load_preset(name_or_path: str, **overrides) -> list[RunSpec]:
    """The variants of a named preset or a TOML file, with field overrides applied."""
    from couplescope import presets

    return presets.load_preset(name_or_path, overrides)[1]
