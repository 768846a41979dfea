"""The contract a model file in models/ fulfils, and the checks shared by most of them.

A workload is what a simulation code would couple to: a model built at a size with
seeded weights, the host arrays the simulation holds (column-major, as Fortran keeps
them), the forward calls made each time step, the expected output and how close the
coupled result must come to it. Backends never see model internals; they see a module,
host arrays and a list of calls.

Model files import torch; this module does not, so the catalogue can be listed cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Call:
    """One forward call made each iteration: the host arrays passed in, the array written.

    cgdrag makes two (zonal and meridional wind); most models make one.
    """

    inputs: tuple[str, ...]
    output: str


DEFAULT_RTOL = {"float32": 1e-5, "float64": 1e-7, "float16": 1e-2, "bfloat16": 1e-2}


def fortran_array(values: np.ndarray) -> np.ndarray:
    """Return `values` laid out column-major, as a Fortran host code holds it."""
    return np.asfortranarray(values)


def max_relative_error(got: np.ndarray, expected: np.ndarray, floor: float = 0.0) -> float:
    """max |got - expected| / max(|expected|, floor), elementwise.

    With floor 0 this is the reference suite's `|got - expected| <= rtol * |expected|`
    (0/0 counts as 0, x/0 as infinity). A positive floor keeps entries that are zero
    by chance in a random network from turning rounding into an infinite error.
    NaN anywhere gives NaN, which fails every tolerance. A wrong shape is infinite.
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    if np.isnan(g).any():
        return float("nan")
    diff = np.abs(g - e)
    denom = np.maximum(np.abs(e), floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / denom)
    return float(np.max(ratio))


class Workload:
    """Base class for models/*.py. Subclasses set the class attributes and `build`.

    Attributes:
        name: the catalogue name (`--model NAME`).
        summary: one line for `--list`.
        size_name / size_help: what `--size` means for this model.
        default_size: the reference's own size.
        dtype: the reference's dtype.
        rtol: tolerance per dtype for the check.
        relative_floor: see `max_relative_error`; as a fraction of max |expected|.
    """

    name: str = ""
    summary: str = ""
    size_name: str = "size"
    size_help: str = ""
    default_size: int = 1
    dtype: str = "float32"
    rtol: dict = DEFAULT_RTOL
    relative_floor: float = 0.0
    #: sizes a preset sweeps by default (deep-linear); empty means just default_size
    sweep: tuple[int, ...] = ()
    #: the optimizer and learning rate of --task train when --optimizer and --lr are not given
    train_optimizer: str = "sgd"
    train_lr: float = 0.01
    #: why --task train cannot train this model (None: it can)
    untrainable: str | None = None
    #: the steps --task train makes when --iterations is not given: what the model's
    #: learning task needs before its check can pass (SimpleNet: example 11's 10 000). None:
    #: the default --iterations is enough. Fewer steps leave the task's check not judged
    #: (worker/training_checks.py). A constant, so the parent reads it without torch
    #: (workloads/model_info.py).
    train_steps: int | None = None

    # -- what subclasses provide -------------------------------------------------------
    def build(self, size: int, dtype: str, seed: int):
        """Return the eager torch.nn.Module in eval mode with seeded weights."""
        raise NotImplementedError

    def host_arrays(self, size: int, dtype: str, seed: int) -> dict[str, np.ndarray]:
        """Return the input arrays by name, column-major, as the simulation holds them."""
        raise NotImplementedError

    def calls(self, size: int) -> list[Call]:
        return [Call(("x",), "y")]

    # -- shared behaviour, overridable ---------------------------------------------------
    def validate_size(self, size: int) -> None:
        """Raise ValueError with a one-line reason when `size` cannot be built."""
        if size < 1:
            raise ValueError(f"{self.size_name} must be at least 1")

    def script(self, module, example_inputs: tuple):
        """Return the TorchScript form. Tracing suits fixed control flow; override to script."""
        import torch

        with torch.no_grad():
            return torch.jit.trace(module, example_inputs, check_trace=False)

    def script_for_training(self, module, example_inputs: tuple):
        """The TorchScript form a training step runs: scripted, so train-mode behaviour
        (dropout, batch statistics) is kept (a trace records only the mode it ran in);
        traced in train mode where scripting fails."""
        import torch

        module.train()
        try:
            return torch.jit.script(module)
        except Exception:
            return torch.jit.trace(module, example_inputs, check_trace=False)

    def model_for_training(self, model):
        """The model --task train trains (by default the model itself)."""
        return model

    def learning_task(self, size: int, dtype: str, seed: int, expected: dict):
        """What --task train learns (couplescope.workloads.learning_tasks): by default a fixed
        synthetic target; `expected` is the reference output of the host inputs."""
        from couplescope.workloads.learning_tasks import SyntheticTarget

        return SyntheticTarget(expected)

    def expected_for_training(self, module, arrays: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
        """What --task train needs of the reference output: the outputs' shapes and dtypes
        (the targets take them) and, for a learning task made from it, its values. The
        reference output itself, unless a user's module has none (user_models.py)."""
        return self.expected(module, arrays, size)

    def expected(self, module, arrays: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
        """The reference output of every call: the eager model run once in plain PyTorch on
        correctly ordered (C-contiguous copies of) the host arrays."""
        import torch

        out = {}
        with torch.inference_mode():
            for call in self.calls(size):
                tensors = [torch.from_numpy(np.ascontiguousarray(arrays[n])) for n in call.inputs]
                out[call.output] = module(*tensors).detach().cpu().numpy().copy()
        return out

    def memory_estimate(self, size: int, dtype: str) -> dict[str, int] | None:
        """What the worker will need at `size`, by part, in bytes, before anything is
        allocated: {"host arrays": ..., "model": ..., "working memory": ...}; None when
        unknown (then no size is refused). Arithmetic on shapes only: nothing is built.
        couplescope.worker.memory_check compares the sum with the memory available."""
        return None

    def tolerance(self, dtype: str) -> float:
        return self.rtol.get(dtype, DEFAULT_RTOL.get(dtype, 1e-5))

    def check(self, outputs: dict[str, np.ndarray], expected: dict[str, np.ndarray],
              arrays: dict[str, np.ndarray]) -> float:
        """Maximum relative error of the coupled outputs against the expected ones."""
        worst = 0.0
        for name, exp in expected.items():
            floor = self.relative_floor * float(np.max(np.abs(exp))) if exp.size else 0.0
            err = max_relative_error(outputs[name], exp, floor)
            if np.isnan(err):
                return float("nan")
            worst = max(worst, err)
        return worst


def torch_dtype(name: str):
    """Map a dtype name ("float32") to the torch dtype, importing torch only when asked."""
    import torch

    return {"float32": torch.float32, "float64": torch.float64,
            "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def itemsize(name: str) -> int:
    """Bytes per element of a dtype name (bfloat16 included), without torch."""
    return 2 if name == "bfloat16" else np.dtype(name).itemsize


#: bytes per host-array element the check itself holds: the expected output, the output,
#: its NaN copy and float64 temporaries of the comparison (got, expected, difference,
#: denominator, ratio). Measured: simplenet at 1e6 and 1e7 rows, 342 bytes per row of 5
CHECK_BYTES_PER_ELEMENT = 60


def estimate(host_elements: int, output_elements: int, dtype: str, model_bytes: int = 0,
             working_elements: int = 0) -> dict[str, int]:
    """Workload.memory_estimate's parts from element counts: the host arrays, the model,
    and the working memory (activations alive at once during the reference call, plus
    what the check holds per output element)."""
    size = itemsize(dtype)
    return {"host arrays": (host_elements + output_elements) * size, "model": model_bytes,
            "working memory": working_elements * size + output_elements * CHECK_BYTES_PER_ELEMENT}


def numpy_dtype(name: str):
    if name == "bfloat16":
        raise ValueError("bfloat16 has no numpy dtype; host arrays cannot hold it")
    return np.dtype(name)


DTYPES = ("float32", "float64", "float16")
