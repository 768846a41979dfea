"""How host arrays and timed phases cross into and out of the native host.

A leaf both the native couplings (torchscript's, the bridge's, aoti's, training's) share,
so none of them imports another's module for it.
"""

from __future__ import annotations

from couplescope.backends.host_memory import strides_for


def host_array(native, array, layout: str):
    """A host array as the native host receives it: address, shape, element strides, dtype."""
    return native.HostArray(array.ctypes.data, list(array.shape), list(strides_for(array, layout)),
                            str(array.dtype))


def add_host_phases(into: dict, names, seconds) -> None:
    """Merge the phases a native host timed into the phase clock's (zero ones left out)."""
    for name, value in zip(names, seconds):
        if value:
            into[name] = into.get(name, 0.0) + value
