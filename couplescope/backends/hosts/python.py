"""The python host: the worker's own Python loop makes the calls.

What a Python simulation code pays. Every backend has a python-host Coupling (its own
`open`), so this host serves every backend for every task the backend declares.
"""

from __future__ import annotations

from couplescope.backends.hosts.base import Host


class PythonHost(Host):
    name = "python"
    summary = "the worker's Python loop: what a Python simulation code pays"
    requires = "nothing beyond couplescope"
    default_candidate = True

    def serves(self, backend, task: str) -> bool:
        return task in backend.tasks

    def open(self, backend, ctx):
        return backend.open(ctx)


HOST = PythonHost()
