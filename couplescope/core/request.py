"""From what a user asked for to the variants a run measures: the run request.

Every front end turns its own input into `RunOptions` (the CLI from its arguments, the
app from its form, the library from RunSpecs) and calls `build`; nothing else decides
how a preset, a list of backends and a list of sizes become variants, what they are
called, or which options apply to nothing. It knows nothing of argparse or Textual.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import field, make_dataclass

from couplescope import backends
from couplescope.core import presets
from couplescope.core.validation import validate_all
from couplescope.protocol import options
from couplescope.protocol.errors import UsageError
from couplescope.protocol.spec import SPEC_KEYS, RunSpec, generic_label_parts
from couplescope.workloads import catalogue

DEFAULT_TELEMETRY_HZ = options.get("telemetry_hz").default


def _run_field(option):
    return option.name, "object", field(default=option.default)


class _OptionsChecks:
    def __post_init__(self) -> None:
        unknown = set(self.overrides) - set(SPEC_KEYS)
        if unknown:
            raise ValueError(f"not RunSpec fields: {', '.join(sorted(unknown))}")


#: What a front end asks for: a preset or a model, lists to sweep, RunSpec fields to
#: override, and the run options (couplescope.protocol.options: export, telemetry_hz,
#: memory_limit, ...) as fields of their own, None where the user left them to the preset
#: or the default.
RunOptions = make_dataclass("RunOptions", [
    ("preset", "str | None", field(default=None)),
    ("model", "str | None", field(default=None)),
    ("backends", "list | None", field(default=None)),     # one variant per backend
    ("hosts", "list | None", field(default=None)),        # one variant per host
    ("sizes", "list | None", field(default=None)),        # one variant per size
    ("overrides", "dict", field(default_factory=dict)),   # RunSpec field -> value the user set
    *[(o.name, "object", field(default=None)) for o in options.RUN_OPTIONS],
], bases=(_OptionsChecks,))
RunOptions.__module__ = __name__


class _RequestMethods:
    def worker_env(self) -> dict:
        """What every worker of this request is told (couplescope.protocol.contract)."""
        from couplescope.protocol.contract import MEMORY_LIMIT_ENV

        return {MEMORY_LIMIT_ENV: self.memory_limit} if self.memory_limit else {}


#: What a run measures and where it goes: the one input of couplescope.core.pipeline. Its
#: run options (export, telemetry_hz, memory_limit, ...) are fields, checked and with the
#: preset's values and the defaults applied.
RunRequest = make_dataclass("RunRequest", [
    ("title", "str"),
    ("specs", "tuple"),
    ("preset", "str | None", field(default=None)),
    #: what the user should know before the run (a variant falling back to the python host)
    ("notes", "tuple", field(default=())),
    #: a recorded run's round orders, played as they were (couplescope.core.replay)
    ("orders", "tuple | None", field(default=None)),
    *[_run_field(o) for o in options.RUN_OPTIONS],
], bases=(_RequestMethods,), frozen=True)
RunRequest.__module__ = __name__


def run_settings(given: dict, preset_settings: dict | None = None) -> dict:
    """Every run option's value: the user's, else the preset's, else the default; checked."""
    settings = {}
    for option in options.RUN_OPTIONS:
        value = given.get(option.name)
        if value is None and preset_settings:
            value = preset_settings.get(option.name)
        settings[option.name] = option.default if value is None else option.check(value)
    return settings


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


def build(asked: RunOptions) -> RunRequest:
    """The variants of a preset and/or a model, swept over backends and sizes, with the
    overrides applied, named, checked, and refused when an option applies to nothing."""
    preset_settings = {}
    if asked.preset:
        _, base, preset_settings = presets.read(presets.locate(asked.preset), expand_sizes=not asked.sizes)
        title = os.path.basename(asked.preset).removesuffix(".toml")
    elif asked.model:
        base, title = [{}], os.path.basename(asked.model)
    else:
        raise UsageError("nothing to run: give --preset NAME or --model NAME (see --list), "
                         "or --tui for the interactive app")
    overrides = dict(asked.overrides)
    if asked.model:
        overrides["model"] = asked.model
        if asked.preset and {v.get("model") for v in base} != {asked.model}:
            # the preset's variants on another model: the run's name says so, wherever it is
            # shown or written (`simplenet-with-cgdrag` ran cgdrag, not simplenet)
            title = f"{title}-with-{os.path.basename(asked.model)}"
    sweep_backends = asked.backends or [None]
    sizes = asked.sizes or [None]
    hosts = asked.hosts or [None]
    specs = []
    for variant, backend, size, host in itertools.product(base, sweep_backends, sizes, hosts):
        d = with_training_steps({**variant, **overrides})
        if variant.get("name") and "name" in overrides and len(base) > 1:
            d["name"] = f"{overrides['name']}-{variant['name']}"   # a preset's variants: a prefix
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
    refuse_options_that_apply_to_nothing(asked.overrides, specs)
    validate_all(specs, asked.preset)
    specs, notes = resolve_hosts(specs)
    given = {o.name: getattr(asked, o.name) for o in options.RUN_OPTIONS}
    specs = named(specs)
    return RunRequest(title=title, specs=tuple(specs), preset=asked.preset, notes=notes,
                      **paced(run_settings(given, preset_settings), specs))


def with_training_steps(d: dict) -> dict:
    """A training variant that does not say how many steps makes as many as its model's
    learning task needs (SimpleNet: 10 000, as FTorch's example 11), so that a first
    `--task train` passes its check (catalogue.train_steps). Given --iterations (or a
    preset's), fewer steps leave the check not judged, said in words, rather than FAILED."""
    if d.get("task") != "train" or d.get("iterations") is not None or not d.get("model"):
        return d
    steps = catalogue.train_steps(d["model"])
    return {**d, "iterations": steps} if steps else d


def from_specs(specs, title: str = "", **settings) -> RunRequest:
    """A request for RunSpecs made in code (the library API): named and checked. `settings`
    are run options (couplescope.protocol.options: export, telemetry_hz, memory_limit, ...);
    the library's telemetry is off unless asked for."""
    unknown = set(settings) - {o.name for o in options.RUN_OPTIONS}
    if unknown:
        raise UsageError(f"not run options: {', '.join(sorted(unknown))}; valid: "
                         f"{', '.join(o.name for o in options.RUN_OPTIONS)}")
    specs = [specs] if isinstance(specs, RunSpec) else list(specs)
    if not specs:
        raise UsageError("nothing to run: give at least one RunSpec")
    validate_all(specs)
    specs, notes = resolve_hosts(specs)
    settings.setdefault("telemetry_hz", 0.0)
    specs = named(specs)
    return RunRequest(title=title or specs[0].model, specs=tuple(specs), notes=notes,
                      **paced(run_settings(settings), specs))


def paced(settings: dict, specs) -> dict:
    """The run settings with the rounds decided (couplescope.core.rounds: the user's, else
    interleaved for a comparison) and the baseline checked against the variants' names."""
    from couplescope.core import rounds

    resolved = rounds.resolve(settings.get("rounds"), specs)
    rounds.check_baseline(settings.get("baseline"), specs, resolved, settings.get("rounds"))
    return {**settings, "rounds": resolved}


def resolve_hosts(specs) -> tuple[list[RunSpec], tuple[str, ...]]:
    """Every spec with its host decided (couplescope.backends.hosts.resolve), and the notes."""
    from couplescope.backends import hosts

    resolved, notes = [], []
    for spec in specs:
        spec, note = hosts.resolve(spec)
        resolved.append(spec)
        if note:
            notes.append(note)
    return resolved, tuple(notes)


def default_name(spec: RunSpec) -> str:
    """model-backend[-what the backend adds][-size][-device][-layout-c][-host]."""
    from couplescope.backends import hosts

    parts = generic_label_parts(spec)
    parts[2:2] = backends.get(spec.backend).label_parts(spec)
    host_part = hosts.get(spec.host).label_part if spec.host else ""
    if host_part:
        at = len(parts) - (spec.grad_mode != "no_grad")   # before the grad mode, as it always was
        parts.insert(at, host_part)
    return "-".join(parts)


def named(specs: list[RunSpec]) -> list[RunSpec]:
    """Every spec with a name; names made unique by numbering the ones that collide."""
    specs = [s if s.name else s.replace(name=default_name(s)) for s in specs]
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    return [s.replace(name=f"{s.name}-{i}") if s.name in dupes else s for i, s in enumerate(specs, 1)]


def refuse_options_that_apply_to_nothing(overrides: dict, specs) -> None:
    """An option no variant reads would be silently ignored: say so instead. Which
    backends (and tasks) read an option is its declaration's (protocol/options.py)."""
    if "input_shape" in overrides and not any(catalogue.is_user_model(s.model) for s in specs):
        raise UsageError.about("input_shape", "--input-shape applies to a .pt or .py model; catalogue "
                               "models build their own inputs (use --size)")
    for key in overrides:
        option = options.BY_NAME.get(key)
        if option is None or (option.backends is None and option.tasks is None and option.hosts is None):
            continue
        if any(option.applies_to(backend_names(spec), getattr(spec, "task", None), spec.host)
               for spec in specs):
            continue
        if option.hosts is not None and not any(spec.host in option.hosts for spec in specs):
            raise UsageError.about(key, f"{option.flag} applies to --host {' or '.join(option.hosts)}")
        if option.backends is not None:
            raise UsageError.about(key, f"{option.flag} applies to --backend {' or '.join(option.backends)}")
        raise UsageError.about(key, f"{option.flag} applies to --task {' or '.join(option.tasks)}")


def backend_names(spec) -> tuple[str, ...]:
    """The backend of a variant and the one its processes run (mpi: its inner backend)."""
    backend = backends.get(spec.backend)
    return (spec.backend, backend.coupling_backend(spec).name)
