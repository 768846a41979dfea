"""Which devices exist here, and what a worker does to use one.

Imports torch only inside functions, and only when a CUDA device is asked about;
`torch.cuda.is_available()` asks the driver without initialising a CUDA context.
"""

from __future__ import annotations


def torch_without_gpu() -> str | None:
    """The installed torch's version when it was built without CUDA (and without ROCm),
    read from torch/version.py without importing torch (a listing should not pay a second
    for the import to learn that); None when it has GPU support or this cannot be told."""
    import ast
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("torch")
        folder = list(spec.submodule_search_locations or [])[0] if spec else None
        with open(os.path.join(folder, "version.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (ImportError, ValueError, IndexError, TypeError, OSError, SyntaxError):
        return None
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
            values[target.id] = node.value.value
    if "cuda" not in values or values["cuda"] is not None or values.get("hip") is not None:
        return None
    return values.get("__version__") or None


def cuda_unavailable_reason(device: str = "cuda") -> str | None:
    """None when `device` (cuda or cuda:N) can be used, else a one-line reason."""
    version = torch_without_gpu()
    if version is not None:   # the same words torch.backends.cuda.is_built() would lead to
        return f"needs a CUDA device: this torch build ({version}) has no CUDA support"
    import torch

    if not torch.cuda.is_available():  # asks the driver; does not initialise CUDA
        if not torch.backends.cuda.is_built():
            return f"needs a CUDA device: this torch build ({torch.__version__}) has no CUDA support"
        return "needs a CUDA device: none is visible (check the driver and CUDA_VISIBLE_DEVICES)"
    if ":" in device:
        index = int(device.split(":", 1)[1])
        count = torch.cuda.device_count()
        if index >= count:
            visible = ", ".join(f"cuda:{i}" for i in range(count))
            return f"only {count} CUDA device{'s are' if count != 1 else ' is'} visible: {visible}"
    return None


def available() -> list[str]:
    """Devices a run may use: cpu, then cuda:N for each visible GPU."""
    if torch_without_gpu() is not None:
        return ["cpu"]
    import torch

    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return out


def describe() -> list[tuple[str, str]]:
    """(device, description) pairs for `--list`."""
    import os

    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    rows = [("cpu", f"{cores} cores" + (f", {usable} of them usable by this process" if usable != cores else "")
             + "; torch's threads: --threads (default: torch's own)")]
    reason = cuda_unavailable_reason() if torch_without_gpu() is not None else None
    if reason:
        return rows + [("cuda", "unavailable: " + reason)]
    import torch

    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            rows.append((f"cuda:{i}", torch.cuda.get_device_name(i)))
    else:
        rows.append(("cuda", "unavailable: " + (cuda_unavailable_reason() or "")))
    return rows


def use_cuda(device: str):
    """Prepare this (worker) process to run on `device`; return the phase clock's sync.

    Makes `device` the current device, so streams, graph captures, caching-allocator
    pools and torch.cuda.synchronize() all act on it and not on cuda:0 (plain "cuda" is
    the current device already). Turns TF32 off for matmuls and cuDNN convolutions: the
    checks compare against a float32 CPU reference, and TF32 (cuDNN's default for
    convolutions on Ampere and newer) rounds inputs to 10 mantissa bits, which is another
    precision, not a coupling error. Returns the synchronise the phase clock calls: the
    bare torch.cuda.synchronize, which now waits on this device and costs no device
    switch per call.
    """
    import torch

    from couplescope.protocol.errors import UsageError

    reason = cuda_unavailable_reason(device)
    if reason:
        raise UsageError(f"device '{device}' is unavailable: {reason}; choose: cpu")
    index = torch.device(device).index
    if index is not None:  # set_device refuses a device without an index
        torch.cuda.set_device(index)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch.cuda.synchronize


def page_locked(arrays: dict) -> dict:
    """Copies of host arrays (same shape, dtype and order) in page-locked memory.

    What --pinned means: the simulation keeps its arrays in pinned memory, as a Fortran
    code does when it allocates them with cudaMallocHost (or CUDA Fortran's `pinned`
    attribute). Both sides are pinned, inputs and outputs, so host-to-device copies
    read and device-to-host copies write page-locked memory directly (DMA, and
    non_blocking may overlap). The copy is made once, before anything is timed; the
    numpy array keeps the pinned torch buffer alive through its base.
    """
    import numpy as np
    import torch

    out = {}
    for name, a in arrays.items():
        buffer = torch.empty(max(a.nbytes, 1), dtype=torch.uint8, pin_memory=True)
        order = "F" if a.flags.f_contiguous else "C"
        pinned = np.ndarray(a.shape, dtype=a.dtype, buffer=buffer.numpy(), order=order)
        pinned[...] = a
        out[name] = pinned
    return out
