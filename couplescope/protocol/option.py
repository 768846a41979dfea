"""The option machinery: what an option is, and the one validation of its values.

`Option` is one declared option of a run (the declarations are
couplescope/protocol/options.py; docs/options.md is written from them by
couplescope/protocol/options_doc.py). A value is parsed from text (the command line,
the app's form) by `Option.parse` and checked (a preset, code) by `Option.check`, so
every front end refuses a bad value with the same words. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from couplescope.protocol.errors import UsageError, choices_text

#: where an option's value goes: a field of every variant (RunSpec) or of the run
SPEC, RUN = "spec", "run"

KIND_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Option:
    """One option of a run. See the module docstring for what is made from it."""

    name: str                        # RunSpec / run field and preset key (snake_case)
    kind: type                       # int, float, str, bool, or tuple (input shapes)
    default: Any
    help: str                        # one or two sentences: --help, the form's tooltip, docs
    group: str
    scope: str = SPEC
    choices: tuple | None = None     # a fixed set of valid values
    source: str | None = None        # valid values known at run time: models, backends, presets, devices
    low: float | None = None         # the smallest valid number
    high: float | None = None        # the largest valid number
    metavar: str = ""
    #: what the default means when it is None or needs words ("the model's own")
    default_text: str = ""
    #: a comma list runs one variant per value (backend, size, host)
    sweep: bool = False
    #: variants that differ in it are different series (couplescope.results.sweeps): False
    #: for what only names a variant, is the sweep's own axis, or says how long to measure.
    #: A spec written before the option existed has it at its `default`
    series: bool = True
    #: the backends that read it (None: every backend); set but unread, it is refused
    backends: tuple[str, ...] | None = None
    #: the tasks that read it (None: every task)
    tasks: tuple[str, ...] | None = None
    #: the hosts that read it (None: every host); set for another host, it is refused
    hosts: tuple[str, ...] | None = None
    #: the app's short label (default: the name with spaces)
    label: str = ""
    #: the command line's flag takes no value (--export DIR's DIR may be left out: const)
    const: Any = None
    #: a value of its own form: text -> value (input shapes, memory sizes); raises UsageError
    convert: Callable | None = None
    #: not a preset key, and why (a preset cannot name a preset)
    not_in_presets: str = ""
    #: what a value below `low` means, added to the error ("the mpi backend needs ...")
    why_low: str = ""
    #: the app's form offers it only where this is present ("slurm": srun on PATH); the
    #: command line and presets always take it
    offered: str | None = None
    #: the value must be greater than `low` (a learning rate of 0 learns nothing)
    above_low: bool = False
    #: a text value must match this (devices: cpu, cuda, cuda:N), said as `pattern_text`
    pattern: re.Pattern | None = None
    pattern_text: str = ""

    # -- names ---------------------------------------------------------------------------
    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def words(self) -> str:
        return self.name.replace("_", " ")

    @property
    def short_label(self) -> str:
        return self.label or self.words

    def default_words(self) -> str:
        """The default as help and the form's placeholder say it."""
        if self.default_text:
            return self.default_text
        if self.kind is bool:
            return "off" if not self.default else "on"
        if self.default in (None, ""):
            return "none"
        return str(self.default)

    # -- the one validation -------------------------------------------------------------
    def parse(self, text: str) -> Any:
        """A value from text (the command line, the app's form): converted, then checked.
        A sweep option's text is one item of its comma list."""
        text = str(text).strip()
        if self.convert is not None:
            return self.convert(text)
        if self.kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise UsageError(f"{self.flag}: '{text}' is not true or false")
        if self.kind in (int, float):
            try:
                value = self.kind(text)
            except ValueError:
                raise UsageError(f"{self.flag}: '{text}' is not {KIND_WORDS[self.kind]}") from None
            return self.check(value)
        return self.check(text)

    def check(self, value: Any) -> Any:
        """The value, checked against the declaration (type, choices, range). None is the
        default where the default is None. Raises UsageError naming the valid values."""
        if value is None and self.default is None:
            return None
        if self.convert is not None and isinstance(value, str):
            return self.convert(value)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.kind is not tuple and (not isinstance(value, self.kind)
                                       or (self.kind is not bool and isinstance(value, bool))):
            raise UsageError(f"{self.flag} must be {KIND_WORDS.get(self.kind, self.kind.__name__)} "
                             f"(got {value!r})")
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"unknown {self.words} '{value}'; choose one of: {choices_text(self.choices)}")
        if self.pattern is not None and not self.pattern.match(value):
            raise UsageError(f"unknown {self.words} '{value}'; choose one of: {self.pattern_text}")
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            raise UsageError(f"{self.flag} must be between {self.low:g} and {self.high:g} (got {value})")
        if self.kind is float and value != value:   # nan, where there is no range to say so
            raise UsageError(f"{self.flag} must be a number (got {value})")
        if self.above_low and value <= self.low:
            raise UsageError(f"{self.flag} must be greater than {self.low:g} (got {value})")
        if self.low is not None and value < self.low:
            why = f": {self.why_low}" if self.why_low else ""
            raise UsageError(f"{self.flag} must be at least {self.low:g} (got {value}){why}")
        if self.high is not None and value > self.high:
            raise UsageError(f"{self.flag} must be at most {self.high:g} (got {value})")
        return value

    def parse_list(self, text: str) -> list:
        """A sweep option's comma list: every item parsed. Raises UsageError for an empty list."""
        items = [t.strip() for t in str(text).split(",") if t.strip()]
        if not items:
            raise UsageError(f"{self.flag}: empty list '{text}'")
        return [self.parse(item) for item in items]

    def applies_to(self, backend_names, task: str | None = None, host: str | None = None) -> bool:
        """Whether a variant run by these backends (its backend, and an inner one), for this
        task, on this host, reads it."""
        if self.backends is not None and not set(self.backends) & set(backend_names):
            return False
        if self.hosts is not None and host not in self.hosts:
            return False
        return self.tasks is None or task is None or task in self.tasks


# -- values of their own form -------------------------------------------------------------

def parse_input_shape(text: str) -> tuple[tuple[int, ...], ...]:
    """"8,16" -> ((8, 16),); "8,16;8,1" -> two inputs. Raises UsageError on anything else."""
    shapes = []
    for part in str(text).split(";"):
        try:
            dims = tuple(int(v) for v in part.replace("x", ",").split(",") if v.strip())
        except ValueError:
            dims = ()
        if not dims or any(d < 1 for d in dims):
            raise UsageError(f"--input-shape '{text}' is not a shape; write dimensions like 8,16 "
                             "(several inputs separated by ';')")
        shapes.append(dims)
    return tuple(shapes)


def shape_from_toml(value) -> tuple[tuple[int, ...], ...]:
    """A preset's input_shape: "8,16", [8, 16] or [[8, 16], [8, 1]]."""
    if isinstance(value, str):
        return parse_input_shape(value)
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(s, (list, tuple)) for s in value):
            return parse_input_shape(";".join(",".join(map(str, s)) for s in value))
        return parse_input_shape(",".join(map(str, value)))
    raise UsageError(f"input_shape must be a string like \"8,16\" or a list of dimensions (got {value!r})")


def memory_limit_text(text: str) -> str:
    """--memory-limit as given, once it reads as a size or none."""
    from couplescope.protocol.sizes import parse_bytes

    parse_bytes(text)
    return str(text).strip()
