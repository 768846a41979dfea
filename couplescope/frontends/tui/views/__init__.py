"""The app's views, in tab order: one module each, registered here with one line.

Each module defines `VIEW`, an AppView subclass (views/base.py). The app builds its tabs,
its view keys and the help screen's view paragraphs from this list, and routes events to
the views that follow them (docs/architecture.md, "Adding an app view").
"""

from __future__ import annotations

import importlib

REGISTRY = (
    "couplescope.frontends.tui.views.pick",
    "couplescope.frontends.tui.views.watch",
    "couplescope.frontends.tui.views.telemetry",
    "couplescope.frontends.tui.views.history",
)


def view_classes() -> list:
    """The registered views' classes, in tab order."""
    return [importlib.import_module(name).VIEW for name in REGISTRY]
