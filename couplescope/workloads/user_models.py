"""A user's own model as a Workload: a TorchScript file or a bridge module.

A TorchScript file (`--model net.pt --input-shape 8,16 --dtype float32`) gets seeded
uniform random inputs of the given shapes; its reference is the same model called once
through plain PyTorch (torch.jit.load, then a call from Python) before timing.

A bridge module (`--model mine.py`) follows the bridge contract (docs/bridge.md): it runs
under the bridge backend; its reference is its `reference(inputs)` function.

A model module (`--model mine.py --backend aoti`) defines `make_model(size, dtype, seed)`,
which returns the nn.Module to export, and its inputs come from `make_inputs(size, seed)`
or --input-shape (docs/aoti.md); its reference is that module called once in plain
PyTorch. An exported program (`--model mine.pt2`, saved with torch.export.save) brings its
own input shapes and dtype; its reference is the program's module called the same way.
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

    def imported(self):
        """The module, imported once by path (as forpy imports it)."""
        if self._module is None:
            from couplescope.workloads.bridge_contract import import_by_path

            self._module = import_by_path(self.path, f"couplescope_user_{os.getpid()}")
        return self._module

    def module(self):
        from couplescope.workloads.bridge_contract import check_contract

        mod = self.imported()
        check_contract(mod, self.path)
        return mod

    def build(self, size, dtype, seed, config: dict | None = None):
        """The module itself, initialised so its reference() can run. The worker passes the
        run's `config` (its phase clock, device, threads) and hands this module, initialised,
        to the bridge coupling, so initialize runs once per variant (docs/bridge.md)."""
        from couplescope.workloads.bridge_contract import untimed_phase

        mod = self.module()
        mod.initialize(config or {"model": self.path, "size": size, "dtype": dtype, "seed": seed,
                                  "device": "cpu", "bridge_model": "eager", "torchscript_path": None,
                                  "phase": untimed_phase, "threads": None, "grad_mode": "no_grad"})
        return mod

    def host_arrays(self, size, dtype, seed):
        mod = self.module()
        if callable(getattr(mod, "make_inputs", None)):
            arrays = mod.make_inputs(size, seed)
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
            return {"y": np.asarray(module.reference(inputs))}
        raise UsageError(f"bridge module {self.path} has no reference(inputs) function; "
                         "couplescope needs one to check the coupled output (see docs/bridge.md)")

    def expected_for_training(self, module, arrays, size):
        """A module trained without reference(inputs), as pytorch-fortran's modules are (its
        ftn_pytorch_train has no reference to check against): the target's shape is what
        make_targets(inputs) returns, else its first input's, since nothing else says what
        the model outputs (docs/bridge.md). The values are never read: no learning task
        is made from them."""
        if callable(getattr(module, "reference", None)):
            return self.expected(module, arrays, size)
        names = self.calls(size)[0].inputs
        first = arrays[names[0]]
        maker = getattr(module, "make_targets", None)
        shape = np.shape(maker(tuple(arrays[n] for n in names))) if callable(maker) else first.shape
        return {"y": np.zeros(shape, dtype=first.dtype)}


class ModelModuleWorkload(BridgeModuleWorkload):
    """A .py module that makes the model: make_model(size, dtype, seed) -> nn.Module."""

    kind = "model module"

    def module(self):
        return self.imported()

    def build(self, size, dtype, seed):
        model = self.imported().make_model(size, dtype, seed)
        return model.eval() if hasattr(model, "eval") else model

    def expected(self, module, arrays, size):
        return Workload.expected(self, module, arrays, size)


class ExportedProgramWorkload(UserFileWorkload):
    """A .pt2 exported program (torch.export.save): its inputs' shapes and dtype are its own."""

    kind = "exported program"
    size_help = "unused: the shapes are the exported program's"
    _program = None

    def __init__(self, path, input_shape, dtype) -> None:
        super().__init__(path, input_shape, None)
        program = self.program()
        shapes, dtypes = program_inputs(program, self.path)
        if input_shape is not None and tuple(map(tuple, input_shape)) != shapes:
            raise UsageError(f"{path} was exported for input shape(s) {';'.join(','.join(map(str, s)) for s in shapes)}; "
                             "leave out --input-shape (an exported program takes the shapes it was exported with)")
        if dtype is not None and dtype != dtypes[0]:
            raise UsageError(f"{path} was exported for {dtypes[0]}; leave out --dtype or export it again")
        self.shapes, self.dtype = shapes, dtypes[0]

    def program(self):
        if self._program is None:
            import torch

            try:
                self._program = torch.export.load(self.path)
            except Exception:
                raise UsageError(f"{self.path} is not an exported program: save one with "
                                 "torch.export.save(torch.export.export(model, example_inputs), path) "
                                 "(an AOTInductor package cannot be checked: couplescope compiles "
                                 "the program itself, for the host's layout)") from None
        return self._program

    def build(self, size, dtype, seed):
        return self.program().module()

    def host_arrays(self, size, dtype, seed):
        return _random_inputs(self.shapes, dtype, seed)

    def calls(self, size):
        return [Call(tuple(f"x{i}" for i in range(len(self.shapes))), "y")]


def program_inputs(program, path: str):
    """The shapes and dtypes of an exported program's user inputs (all tensors, one dtype)."""
    names = program.graph_signature.user_inputs
    values = {n.name: n.meta.get("val") for n in program.graph.nodes if n.op == "placeholder"}
    shapes, dtypes = [], []
    for name in names:
        value = values.get(name)
        if value is None or not hasattr(value, "shape"):
            raise UsageError(f"{path}: input {name} is not a tensor; couplescope passes host arrays only")
        shapes.append(tuple(int(d) for d in value.shape))
        dtypes.append(str(value.dtype).replace("torch.", ""))
    if not names or len(set(dtypes)) != 1 or dtypes[0] not in ("float32", "float64", "float16"):
        raise UsageError(f"{path}: couplescope runs programs whose inputs are tensors of one float "
                         f"dtype (float32, float64, float16); this one takes {', '.join(dtypes) or 'none'}")
    return tuple(shapes), dtypes


def for_path(path: str, input_shape=None, dtype=None) -> Workload:
    if path.endswith(".py"):
        workload = BridgeModuleWorkload(path, input_shape, dtype)
        if callable(getattr(workload.imported(), "make_model", None)):
            model = ModelModuleWorkload(path, input_shape, dtype)
            model._module = workload.imported()
            return model
        return workload
    if path.endswith(".pt2"):
        return ExportedProgramWorkload(path, input_shape, dtype)
    return TorchScriptFileWorkload(path, input_shape, dtype)
