"""What tells a session's runs apart, after each one's name in the History view.

A run's row names its task and backends (`#1 simplenet  infer: torchscript`), a preset's
run the preset (`#2 simplenet-train  preset, train`), then every setting in which it
differs from another run of the same title: `size 8` beside `size 8,16`, `threads 2`
beside `threads default`, `steps 50` beside `steps 10000`. Two runs that differed only in
size read the same before (the third walk-through), as every run of one model once read
`#N simplenet`.

The settings that tell the runs of a title apart come first, in one order on every row:
the most telling first (the one that tells apart the most pairs of runs nothing before it
told apart: `iterations 10`, `1 000`, `300`, then `size 1,2` beside `size 1`, before
a `warm-up` or the backends that tell one run from the three others), the task and
backends among them when they differ (`torchscript` beside `preset`), else after them. A
setting no variant of a run reads (`bridge runs` on a torchscript run) is not said. A row that does not fit
keeps those that fit, in that order, and says `…` for the rest (fitted), so every row
reads against the others: `iterations 10, torchscript, …` above `iterations 1 000,
bridge, …` (rows kept their shortest words, `warm-up 10` on one and `size 1,2` on the next,
and `iterations`, the one that mattered, was always left out). In the room a row has (80
columns hold the table), the task and backends are said the longest way that fits every
run of a title: the backends counted (`2 backends`), then without the task they share,
then without the backends they share. Where two rows would then read alike (`size
default, …` twice, hiding `steps 300` and `steps 600`: the ninth walk), each keeps what
tells it from the others instead (told_apart). A run alone under its title says what is
notable about it: the settings it changed from what its preset (or model) alone sets,
its sizes first (notable).
"""

from __future__ import annotations

import os

from couplescope.frontends.tui.blanks import value_words
from couplescope.protocol import options

#: what the row names without a difference (task, backends) or the title names (model);
#: a variant's name is made from the settings (simplenet-torchscript-8), its own word
NAMED = frozenset({"model", "name", "backend", "task"})
#: the task and backends (`context`), told apart as a setting is
CONTEXT = "task and backends"
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


#: a size left to the model, in Pick's words (`1 (model's own)`), where no variant has said it yet
MODEL_S_OWN = "model's own"


def _value_words(option, value) -> str:
    if value is None:
        return MODEL_S_OWN if option.name == "size" else "default"
    text = value_words(option, value)
    if os.sep in text:   # a path (a compiler, a library's folder): its last part
        return os.path.basename(text.rstrip(os.sep)) or text
    return text


def _reads(option, spec) -> bool:
    """Whether the variant reads the option (a torchscript-only run's `bridge runs
    torchscript` told it apart from a preset's bridge runs, and hid the size)."""
    from couplescope.core.request import backend_names

    try:
        return option.applies_to(backend_names(spec), getattr(spec, "task", None), spec.host)
    except Exception:   # noqa: BLE001 - a backend this build does not know: said, as before
        return True


def _spec_value(record, spec, name: str, ran: bool):
    """The spec's value of option `name`; a size left to the model, the size its variant
    said it ran at (`ran`: History said `size default` where Pick said `1 (model's own)`
    and compare `1`, the tenth and eleventh walks)."""
    value = getattr(spec, name, None)
    if value is None and name == "size" and ran and getattr(record, "builder", None) is not None:
        variant = record.builder.variants.get(spec.label)
        value = (variant.model or {}).get("size") if variant is not None else None
        if value is None:   # not loaded yet (stopped before): the size it would have run at
            value = _own_size(getattr(spec, "model", None))
    return value


def _own_size(model):
    """A catalogue model's own size, read from its file without importing torch: a run
    stopped before a variant loaded the model read `size model's own` (or `size 1,model's
    own`, one variant loaded) beside `size 1` for the same blank size (the fifteenth walk).
    None for a user's file, or one whose size only its import knows."""
    from couplescope.workloads import catalogue, model_info

    if not model or catalogue.is_user_model(model):
        return None
    described = model_info.info(f"{catalogue.MODELS_PACKAGE}.{model.replace('-', '_')}")
    return described["default_size"] if described else None


def settings(record, ran: bool = True) -> dict[str, str]:
    """Every setting of the run, by option, as its value in words (`8,16`: its variants'
    values), in the options' order, the spec's then the run's; "" for one no variant of
    the run reads (NOT_READ). `ran`: a size left to the model as it ran (_spec_value)."""
    values = {}
    for option in options.SPEC_OPTIONS:
        if option.name not in NAMED:
            each = dict.fromkeys(_value_words(option, _spec_value(record, s, option.name, ran))
                                 for s in record.specs if _reads(option, s))
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


def telling_order(values: list[dict[str, str]]) -> list[str]:
    """The settings (by name) in which runs of one title, each given as its `values`,
    differ, the most telling first: the one that tells apart the most pairs of runs no
    setting before it told apart, then the most pairs, then the options' order (a size
    sweep, `size 1,2` beside `size default` on two runs each, came after a warm-up and the
    backends that told one run from three, and hid behind `…`). A run that does not read
    a setting ("") is not told apart by it. Every run of the group says the same ones."""
    names = list(values[0]) if values else []
    pairs = {name: {(i, j) for i in range(len(values)) for j in range(i + 1, len(values))
                    if values[i][name] and values[j][name] and values[i][name] != values[j][name]}
             for name in names}
    left, order, told = [n for n in names if pairs[n]], [], set()

    def telling(n: str):
        new = len(pairs[n] - told)
        # the task and backends first among equals where they tell runs apart; where
        # they tell none apart that a setting did not, after the settings (`#3 simplenet
        # iterations 300, preset, …` hid the `size 1,2` of its sweep: the twelfth walk)
        return (new, len(pairs[n]), n == CONTEXT if new else n != CONTEXT, -names.index(n))

    while left:
        best = max(left, key=telling)
        order.append(best)
        told |= pairs[best]
        left.remove(best)
    return order


def telling_count(values: list[dict[str, str]], order: list[str]) -> int:
    """How many of `order`'s first settings tell apart a pair of runs none before them told
    apart: the ones a row keeps before any other (fitted's `keep`)."""
    told: set = set()
    for kept, name in enumerate(order):
        pairs = {(i, j) for i in range(len(values)) for j in range(i + 1, len(values))
                 if values[i].get(name) and values[j].get(name) and values[i][name] != values[j][name]}
        if not pairs - told:
            return kept
        told |= pairs
    return len(order)


def differences(record, order) -> list[str]:
    """The settings of `order` (telling_order) as `record` has them, in words ("" for
    one it does not read, and for the task and backends: CONTEXT)."""
    mine = settings(record)
    return [setting_words(record, name, mine[name]) if mine.get(name) else "" for name in order]


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


def _baseline(record) -> dict[str, str] | None:
    """The settings the run would have had with nothing changed: its preset's alone, or its
    model's with its task (None when it cannot be built again: a recording, a file gone)."""
    from types import SimpleNamespace

    from couplescope.core import request as requests

    preset = getattr(record.request, "preset", None)
    model = record.specs[0].model if record.specs else None
    task = tasks(record)
    key = (preset, None if preset else model, None if preset else task)
    if key not in _BASELINES:
        try:
            asked = (requests.RunOptions(preset=preset) if preset else
                     requests.RunOptions(model=model, overrides={"task": task} if task != "infer" else {}))
            built = requests.build(asked)
            _BASELINES[key] = settings(SimpleNamespace(specs=built.specs, request=built))
        except Exception:   # noqa: BLE001 - nothing to measure it against: nothing said notable
            _BASELINES[key] = None
    return _BASELINES[key]


_BASELINES: dict[tuple, dict[str, str] | None] = {}


def notable(record) -> list[str]:
    """The settings (by name) of a run alone under its title that are away from what its
    preset (or model) alone sets, its sizes first: a lone `--preset simplenet --size 1,2`
    read `preset, infer` (the ninth walk), its sweep said only once a second run existed.
    A setting the unchanged run does not read (a bridge's on a torchscript model) is not."""
    base = _baseline(record)
    if base is None:
        return []
    mine = settings(record, ran=False)   # as asked, as its baseline is
    names = [n for n, v in mine.items() if v not in ("", "default", MODEL_S_OWN) and base.get(n) and v != base[n]]
    return sorted(names, key=lambda n: n != "size")


def fitted(pieces: list[str], tells: list[set] | None, room: int, keep: int = 0) -> str:
    """The row's `pieces` (in the one order of its title's rows) in `room` characters: all
    of them where they fit, else each in turn that still fits, in that order, and `…` for
    the rest (a piece too long no longer hides a shorter one after it), but never one in
    the place of the first `keep` (those that tell runs apart: telling_count), each kept
    where it fits even with no room for `…` after it: `#6 simplenet  iterations 1 000,
    preset, …` hid the `size 1,2` that told it from #2, on that row alone (the twelfth walk). Given `tells` (which runs each piece tells the row from), those
    that tell it from the most runs not yet told apart are kept first, the shorter first
    among equals (two rows read alike: told_apart). Nothing fits: all of them (run_cell
    cuts the one long word)."""
    shown = [i for i, p in enumerate(pieces) if p]
    if len(", ".join(pieces[i] for i in shown)) <= room:
        return ", ".join(pieces[i] for i in shown)
    chosen: list[int] = []
    if tells is None:
        for i in shown:
            if len(", ".join([*(pieces[j] for j in chosen), pieces[i], "…"])) <= room:
                chosen.append(i)
            elif i < keep and len(", ".join([*(pieces[j] for j in chosen), pieces[i]])) <= room:
                chosen.append(i)   # it tells the row apart: kept, with no room left for `, …`
                return closed(", ".join(pieces[j] for j in chosen), room)
            elif i < keep:
                break   # no later piece in the place of one that tells the row apart
    else:
        told: set = set()

        def worth(i: int):
            new = len(tells[i] - told)
            return (new, -len(pieces[i]) if new else 0, -i)

        while True:
            left = [i for i in shown if i not in chosen
                    and len(", ".join([*(pieces[j] for j in sorted([*chosen, i])), "…"])) <= room]
            if not left:
                break
            best = max(left, key=worth)
            chosen.append(best)
            told |= tells[best]
    if not chosen:
        return ", ".join(pieces[i] for i in shown)
    return ", ".join([*(pieces[i] for i in sorted(chosen)), "…"])


def told_apart(group, rows, order, pieces, room, keep: int = 0) -> dict[int, str]:
    """The group's rows fitted in their room (fitted) in their one order; a row that then
    reads as another does (`#1 simplenet-train  size default, …` and `#3 ... size default,
    …`, hiding the `steps 300` and `steps 600` that told them apart: the ninth walk) keeps
    instead what tells it from the others."""
    words = {r.id: fitted(pieces[r.id], None, room(r), keep) for r in group}
    seen: dict[str, int] = {}
    for r in group:
        seen[words[r.id]] = seen.get(words[r.id], 0) + 1
    for i, r in enumerate(group):
        if seen[words[r.id]] > 1 and "…" in words[r.id]:
            tells = [{j for j, other in enumerate(rows) if j != i and rows[i].get(name)
                      and other.get(name) and other[name] != rows[i][name]} for name in order]
            words[r.id] = fitted(pieces[r.id], tells, room(r))
    return words


def marked(words: str, full: str, room: int, keep: int = 0) -> str:
    """A row's words with `…` where they leave out any of its full words (`full`, what it
    says with room for all), the last words giving way to it, but not the first `keep`
    (those that tell the runs apart: fitted)."""
    if words == full or words.endswith("…"):
        return words
    parts = words.split(", ")
    while len(parts) > keep and len(", ".join([*parts, "…"])) > room:
        parts.pop()
    return ", ".join([*parts, "…"]) if len(", ".join([*parts, "…"])) <= room else closed(words, room)


def closed(words: str, room: int) -> str:
    """Words that leave some out, marked so where `, …` has no room: `iterations 1 000, size
    1,2 …` (the size tells the row apart and fills it but for two columns: the row said
    nothing of its warm-up, preset and task, beside rows ending `…`); the words alone where
    not even ` …` fits (the highlighted row's full words are under the table)."""
    return f"{words} …" if len(words) + 2 <= room else words


def rows_words(records, room, mark: bool = True) -> dict[int, str]:
    """Each run's words after its name (by run id), in `room(record)` characters where a
    form of them fits: runs of one title are said in the same form, the longest that fits
    all of them, and the same settings in the same order (the module docstring); where
    none fits, each row keeps what tells it apart (fitted). A run alone under its title
    says what is notable about it. `mark`: where a row of a title is cut with `…`, every
    row of it that leaves out words says `…` too (marked)."""
    by_title: dict[str, list] = {}
    for record in records:
        by_title.setdefault(record.title, []).append(record)
    said = {}
    for group in by_title.values():
        shared = {"task": len({tasks(r) for r in group}) == 1,
                  "backends": len({tuple(backends(r)) for r in group}) == 1}
        values = [settings(r) for r in group]
        # a run alone shares its task and backends with no other: they are said (`…` if cut)
        for form in (FORMS if len(group) > 1 else FORMS[:2]):
            contexts = {r.id: context(r, form, shared) for r in group}
            # the task and backends placed among the settings that tell apart as they tell
            # runs apart; after all of them when every run shares them
            # (first among those that tell as many apart: `torchscript` beside `preset`)
            rows = [{CONTEXT: contexts[r.id], **v} for r, v in zip(group, values)]
            order = telling_order(rows)
            if len(group) == 1:
                order = [*notable(group[0]), CONTEXT]
            elif CONTEXT not in order:
                order.append(CONTEXT)
            pieces = {r.id: [contexts[r.id] if name == CONTEXT else piece
                             for name, piece in zip(order, differences(r, order))] for r in group}
            words = {r.id: ", ".join(p for p in pieces[r.id] if p) for r in group}
            if all(len(words[r.id]) <= room(r) for r in group):
                break
        keep = telling_count(rows, order) if len(group) > 1 else 0
        words = told_apart(group, rows, order, pieces, room, keep)
        if mark and any(w.endswith("…") for w in words.values()):
            # beside a row cut with `…`, a row the shorter form left words out of says so
            # too: `#2 simplenet-train  size 2, preset` (its shared `train` left out) read as
            # whole under `#1 simplenet-train  size default, …` (the tenth walk)
            full = rows_words(group, lambda record: 10 ** 6, mark=False)
            words = {r.id: marked(words[r.id], full[r.id], room(r), keep) for r in group}
        said.update(words)
    return said
