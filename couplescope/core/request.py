"""From what a user asked for to the variants a run measures: the run request.

Every front end turns its own input into `RunOptions` (the CLI from its arguments, the
app from its form, the library from RunSpecs) and calls `build`; nothing else decides
how a preset, a list of backends and a list of sizes become variants, what they are
called, or which options apply to nothing. It knows nothing of argparse or Textual.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from couplescope import backends
from couplescope.core import presets
from couplescope.core.validation import validate_all
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import SPEC_KEYS, RunSpec, generic_label_parts
from couplescope.workloads import catalogue

DEFAULT_TELEMETRY_HZ = 10.0


@dataclass
class RunOptions:
    """What a front end asks for: a preset or a model, lists to sweep, fields to override."""

    preset: str | None = None
    model: str | None = None
    backends: list[str] | None = None        # one variant per backend
    hosts: list[str] | None = None           # one variant per host
    sizes: list[int] | None = None           # one variant per size
    overrides: dict = field(default_factory=dict)   # RunSpec field -> value the user set
    export: str | None = None                # a parent directory for a new run directory
    telemetry_hz: float = DEFAULT_TELEMETRY_HZ
    memory_limit: str | None = None          # "16G", "none": what a variant may plan to use

    def __post_init__(self) -> None:
        unknown = set(self.overrides) - set(SPEC_KEYS)
        if unknown:
            raise ValueError(f"not RunSpec fields: {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class RunRequest:
    """What a run measures and where it goes: the one input of couplescope.core.pipeline."""

    title: str
    specs: tuple
    export: str | None = None
    telemetry_hz: float = DEFAULT_TELEMETRY_HZ
    preset: str | None = None
    #: what the user should know before the run (a variant falling back to the python host)
    notes: tuple = ()
    #: the memory a variant may plan to use ("16G", "none"; None: half of what is available)
    memory_limit: str | None = None

    def worker_env(self) -> dict:
        """What every worker of this request is told (couplescope.protocol.contract)."""
        from couplescope.protocol.contract import MEMORY_LIMIT_ENV

        return {MEMORY_LIMIT_ENV: self.memory_limit} if self.memory_limit else {}


def split_list(text, convert=str) -> list | None:
    """"a,b" -> ["a", "b"]; None stays None. Raises UsageError for an empty or bad list."""
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"empty list '{text}'")
    try:
        return [convert(t) for t in items]
    except ValueError:
        raise UsageError(f"'{text}' is not a whole number or a comma list of them") from None


def build(options: RunOptions) -> RunRequest:
    """The variants of a preset and/or a model, swept over backends and sizes, with the
    overrides applied, named, checked, and refused when an option applies to nothing."""
    from couplescope.core.telemetry.sampler import check_rate

    if options.preset:
        _, base = presets.read(presets.locate(options.preset))
        title = os.path.basename(options.preset).removesuffix(".toml")
    elif options.model:
        base, title = [{}], os.path.basename(options.model)
    else:
        raise UsageError("nothing to run: give --preset NAME or --model NAME (see --list), "
                         "or --tui for the interactive app")
    overrides = dict(options.overrides)
    if options.model:
        overrides["model"] = options.model
    sweep_backends = options.backends or [None]
    sizes = options.sizes or [None]
    hosts = options.hosts or [None]
    specs = []
    for variant, backend, size, host in itertools.product(base, sweep_backends, sizes, hosts):
        d = {**variant, **overrides}
        if backend is not None:
            d["backend"] = backend
        if host is not None:
            d["host"] = host
            if d.get("name") and len(hosts) > 1:
                d["name"] = f"{d['name']}-{host}"
        if size is not None:
            d["size"] = size
            if d.get("name") and len(sizes) > 1:
                d["name"] = f"{d['name']}-{size}"
        if len(sweep_backends) > 1 and d.get("name"):
            d["name"] = f"{d['name']}-{backend}"
        specs.append(presets.to_spec(d))
    refuse_options_that_apply_to_nothing(options.overrides, specs)
    validate_all(specs, options.preset)
    specs, notes = resolve_hosts(specs)
    return RunRequest(title=title, specs=tuple(named(specs)), export=options.export,
                      telemetry_hz=check_rate(options.telemetry_hz), preset=options.preset,
                      notes=notes, memory_limit=check_memory_limit(options.memory_limit))


def check_memory_limit(text: str | None) -> str | None:
    """--memory-limit as given, once it reads as a size or none (UsageError otherwise)."""
    if text is None:
        return None
    from couplescope.protocol.sizes import parse_bytes

    parse_bytes(text)
    return str(text).strip()


def from_specs(specs, title: str = "", export: str | None = None,
               telemetry_hz: float = 0.0, memory_limit: str | None = None) -> RunRequest:
    """A request for RunSpecs made in code (the library API): named and checked."""
    from couplescope.core.telemetry.sampler import check_rate

    specs = [specs] if isinstance(specs, RunSpec) else list(specs)
    if not specs:
        raise UsageError("nothing to run: give at least one RunSpec")
    validate_all(specs)
    specs, notes = resolve_hosts(specs)
    return RunRequest(title=title or specs[0].model, specs=tuple(named(specs)), export=export,
                      telemetry_hz=check_rate(telemetry_hz), notes=notes,
                      memory_limit=check_memory_limit(memory_limit))


def resolve_hosts(specs) -> tuple[list[RunSpec], tuple[str, ...]]:
    """Every spec with its host decided (couplescope.backends.resolve_host), and the notes."""
    resolved, notes = [], []
    for spec in specs:
        spec, note = backends.resolve_host(spec)
        resolved.append(spec)
        if note:
            notes.append(note)
    return resolved, tuple(notes)


def default_name(spec: RunSpec) -> str:
    """model-backend[-what the backend adds][-size][-device][-layout-c]."""
    parts = generic_label_parts(spec)
    parts[2:2] = backends.get(spec.backend).label_parts(spec)
    return "-".join(parts)


def named(specs: list[RunSpec]) -> list[RunSpec]:
    """Every spec with a name; names made unique by numbering the ones that collide."""
    specs = [s if s.name else s.replace(name=default_name(s)) for s in specs]
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    return [s.replace(name=f"{s.name}-{i}") if s.name in dupes else s for i, s in enumerate(specs, 1)]


def refuse_options_that_apply_to_nothing(overrides: dict, specs) -> None:
    """An option no variant uses would be silently ignored: say so instead."""
    if "input_shape" in overrides and not any(catalogue.is_user_model(s.model) for s in specs):
        raise UsageError("--input-shape applies to a .pt or .py model; catalogue models build their "
                         "own inputs (use --size)")
    readers: dict[str, list[str]] = {}   # backend-specific field -> backends that read it
    for name in backends.names():
        for key in backends.get(name).reads:
            readers.setdefault(key, []).append(name)
    read = set()
    for spec in specs:
        backend = backends.get(spec.backend)
        read.update(backend.reads, backend.coupling_backend(spec).reads)
    unused: dict[tuple, list[str]] = {}
    for key in overrides:
        if key in readers and key not in read:
            unused.setdefault(tuple(readers[key]), []).append(f"--{key.replace('_', '-')}")
    for owners, options in unused.items():
        raise UsageError(f"{', '.join(options)} applies to --backend {' or '.join(owners)}")
