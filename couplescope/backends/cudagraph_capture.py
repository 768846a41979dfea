"""What capturing a CUDA Graph needs to say and know, shared by inference and training.

A leaf: couplescope.backends.cudagraph (the inference calls and the backend) and
couplescope.backends.cudagraph_training both import it, so neither imports the other
for it. See couplescope.backends.cudagraph for the capture pattern itself.
"""

from __future__ import annotations

import re

#: eager runs on the side stream before capture (PyTorch's examples use 3). The TorchScript
#: profiling executor specialises on its first runs; capture must see the settled plan.
WARMUP_RUNS = 3

CAPTURE_ADVICE = ("its forward must not synchronise with the host (.item(), .cpu(), .tolist(), "
                  "printing a tensor, control flow on tensor values) and its shapes must not "
                  "change; run it with --backend torchscript instead")

_ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_.]*(?:Error|Exception)):\s*(.+)$")


class CaptureError(RuntimeError):
    """The model's forward cannot be captured into a CUDA Graph."""


def essential_message(exc: BaseException) -> str:
    """One line that says what went wrong first, for an exception raised during capture.

    When the forward fails inside `torch.cuda.graph`, the context manager's own
    capture_end then fails too ("operation failed due to a previous error during
    capture"); the cause is the first exception of the chain. A TorchScript error starts
    with "The following operation failed in the TorchScript interpreter." and a traceback;
    the line that matters is the error line after it.
    """
    first = exc
    while first.__context__ is not None and first.__context__ is not first:
        first = first.__context__
    lines = [line.strip() for line in str(first).splitlines() if line.strip()]
    if not lines:
        return type(first).__name__
    for line in lines:
        if line.startswith("CUDA error:"):
            return line
    errors = [m.group(1).strip() for m in map(_ERROR_LINE.match, lines) if m]
    return errors[-1] if errors else lines[0]


def capture_failure(model: str, exc: BaseException) -> CaptureError:
    return CaptureError(f"CUDA Graph capture of model {model} failed: {essential_message(exc)}; "
                        f"{CAPTURE_ADVICE}")
