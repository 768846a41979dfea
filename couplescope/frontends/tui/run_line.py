"""The line beside the form's Run button: what `r` will run, in words.

Made from the request the form builds (core.request.build, as the command line's), never
from the fields: the task, the warm-up and timed iterations and the variants' names are
what the workers will be given, whoever set them (a preset, a field, a default).
"""

from __future__ import annotations

from rich.markup import escape

from couplescope.frontends import formatting as fmt
from couplescope.protocol import options

#: the most variants named; the rest are counted
NAMED = 6
TASK_WORDS = {"infer": "inference", "train": "training"}


def _count(value, option: str):
    """An iteration count as the spec holds it; the declaration's words where the request
    left it to be decided later."""
    return value if value is not None else options.get(option).default_words()


def backends_words(ticked, preset_backends) -> str:
    """", all with aoti (ticked: in place of the preset's torchscript, bridge)" when backends are
    ticked with a preset chosen: they run every variant of the preset, as `--preset P
    --backend B` does, under the preset's names (`bridge-torchscript` runs aoti): the line
    must say so. "" otherwise (no preset, or none ticked: the names say the backends)."""
    if not ticked or preset_backends is None:
        return ""
    theirs = ", ".join(preset_backends) or "backends"
    runs = f"all with {ticked[0]}" if len(ticked) == 1 else f"each once with each of {', '.join(ticked)}"
    return f", {runs} (ticked: in place of the preset's {escape(theirs)})"


def run_line(specs, ticked=(), preset_backends=None, overridden=(), rounds=None) -> str:
    """"4 variants, training, 10 000 timed steps + 10 warm-up each in 5 rounds: direct,
    bridge, ..." (markup): what each variant makes, in Watch's words (formatting.made_words,
    the profiled calls included), the model loaded in every call when it is, and the
    `rounds` the user set (given only then: the line stays short at 80 columns); `ticked` (the backends ticked) with `preset_backends` (a
    preset's, None without one) adds what runs every variant (backends_words);
    `overridden`: the fields filled in that change what runs and no other words of the
    line say, size first (`size 2; iterations 50 in place of 10 000 (preset)`:
    PresetFields.overridden)."""
    tasks = [t for t in options.TASKS if any(s.task == t for s in specs)]
    what = " and ".join(TASK_WORDS.get(t, t) for t in tasks)
    calls = "steps" if tasks == ["train"] else "calls"
    counts = {(s.warmup, s.iterations, s.profile_iterations) for s in specs}
    if len(counts) == 1:
        warmup, iterations, profiled = counts.pop()
        each = " each" if len(specs) > 1 else ""
        how_many = fmt.made_words(_count(iterations, "iterations"), _count(warmup, "warmup"), calls,
                                  _count(profiled, "profile_iterations")) + each
    else:
        how_many = f"{calls} per variant"
    if all(s.reload_every_call for s in specs):
        how_many += f", the model loaded in each {calls[:-1]}"
    if rounds:
        how_many += f" in {rounds} round{'s' if rounds != 1 else ''}"
    yours = f" ({escape('; '.join(overridden))})" if overridden else ""
    names = ", ".join(escape(s.label) for s in specs[:NAMED])
    more = f" and {len(specs) - NAMED} more" if len(specs) > NAMED else ""
    plural = "s" if len(specs) != 1 else ""
    return (f"[b]{len(specs)} variant{plural}[/], {what}, {how_many}{yours}"
            f"{backends_words(ticked, preset_backends)}: {names}{more}")
