"""How host memory becomes a tensor without a copy: FTorch's layout rule.

FTorch builds strides from a `layout` permutation (1-based):
    stride(layout(1)) = 1
    stride(layout(i)) = stride(layout(i-1)) * shape(layout(i-1))
so layout (1, 2, ..., n) maps column-major (Fortran) memory correctly, and the reversed
permutation reads the same memory as row-major: the classic coupling bug that silently
transposes data (`--layout c`).
"""

from __future__ import annotations

import numpy as np

LAYOUT_NAMES = ("fortran", "c")


def permutation(ndim: int, layout: str) -> tuple[int, ...]:
    """The FTorch layout permutation for a named layout."""
    if layout == "fortran":
        return tuple(range(1, ndim + 1))
    if layout == "c":
        return tuple(range(ndim, 0, -1))
    raise ValueError(f"unknown layout {layout!r}")


def ftorch_strides(shape: tuple[int, ...], layout: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides for `shape` under FTorch's rule (see module docstring)."""
    strides = [0] * len(shape)
    if not shape:
        return ()
    strides[layout[0] - 1] = 1
    for i in range(1, len(shape)):
        prev = layout[i - 1] - 1
        strides[layout[i] - 1] = strides[prev] * shape[prev]
    return tuple(strides)


def strides_for(array: np.ndarray, layout: str) -> tuple[int, ...]:
    return ftorch_strides(array.shape, permutation(array.ndim, layout))


def flat_memory(array: np.ndarray) -> np.ndarray:
    """The array's memory as a 1-D view (never a copy): what a host code hands over."""
    if not (array.flags.f_contiguous or array.flags.c_contiguous):
        raise ValueError("host arrays must be contiguous")
    return array.ravel(order="K")


class HostTensors:
    """`wrap(name, array)`: a tensor over the host memory of `array`, no copy, FTorch strides.

    Strides depend only on shapes, so they are computed once per array name, as a host
    code would; each call then costs a from_numpy and an as_strided (the marshal-in a
    direct coupling pays). Shared by every backend that hands host memory to libtorch.
    """

    def __init__(self, arrays: dict[str, np.ndarray], layout: str) -> None:
        import torch

        self._from_numpy = torch.from_numpy
        self.strides = {name: strides_for(a, layout) for name, a in arrays.items()}

    def __call__(self, name: str, array: np.ndarray):
        return self._from_numpy(flat_memory(array)).as_strided(array.shape, self.strides[name])


def numpy_view(array: np.ndarray, layout: str) -> np.ndarray:
    """A no-copy numpy view of the host memory in the given order (forpy's
    ndarray_create_nocopy): correct for "fortran", transposing for "c"."""
    order = "F" if layout == "fortran" else "C"
    return np.ndarray(array.shape, dtype=array.dtype, buffer=flat_memory(array), order=order)
