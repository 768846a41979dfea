"""CUDA Graph replay (implemented in its own issue); explains why it cannot run here."""

from __future__ import annotations

from couplescope.coupling import BackendBase


class CudaGraphBackend(BackendBase):
    name = "cudagraph"
    summary = "CUDA Graph capture of forward, replayed each iteration"
    needs_torchscript = True

    def unavailable(self, spec=None):
        from couplescope.devices import cuda_unavailable_reason

        reason = cuda_unavailable_reason(spec.device if spec and spec.device != "cpu" else "cuda")
        if reason:
            return "needs a CUDA device: " + reason
        return "not implemented yet"


BACKEND = CudaGraphBackend()
