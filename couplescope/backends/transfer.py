"""Host <-> device copies for the GPU paths, made the way FTorch makes them.

FTorch moves every input to the device (`.to(device)` of a tensor that wraps the host
array with its layout strides, so the device tensor keeps those strides) and copies the
result back with `copy_` into a tensor that wraps the host output array: one copy each
way, no intermediate host buffer. The torchscript and cudagraph backends both use these
helpers, so their h2d and d2h phases mean the same thing.

With --pinned the host arrays themselves live in page-locked memory (see
couplescope.devices.page_locked), copies may be non_blocking, and a device-to-host copy
is followed by a stream synchronise: the host must not read the output before the copy
has landed. A synchronise here is correctness, not timing, so it happens whether or not
the phase clock synchronises too.

torch is imported inside the class: backends import this module at their import time.
"""

from __future__ import annotations


def device_strides(host_tensor) -> tuple[int, ...]:
    """The strides a device twin of `host_tensor` gets: the same ones, as `.to()` keeps them."""
    return tuple(host_tensor.stride())


class DeviceCopies:
    """The h2d and d2h copies of one coupling on one device."""

    def __init__(self, device: str, pinned: bool) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.pinned = bool(pinned)
        # the stream every copy and replay is issued on; looked up once, not per copy
        self.stream = torch.cuda.current_stream(self.device) if self.pinned else None

    def empty_like_host(self, host_tensor):
        """A device buffer with the host tensor's shape, dtype and strides.

        Equal strides on both sides make a copy between them one contiguous memcpy (a DMA
        straight from or into host memory); differing strides make torch go through a
        temporary, which for a device-to-host copy is a pageable host buffer.
        """
        return self.torch.empty_strided(tuple(host_tensor.shape), device_strides(host_tensor),
                                        dtype=host_tensor.dtype, device=self.device)

    def staging_for(self, host_tensor):
        """With --pinned, a device buffer in the host output's layout; None otherwise."""
        return self.empty_like_host(host_tensor) if self.pinned else None

    def to_device(self, host_tensor):
        """h2d: FTorch's `.to(device)`; non_blocking from page-locked memory."""
        return host_tensor.to(self.device, non_blocking=self.pinned)

    def into(self, device_tensor, host_tensor) -> None:
        """h2d into an existing device buffer (a CUDA Graph's static input)."""
        device_tensor.copy_(host_tensor, non_blocking=self.pinned)

    def to_host(self, host_tensor, result, staging=None) -> None:
        """d2h: write `result` into the tensor that wraps the host output array.

        Pageable host memory: a plain blocking `copy_`, FTorch's own. Page-locked: the
        layout (and dtype) conversion happens on the device into `staging`, which has the
        host's strides, then one non_blocking DMA into host memory and a synchronise of the
        stream, because the caller reads the host array next.
        """
        if staging is None:
            host_tensor.copy_(result)
            return
        staging.copy_(result)
        host_tensor.copy_(staging, non_blocking=True)
        self.stream.synchronize()
