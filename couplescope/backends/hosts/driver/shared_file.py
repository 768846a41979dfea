"""One file mapped into the worker and into a library host's driver: the memory they share.

The driver is a separate program (it links the user's library and the libtorch that library
was built with, which need not be the worker's torch), so the host arrays cannot be the
worker's own numpy buffers. They live here instead: the worker lays out named regions
(the host arrays, the outputs' NaN patterns and snapshots, the timings, a step's data
rows, the weights read back), maps the file and works on numpy views of it, in the
host's order (column-major, or row-major for a library whose users declare their arrays
with the dimensions reversed: pytorch-fortran); the driver maps the same file and points
Fortran arrays at the same bytes. Neither copies the other's data to make a call.

The file is made in the worker's scratch folder (couplescope.protocol.scratch), which is
removed when the worker ends, whatever ends it.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

#: every region starts on a cache line
ALIGN = 64


class SharedFile:
    """Regions laid out first (`add`), then the file made and mapped (`open`)."""

    def __init__(self, directory: str, name: str) -> None:
        self.path = os.path.join(directory, name)
        self.offsets: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.total = 0
        self._map = None

    def add(self, key: str, nbytes: int) -> int:
        """Reserve `nbytes` for `key`; its offset."""
        offset = -(-self.total // ALIGN) * ALIGN
        self.offsets[key], self.sizes[key] = offset, int(nbytes)
        self.total = offset + max(int(nbytes), 1)
        return offset

    def open(self) -> None:
        size = -(-self.total // ALIGN) * ALIGN
        with open(self.path, "wb") as f:
            f.truncate(size)
        with open(self.path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), size)
        self.total = size

    def array(self, key: str, shape, dtype, order: str = "F") -> np.ndarray:
        """The region `key` as an array in the host's layout: column-major (the Fortran
        array of the tensor's shape), or with order "C" row-major (the Fortran array
        declared with the dimensions reversed, as pytorch-fortran's users declare them)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape)) if len(shape) else 1
        return np.ndarray(tuple(shape), dtype=dtype, buffer=self._map, offset=self.offsets[key],
                          order=order) if count else np.empty(tuple(shape), dtype=dtype, order=order)

    def bytes(self, key: str, rows: int, width: int) -> np.ndarray:
        """The region `key` as `rows` rows of `width` bytes (snapshots, a step's data)."""
        return np.ndarray((rows, width), dtype=np.uint8, buffer=self._map, offset=self.offsets[key])

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:   # a view is still alive: the mapping goes with the process
                pass
            self._map = None
        try:
            os.unlink(self.path)
        except OSError:
            pass
