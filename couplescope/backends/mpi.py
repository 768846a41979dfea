"""MPI fan-out (implemented in its own issue); explains why it cannot run here."""

from __future__ import annotations

from couplescope.coupling import BackendBase


class MpiBackend(BackendBase):
    name = "mpi"
    summary = "MPI fan-out across ranks"

    def unavailable(self, spec=None):
        return "not implemented yet"


BACKEND = MpiBackend()
