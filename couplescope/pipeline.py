"""The optional parts of a run that every front end attaches the same way.

Headless CLI, Textual app and library API all call `optional_listeners`, so telemetry
and trace export behave identically whichever front end started the run.
"""

from __future__ import annotations


def optional_listeners(options, exporter=None) -> list:
    """Listeners for telemetry and diagnostics, and traces (when exporting).

    With telemetry_hz 0 nothing is sampled, but the diagnostics that need only the run's
    settings (more threads than cores, ...) still run.

    `options` is anything with the CLI's attribute names (argparse Namespace or similar).
    """
    listeners = []
    hz = getattr(options, "telemetry_hz", 0) or 0
    from couplescope.telemetry import TelemetryListener, check_rate

    listeners.append(TelemetryListener(check_rate(hz)))
    if exporter is not None:
        from couplescope.export.traces import TraceListener

        listeners.append(TraceListener(exporter))
    return listeners
