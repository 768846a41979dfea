"""Which devices exist here. Imports torch only when a CUDA device is asked about."""

from __future__ import annotations


def cuda_unavailable_reason(device: str = "cuda") -> str | None:
    """None when `device` (cuda or cuda:N) can be used, else a one-line reason."""
    import torch

    if not torch.cuda.is_available():
        if not torch.backends.cuda.is_built():
            return "this torch build has no CUDA support (needs a CUDA device)"
        return "no CUDA device is visible (needs a CUDA device)"
    if ":" in device:
        index = int(device.split(":", 1)[1])
        count = torch.cuda.device_count()
        if index >= count:
            return f"there are {count} CUDA devices (cuda:0 to cuda:{count - 1})"
    return None


def available() -> list[str]:
    """Devices a run may use: cpu, then cuda:N for each visible GPU."""
    import torch

    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return out


def describe() -> list[tuple[str, str]]:
    """(device, description) pairs for `--list`."""
    import os

    import torch

    rows = [("cpu", f"{os.cpu_count()} cores, torch {torch.get_num_threads()} threads by default")]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            rows.append((f"cuda:{i}", torch.cuda.get_device_name(i)))
    else:
        rows.append(("cuda", "unavailable: " + (cuda_unavailable_reason() or "")))
    return rows
