"""The library API: run variants from Python and get the results document back.

    import couplescope
    spec = couplescope.RunSpec(model="simplenet", iterations=100)
    results = couplescope.run(spec)
    print(results["variants"][0]["stats"]["median"])

Runs go through the same Session, worker processes and exporters as the CLI, so a
number from the API means exactly what the same number printed by the CLI means.
"""

from __future__ import annotations

from couplescope.protocol.spec import RunSpec


def run(specs, export: str | None = None, telemetry_hz: float = 0.0, listeners=(),
        title: str = "", **settings) -> dict:
    """Measure one RunSpec or a list of them; return the results document (results.json).

    export: a parent directory for a new run directory (like --export DIR).
    telemetry_hz: sample CPU/GPU telemetry at this rate (0: off).
    listeners: extra couplescope.protocol.listener.Listener objects (to watch events live).
    settings: any other run option (docs/options.md), e.g. memory_limit="16G" (what a
    variant may plan to use; default half the memory available), rounds=4 (interleaved
    rounds; default 5 for two or more variants, 1 runs each to its end in turn),
    baseline="name", order_seed=7.
    Raises UsageError for bad input, before anything runs.
    """
    from couplescope.core import pipeline, request

    req = request.from_specs(specs, title=title, export=export, telemetry_hz=telemetry_hz, **settings)
    return pipeline.run(req, list(listeners)).document()


def load_preset(name_or_path: str, **overrides) -> list[RunSpec]:
    """The variants of a named preset or a TOML file, with field overrides applied."""
    from couplescope.core import presets

    return presets.load_preset(name_or_path, overrides)[1]
