"""What tells a session's runs apart, after each one's name in the History view.

A run's row names its task and backends (`#1 simplenet  infer: torchscript`), a preset's
run the preset (`#2 simplenet-train  preset, train`), then every setting in which it
differs from another run of the same title: `size 8` beside `size 8,16`, `threads 2`
beside `threads default`, `steps 50` beside `steps 10000`. Two runs that differed only in
size read the same before (the third walk-through), as every run of one model once read
`#N simplenet`.

In the room a row has (80 columns hold the table), the settings that differ come first:
the shared words give way, one at a time and the same way for every run of a title so
that their rows read alike: the backends counted (`2 backends`), then the task the runs
share, then the backends they share.
"""

from __future__ import annotations

import os

from couplescope.frontends.tui.blanks import value_words
from couplescope.protocol import options

#: what the row names without a difference (task, backends) or the title names (model);
#: a variant's name is made from the settings (simplenet-torchscript-8), its own word
NAMED = frozenset({"model", "name", "backend", "task"})
#: the run options that change what is measured; the export folder and the baseline do not
MEASURING = ("rounds", "order_seed", "telemetry_hz", "memory_limit")
#: a training run's words for what inference calls iterations
TRAINING_LABELS = {"iterations": "steps", "profile_iterations": "profiled steps"}
#: the ways to say the task and backends, longest first: (the task shared by every run of
#: the title shown, the backends: listed, counted, or left out when every run shares them)
FORMS = ((True, "listed"), (True, "counted"), (False, "listed"), (False, "counted"), (False, None))


def tasks(record) -> str:
    return "+".join(dict.fromkeys(getattr(s, "task", "infer") or "infer" for s in record.specs))


def backends(record) -> list[str]:
    return list(dict.fromkeys(s.backend for s in record.specs))


def _value_words(option, value) -> str:
    if value is None:
        return "default"
    text = value_words(option, value)
    if os.sep in text:   # a path (a compiler, a library's folder): its last part
        return os.path.basename(text.rstrip(os.sep)) or text
    return text


def settings(record) -> dict[str, str]:
    """Every setting of the run, by option, as its value in words (`8,16`: its variants'
    values), in the options' order, the spec's then the run's."""
    values = {}
    for option in options.SPEC_OPTIONS:
        if option.name not in NAMED:
            each = dict.fromkeys(_value_words(option, getattr(s, option.name, None)) for s in record.specs)
            values[option.name] = ",".join(each)
    for name in MEASURING:
        values[name] = _value_words(options.BY_NAME[name], _run_value(record, name))
    return values


def setting_words(record, name: str, value: str) -> str:
    """`size 8,16`; a training run's iterations are `steps 500` (an inference run's
    `iterations 500` beside it differs in its number only)."""
    label = TRAINING_LABELS.get(name) if tasks(record) == "train" else None
    return f"{label or options.BY_NAME[name].short_label} {value}"


def _run_value(record, name: str):
    """A run option's value; None where it is what the run decides by itself (the rounds
    of a comparison: `rounds 1` beside `rounds 5` said only that one run had more variants)."""
    from couplescope.core import rounds

    value = getattr(record.request, name, None)
    if name == "rounds" and value is not None and value == rounds.resolve(None, record.specs):
        return None
    return value


def differences(record, peers) -> list[str]:
    """The settings of `record` in which another of `peers` (runs of its title) differs, in words."""
    mine, theirs = settings(record), [settings(p) for p in peers if p is not record]
    return [setting_words(record, name, value) for name, value in mine.items()
            if any(other[name] != value for other in theirs)]


def context(record, form, shared: dict) -> str:
    """The task and backends in one of FORMS; what the runs of its title do not share is
    always said."""
    with_task, listing = form
    task = tasks(record)
    if getattr(record.request, "preset", None):   # its name says the backends
        return f"preset, {task}" if with_task or not shared["task"] else "preset"
    names = backends(record)
    if listing is None and shared["backends"]:
        said = ""
    elif listing == "listed" or len(names) == 1:
        said = ", ".join(names)
    else:
        said = f"{len(names)} backends"
    if not with_task and shared["task"]:
        return said
    return f"{task}: {said}" if said else task


def rows_words(records, room) -> dict[int, str]:
    """Each run's words after its name (by run id), in `room(record)` characters where a
    form of them fits: runs of one title are said in the same form, the longest that fits
    all of them."""
    by_title: dict[str, list] = {}
    for record in records:
        by_title.setdefault(record.title, []).append(record)
    said = {}
    for group in by_title.values():
        shared = {"task": len({tasks(r) for r in group}) == 1,
                  "backends": len({tuple(backends(r)) for r in group}) == 1}
        found = {r.id: differences(r, group) for r in group}
        for form in FORMS:
            words = {r.id: ", ".join(p for p in (context(r, form, shared), *found[r.id]) if p) for r in group}
            if all(len(words[r.id]) <= room(r) for r in group):
                break
        said.update(words)
    return said
