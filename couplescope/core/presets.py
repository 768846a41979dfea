"""Presets: TOML files that describe a set of variants sharing defaults.

    description = "..."
    telemetry_hz = 20     # a run option (docs/options.md), for the whole run
    [defaults]            # any per-variant option, applied to every variant
    model = "stride"
    size = 512
    [[variant]]           # one table per variant; its keys override the defaults
    backend = "torchscript"

`sizes = [...]` (in defaults or a variant) expands into one variant per size. Command-
line options override every variant. Every key is an option declared in
couplescope/protocol/options.py and checked by its declaration; errors name the file
and the key (or line).
"""

from __future__ import annotations

import os
from importlib import resources

from couplescope.protocol import options
from couplescope.protocol.errors import UsageError, choices_text
from couplescope.protocol.options import shape_from_toml
from couplescope.protocol.spec import RunSpec

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

#: the presets/ folder installs as this package (the module you are reading is couplescope.core.presets)
BUNDLED = "couplescope.bundled_presets"
EXTRA_KEYS = ("sizes",)
#: a preset's own top-level keys; the run options (options.RUN_OPTIONS) are top-level keys too
TOP_KEYS = ("description", "defaults", "variant")
VARIANT_KEYS = tuple(o.name for o in options.SPEC_OPTIONS if not o.not_in_presets) + EXTRA_KEYS
RUN_KEYS = tuple(o.name for o in options.RUN_OPTIONS if not o.not_in_presets)


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files(BUNDLED).iterdir()
                  if p.name.endswith(".toml"))


def locate(name_or_path: str) -> str:
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        if not os.path.isfile(name_or_path):
            raise UsageError(f"preset file not found: {name_or_path}")
        return name_or_path
    if name_or_path not in preset_names():
        raise UsageError(f"unknown preset '{name_or_path}'; choose one of: {choices_text(preset_names())}, "
                         "or a path to a .toml file")
    return str(resources.files(BUNDLED) / f"{name_or_path}.toml")


def describe(name: str) -> str:
    try:
        return read(locate(name))[0]
    except UsageError as exc:
        return f"(broken: {exc})"


def read(path: str, expand_sizes: bool = True) -> tuple[str, list[dict], dict]:
    """(description, list of variant dicts, run options) with keys and values checked.
    Without `expand_sizes` a table's `sizes` is dropped (the command line's --size list
    replaces it: it sweeps the sizes asked for, not those times the preset's)."""
    label = os.path.basename(path) if path.startswith(str(resources.files(BUNDLED))) else path
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{label}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot read: {exc.strerror}") from None
    settings = {}
    for key, value in data.items():
        if key in RUN_KEYS:
            settings[key] = _checked(label, "the top level", key, value)
        elif key not in TOP_KEYS:
            raise UsageError(f"{label}: unknown top-level key '{key}'; valid: "
                             f"{choices_text(TOP_KEYS + RUN_KEYS)}")
    defaults = data.get("defaults", {})
    tables = data.get("variant", [{}])
    if not isinstance(defaults, dict) or not isinstance(tables, list):
        raise UsageError(f"{label}: [defaults] must be a table and [[variant]] an array of tables")
    _check_keys(label, "[defaults]", defaults)
    variants = []
    for i, table in enumerate(tables or [{}], 1):
        _check_keys(label, f"[[variant]] {i}", table)
        merged = {**defaults, **table}
        sizes = merged.pop("sizes", None)
        if not expand_sizes:
            sizes = None
        if sizes is None:
            variants.append(merged)
        else:
            if not isinstance(sizes, list) or not sizes:
                raise UsageError(f"{label}: 'sizes' must be a list of whole numbers")
            for s in sizes:
                _checked(label, f"[[variant]] {i}", "size", s)
                v = {**merged, "size": s}
                if "name" in v:
                    v["name"] = f"{v['name']}-{s}"
                variants.append(v)
    return str(data.get("description", "")), variants, settings


def _check_keys(label: str, where: str, table: dict) -> None:
    for key, value in list(table.items()):
        if key not in VARIANT_KEYS:
            hint = " (a run option: put it at the top level)" if key in RUN_KEYS else ""
            raise UsageError(f"{label}: unknown key '{key}' in {where}{hint}; valid keys: "
                             f"{choices_text(VARIANT_KEYS)}")
        if key == "sizes":
            continue
        table[key] = _checked(label, where, key, value)


def _checked(label: str, where: str, key: str, value):
    """A preset value checked by its option's declaration; the error names file and key."""
    option = options.get(key)
    try:
        return shape_from_toml(value) if option.kind is tuple else option.check(value)
    except UsageError as exc:
        raise UsageError(f"{label}: key '{key}' in {where}: {exc}") from None


def values_by_option(name_or_path: str) -> dict[str, list]:
    """What a preset sets, option by option: the distinct values its variants give (in
    their order; `sizes` expanded into `size`) and its run options' values. The app's form
    shows them in its fields, marked as the preset's, so a user sees what will run."""
    _, variants, settings = read(locate(name_or_path))
    found: dict[str, list] = {key: [value] for key, value in settings.items()}
    for variant in variants:
        for key, value in variant.items():
            seen = found.setdefault(key, [])
            if value not in seen:
                seen.append(value)
    return found


def to_spec(variant: dict, overrides: dict | None = None) -> RunSpec:
    d = {**variant, **(overrides or {})}
    if "model" not in d:
        raise UsageError("no model given: set model in the preset's [defaults] or pass --model")
    if isinstance(d.get("input_shape"), (str, list)):
        d["input_shape"] = shape_from_toml(d["input_shape"])
    return RunSpec(**d)


def load_preset(name_or_path: str, overrides: dict | None = None) -> tuple[str, list[RunSpec]]:
    """(description, specs) for a preset, with command-line overrides applied."""
    description, variants, _ = read(locate(name_or_path))
    return description, [to_spec(v, overrides) for v in variants]
