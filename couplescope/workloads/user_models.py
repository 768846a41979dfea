"""A user's own model as a Workload: a TorchScript file or a bridge module.

A TorchScript file (`--model net.pt --input-shape 8,16 --dtype float32`) gets seeded
uniform random inputs of the given shapes; its reference is the same model called once
through plain PyTorch (torch.jit.load, then a call from Python) before timing.

A bridge module (`--model mine.py`) follows the bridge contract (docs/bridge.md): it runs
under the bridge backend only; its reference is its `reference(inputs)` function when it
has one, else a plain call of `compute` on its own output array before timing.
"""

from __future__ import annotations

import math
import os

import numpy as np

from couplescope.protocol.errors import UsageError
from couplescope.workloads.base import DEFAULT_RTOL, Call, Workload, estimate, fortran_array, numpy_dtype


def _random_inputs(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return {f"x{i}": fortran_array(rng.random(s).astype(numpy_dtype(dtype)))
            for i, s in enumerate(shapes)}


class UserFileWorkload(Workload):
    """What both kinds of user file share: a path, optional input shapes and a dtype."""

    size_name = "size"
    # Checked against the same model called on row-major copies: reading column-major
    # memory takes other matmul paths, whose float32 rounding differs by ~1e-7 absolute.
    # Near-zero outputs of an arbitrary model would turn that into a large relative error,
    # so denominators are floored at 1% of the largest output and float32 allows 1e-4. A
    # transposed input still errs by O(1).
    relative_floor = 1e-2
    rtol = {**DEFAULT_RTOL, "float32": 1e-4}
    kind = ""

    def __init__(self, path: str, input_shape, dtype) -> None:
        self.path = os.path.abspath(path)
        self.name = path
        self.summary = f"{self.kind} {path}"
        self.shapes = input_shape
        self.dtype = dtype or "float32"

    #: copies of the file a run holds (the model built for the reference, the coupling's)
    file_copies = 0

    def memory_estimate(self, size, dtype):
        """From --input-shape (the output is assumed as large as the inputs, and the
        model's activations four times that); None when the shapes come from the module."""
        if not self.shapes:
            return None
        elements = sum(math.prod(shape) for shape in self.shapes)
        try:
            model = self.file_copies * os.path.getsize(self.path)
        except OSError:
            model = 0
        return estimate(elements, elements, dtype, model_bytes=model, working_elements=4 * elements)


class TorchScriptFileWorkload(UserFileWorkload):
    kind = "TorchScript file"
    file_copies = 2
    size_help = "unused: the shape comes from --input-shape"

    def build(self, size, dtype, seed):
        import torch

        try:
            return torch.jit.load(self.path, map_location="cpu").eval()
        except Exception as exc:  # torch raises RuntimeError with a long C++ message
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(f"{self.path} is not a loadable TorchScript archive: {first}") from None

    def host_arrays(self, size, dtype, seed):
        return _random_inputs(self.shapes, dtype, seed)

    def calls(self, size):
        return [Call(tuple(f"x{i}" for i in range(len(self.shapes))), "y")]

    def script(self, module, example_inputs):
        return module


class BridgeModuleWorkload(UserFileWorkload):
    kind = "bridge module"
    size_help = "passed to the module's make_inputs(size, seed), if it has one"
    _module = None

    def module(self):
        if self._module is None:
            from couplescope.workloads.bridge_contract import check_contract, import_by_path

            self._module = import_by_path(self.path, f"couplescope_user_{os.getpid()}")
            check_contract(self._module, self.path)
        return self._module

    def _call(self, function: str, *args):
        """Call the module's `function`; what it raises is bad input (the user's module), said
        in one line, not a crash of couplescope."""
        try:
            return getattr(self.module(), function)(*args)
        except UsageError:
            raise
        except Exception as exc:
            text = str(exc).strip().splitlines()
            raise UsageError(f"{self.path}: {function}() raised {type(exc).__name__}"
                             + (f": {text[0]}" if text else "")) from None

    def build(self, size, dtype, seed):
        """The module itself, initialised once so its reference() can run."""
        from couplescope.workloads.bridge_contract import untimed_phase

        self._call("initialize", {"model": self.path, "size": size, "dtype": dtype, "seed": seed,
                                  "device": "cpu", "bridge_model": "eager", "torchscript_path": None,
                                  "phase": untimed_phase, "threads": None})
        return self.module()

    def host_arrays(self, size, dtype, seed):
        mod = self.module()
        if callable(getattr(mod, "make_inputs", None)):
            arrays = self._call("make_inputs", size, seed)
            return {f"x{i}": fortran_array(np.asarray(a)) for i, a in enumerate(arrays)}
        if not self.shapes:
            raise UsageError(f"{self.path} has no make_inputs(size, seed): give --input-shape")
        return _random_inputs(self.shapes, dtype, seed)

    def calls(self, size):
        n = len(self.shapes) if self.shapes else None
        if n is None:
            n = len(self.host_arrays(size, self.dtype, 0))
        return [Call(tuple(f"x{i}" for i in range(n)), "y")]

    def expected(self, module, arrays, size):
        names = self.calls(size)[0].inputs
        inputs = tuple(arrays[n] for n in names)
        if callable(getattr(module, "reference", None)):
            return {"y": np.asarray(self._call("reference", inputs))}
        raise UsageError(f"bridge module {self.path} has no reference(inputs) function; "
                         "couplescope needs one to check the coupled output (see docs/bridge.md)")


def for_path(path: str, input_shape=None, dtype=None) -> Workload:
    if path.endswith(".py"):
        return BridgeModuleWorkload(path, input_shape, dtype)
    return TorchScriptFileWorkload(path, input_shape, dtype)
