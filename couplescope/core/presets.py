"""Presets: TOML files that describe a set of variants sharing defaults.

    description = "..."
    [defaults]            # any RunSpec key, applied to every variant
    model = "stride"
    size = 512
    [[variant]]           # one table per variant; its keys override the defaults
    backend = "torchscript"

`sizes = [...]` (in defaults or a variant) expands into one variant per size. Command-
line options override every variant. Errors name the file and the key (or line).
"""

from __future__ import annotations

import os
from importlib import resources

from couplescope.protocol.errors import UsageError, choices_text
from couplescope.protocol.spec import SPEC_KEYS, RunSpec, parse_input_shape

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

#: the presets/ folder installs as this package (the module you are reading is couplescope.core.presets)
BUNDLED = "couplescope.bundled_presets"
EXTRA_KEYS = ("sizes",)
TOP_KEYS = ("description", "defaults", "variant")
_TYPES = {"model": str, "backend": str, "size": int, "bridge_model": str, "device": str,
          "dtype": str, "layout": str, "warmup": int, "iterations": int, "threads": int,
          "seed": int, "reload_every_call": bool, "input_shape": (str, list), "name": str,
          "profile_iterations": int, "profile_max_ops": int, "pinned": bool, "ranks": int, "inner_backend": str,
          "launcher": str, "launcher_args": str, "oversubscribe": bool, "sizes": list}


_TYPE_WORDS = {str: "a string", int: "a whole number", bool: "true or false", list: "a list"}


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


def read(path: str) -> tuple[str, list[dict]]:
    """(description, list of variant dicts) with keys and types checked."""
    label = os.path.basename(path) if path.startswith(str(resources.files(BUNDLED))) else path
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{label}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot read: {exc.strerror}") from None
    for key in data:
        if key not in TOP_KEYS:
            raise UsageError(f"{label}: unknown top-level key '{key}'; valid: {choices_text(TOP_KEYS)}")
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
        if sizes is None:
            variants.append(merged)
        else:
            if not all(isinstance(s, int) for s in sizes) or not sizes:
                raise UsageError(f"{label}: 'sizes' must be a list of whole numbers")
            for s in sizes:
                v = {**merged, "size": s}
                if "name" in v:
                    v["name"] = f"{v['name']}-{s}"
                variants.append(v)
    return str(data.get("description", "")), variants


def _check_keys(label: str, where: str, table: dict) -> None:
    valid = SPEC_KEYS + EXTRA_KEYS
    for key, value in table.items():
        if key not in valid:
            raise UsageError(f"{label}: unknown key '{key}' in {where}; valid keys: {choices_text(valid)}")
        want = _TYPES.get(key)
        if want is not None and not isinstance(value, want) or (want is int and isinstance(value, bool)):
            kind = _TYPE_WORDS.get(want) or " or ".join(_TYPE_WORDS[t] for t in want)
            raise UsageError(f"{label}: key '{key}' in {where} must be {kind} (got {value!r})")


def to_spec(variant: dict, overrides: dict | None = None) -> RunSpec:
    d = {**variant, **(overrides or {})}
    if "model" not in d:
        raise UsageError("no model given: set model in the preset's [defaults] or pass --model")
    shape = d.get("input_shape")
    if isinstance(shape, str):
        d["input_shape"] = parse_input_shape(shape)
    elif isinstance(shape, list):
        d["input_shape"] = parse_input_shape(";".join(",".join(map(str, s)) if isinstance(s, list)
                                                      else str(s) for s in shape)) if shape and isinstance(shape[0], list) \
            else parse_input_shape(",".join(map(str, shape)))
    return RunSpec(**d)


def load_preset(name_or_path: str, overrides: dict | None = None) -> tuple[str, list[RunSpec]]:
    """(description, specs) for a preset, with command-line overrides applied."""
    description, variants = read(locate(name_or_path))
    return description, [to_spec(v, overrides) for v in variants]
