"""What to run: a frozen description of one variant, and the checks of its fields.

A RunSpec says everything the worker needs, travels to it as JSON and is written into
results.json, so a result always says what produced it. The checks here need neither
the backend registry nor torch; couplescope.core.validation adds the registry's (is
the backend there, does it accept this model) and the worker what needs torch (does
the model accept this shape), reported as a usage failure.
"""

from __future__ import annotations

import dataclasses

from couplescope.protocol import options as _options
from couplescope.protocol.options import (BRIDGE_MODELS, DEVICE_PATTERN, DTYPE_CHOICES,  # noqa: F401
                                          GRAD_MODES, LAUNCHERS, LAYOUTS, parse_input_shape)

#: the one field without a default: every variant names its model
REQUIRED = ("model",)


class _SpecMethods:
    """What every RunSpec can do; its fields are the spec options (protocol/options.py)."""

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


def _field(option):
    annotation = {tuple: "tuple[tuple[int, ...], ...] | None"}.get(option.kind, option.kind.__name__)
    if option.name in REQUIRED:
        return option.name, annotation
    if option.default is None:
        annotation = f"{annotation} | None"
    return option.name, annotation, dataclasses.field(default=option.default)


#: One variant of a run: a frozen dataclass whose fields are the spec options declared in
#: couplescope/protocol/options.py, in their order (None means "the model's own default"
#: where that applies). Made from the declarations so that an option is declared once.
RunSpec = dataclasses.make_dataclass(
    "RunSpec", [_field(o) for o in _options.SPEC_OPTIONS], bases=(_SpecMethods,),
    frozen=True)
RunSpec.__module__ = __name__   # pickling and reprs find it here (make_dataclass's module= is 3.12+)
RunSpec.__doc__ = ("One variant of a run; its fields are the spec options of "
                   "couplescope.protocol.options (see docs/options.md).")

SPEC_KEYS = tuple(f.name for f in dataclasses.fields(RunSpec))


def generic_label_parts(spec: RunSpec) -> list[str]:
    """model, backend, size, device, layout and grad mode, where they differ from the
    defaults (no_grad is the default). The host's word is the host's own
    (couplescope.backends.hosts: `label_part`), added by the request that names variants."""
    parts = [spec.model.rsplit("/", 1)[-1], spec.backend]
    if spec.size is not None:
        parts.append(str(spec.size))
    if spec.device != "cpu":
        parts.append(spec.device)
    if spec.layout != "fortran":
        parts.append(f"layout-{spec.layout}")
    if spec.grad_mode != "no_grad":
        parts.append(f"{spec.grad_mode}-mode")
    return parts


def check_fields(spec) -> None:
    """The checks that need no registry and no torch: every field against its declaration
    (couplescope.protocol.options). Raises UsageError naming the problem and the valid choices."""
    _options.check_spec(spec)
