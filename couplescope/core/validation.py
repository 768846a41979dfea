"""Is a variant runnable here? Every check that does not need the worker, before anything runs.

The field checks (couplescope.protocol.spec), the model's name or file, the backend's
own rules (its `validate` hook) and whether the backend and device exist on this
machine. What needs torch in the worker (does the model accept this shape) is checked
there and reported as a usage failure.
"""

from __future__ import annotations

from couplescope import backends
from couplescope.backends import hosts
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import RunSpec, check_fields
from couplescope.workloads import catalogue


def validate(spec: RunSpec) -> RunSpec:
    """Raise UsageError naming the problem and the valid choices; return the spec unchanged."""
    catalogue.check_model_name(spec.model)
    backends.check_name(spec.backend)
    if spec.host is not None:
        hosts.check_name(spec.host)
    check_fields(spec)
    if catalogue.kind(spec.model) == "torchscript-file" and spec.input_shape is None:
        raise UsageError(f"{spec.model} is a TorchScript file: give its input with --input-shape "
                         "(e.g. 8,16) and --dtype")
    backends.get(spec.backend).validate(spec)
    hosts.check(spec)
    backends.check_available(spec)
    return spec


def validate_all(specs, preset: str | None = None) -> None:
    """Validate every variant before anything runs; name the preset in the message."""
    for spec in specs:
        try:
            validate(spec)
        except UsageError as exc:
            if preset:
                raise UsageError(f"preset {preset}: {exc}") from None
            raise
