"""What to run: a frozen description of one variant, and the checks of its fields.

A RunSpec says everything the worker needs, travels to it as JSON and is written into
results.json, so a result always says what produced it. The checks here need neither
the backend registry nor torch; couplescope.core.validation adds the registry's (is
the backend there, does it accept this model) and the worker what needs torch (does
the model accept this shape), reported as a usage failure.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from couplescope.protocol.errors import UsageError, choices_text

LAYOUTS = ("fortran", "c")
#: what the bridge's built-in module runs: the eager model, the TorchScript file, or the
#: eager model under torch.compile
BRIDGE_MODELS = ("eager", "torchscript", "compiled")
DTYPE_CHOICES = ("float32", "float64", "float16")
LAUNCHERS = ("mpiexec", "srun")
#: what makes the calls: compiled code (C++ against libtorch, as a Fortran code through
#: FTorch or forpy) or the worker's Python loop (what a Python simulation code pays)
HOSTS = ("native", "python")
#: the grad-mode guard around forward: no_grad is FTorch's (torch::AutoGradMode(false));
#: inference is a what-if (c10::InferenceMode)
GRAD_MODES = ("no_grad", "inference")
DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")


@dataclass(frozen=True)
class RunSpec:
    """One variant of a run. None means "the model's own default" where that applies."""

    model: str
    backend: str = "torchscript"
    size: int | None = None
    bridge_model: str = "torchscript"
    #: None: the native host where the backend has one and it can be built, else python
    host: str | None = None
    grad_mode: str = "no_grad"
    device: str = "cpu"
    dtype: str | None = None
    layout: str = "fortran"
    warmup: int = 1
    iterations: int = 10
    threads: int | None = None
    seed: int = 0
    reload_every_call: bool = False
    input_shape: tuple[tuple[int, ...], ...] | None = None
    name: str | None = None
    # profiling (torch.profiler window after the timed iterations; 0 = off)
    profile_iterations: int = 3
    #: skip (or shorten) the profiled window when it would record more operators than this
    profile_max_ops: int = 10_000
    # GPU
    pinned: bool = False
    # MPI
    ranks: int = 2
    inner_backend: str = "torchscript"
    launcher: str = "mpiexec"
    launcher_args: str = ""
    oversubscribe: bool = False

    @property
    def label(self) -> str:
        """The variant's name in tables, events, trace workers and TensorBoard runs.

        A run request names every variant it builds (with the backend's own label parts,
        couplescope.core.request); a spec that was never named falls back to the parts
        every backend shares."""
        if self.name:
            return self.name
        return "-".join(generic_label_parts(self))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        if d["input_shape"] is not None:
            d["input_shape"] = [list(s) for s in d["input_shape"]]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunSpec":
        d = dict(d)
        if d.get("input_shape") is not None:
            d["input_shape"] = tuple(tuple(int(v) for v in s) for s in d["input_shape"])
        return cls(**d)

    def replace(self, **changes) -> "RunSpec":
        return dataclasses.replace(self, **changes)


SPEC_KEYS = tuple(f.name for f in dataclasses.fields(RunSpec))


def parse_input_shape(text: str) -> tuple[tuple[int, ...], ...]:
    """"8,16" -> ((8, 16),); "8,16;8,1" -> two inputs. Raises UsageError on anything else."""
    shapes = []
    for part in text.split(";"):
        try:
            dims = tuple(int(v) for v in part.replace("x", ",").split(",") if v.strip())
        except ValueError:
            dims = ()
        if not dims or any(d < 1 for d in dims):
            raise UsageError(f"--input-shape '{text}' is not a shape; write dimensions like 8,16 "
                             "(several inputs separated by ';')")
        shapes.append(dims)
    return tuple(shapes)


def generic_label_parts(spec: RunSpec) -> list[str]:
    """model, backend, size, device, layout, host and grad mode, where they differ from
    the defaults (the native host and no_grad are the defaults)."""
    parts = [spec.model.rsplit("/", 1)[-1], spec.backend]
    if spec.size is not None:
        parts.append(str(spec.size))
    if spec.device != "cpu":
        parts.append(spec.device)
    if spec.layout != "fortran":
        parts.append(f"layout-{spec.layout}")
    if spec.host == "python":
        parts.append("python-host")
    if spec.grad_mode != "no_grad":
        parts.append(f"{spec.grad_mode}-mode")
    return parts


def check_fields(spec: RunSpec) -> None:
    """The checks that need no registry and no torch: choices and ranges of the fields.

    Raises UsageError naming the problem and the valid choices."""
    if spec.bridge_model not in BRIDGE_MODELS:
        raise UsageError(f"unknown bridge model '{spec.bridge_model}'; choose one of: {choices_text(BRIDGE_MODELS)}")
    if spec.host is not None and spec.host not in HOSTS:
        raise UsageError(f"unknown host '{spec.host}'; choose one of: {choices_text(HOSTS)}")
    if spec.grad_mode not in GRAD_MODES:
        raise UsageError(f"unknown grad mode '{spec.grad_mode}'; choose one of: {choices_text(GRAD_MODES)}")
    if spec.layout not in LAYOUTS:
        raise UsageError(f"unknown layout '{spec.layout}'; choose one of: {choices_text(LAYOUTS)}")
    if spec.dtype is not None and spec.dtype not in DTYPE_CHOICES:
        raise UsageError(f"unknown dtype '{spec.dtype}'; choose one of: {choices_text(DTYPE_CHOICES)}")
    if not DEVICE_PATTERN.match(spec.device):
        raise UsageError(f"unknown device '{spec.device}'; choose one of: cpu, cuda, cuda:N")
    for key, low in (("iterations", 1), ("warmup", 0), ("profile_iterations", 0), ("seed", 0),
                     ("profile_max_ops", 1)):
        if getattr(spec, key) < low:
            raise UsageError(f"{key.replace('_', '-')} must be at least {low} (got {getattr(spec, key)})")
    if spec.size is not None and spec.size < 1:
        raise UsageError(f"size must be at least 1 (got {spec.size})")
    if spec.threads is not None and spec.threads < 1:
        raise UsageError(f"threads must be at least 1 (got {spec.threads})")
