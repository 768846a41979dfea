"""`--plot` and `--compare`: saved runs in, a picture or a verdict out.

Neither starts a worker or imports torch: both read results documents (a run
directory, or a file `--json` printed), so they run on a laptop or in a CI job that
only holds the files. `--compare` is the regression gate: exit 0 when no variant is
slower by more than the threshold, 1 when one is, 2 on bad input
(couplescope.results.regression says how "slower" is decided).
"""

from __future__ import annotations

import json
import sys

from couplescope.frontends import formatting as fmt
from couplescope.protocol.contract import EXIT_OK
from couplescope.protocol.errors import UsageError
from couplescope.protocol.step_words import NOT_JUDGED
from couplescope.results import labels, regression, saved
from couplescope.results.builder import verdict_word

#: what a headless run's options would mean here: nothing, so they are refused
RUN_OPTIONS = ("preset", "model", "backend", "size", "host", "tui", "export", "tensorboard", "perfetto", "list")


def with_label_parts(document: dict) -> dict:
    """A saved results document whose variants say what their backend ran (label_parts:
    a run saved before results.json kept them gets them from the backend here)."""
    from couplescope import backends

    for variant in document.get("variants") or []:
        if "label_parts" not in variant:
            parts = backends.label_parts_of(variant.get("spec") or {})
            if parts is not None:
                variant["label_parts"] = parts
    return document


def run_saved(args) -> int:
    _refuse_mixing(args)
    if args.plot:
        return plot(args)
    return compare(args)


def _refuse_mixing(args) -> None:
    if args.plot and args.compare:
        raise UsageError("--plot and --compare are separate commands: give one")
    if not args.plot and not args.compare:
        raise UsageError("--output goes with --plot RUN ..." if args.output
                         else "--threshold goes with --compare BASE NEW")
    if args.plot and (args.threshold is not None or args.json):
        raise UsageError(f"{'--threshold' if args.threshold is not None else '--json'} goes with "
                         "--compare BASE NEW, not --plot")
    if args.compare and args.output:
        raise UsageError("--output goes with --plot; --compare prints (--json for a document)")
    given = [f"--{o}" for o in RUN_OPTIONS if getattr(args, o, None)]
    if given:
        mode = "--plot" if args.plot else "--compare"
        raise UsageError(f"{mode} reads saved runs; {', '.join(given)} start or show a run: use them separately")


def plot(args) -> int:
    from couplescope.export import plots

    if not args.output:
        raise UsageError("--plot needs --output FILE (.png or .svg)")
    plots.output_format(args.output)   # refuse a bad name before reading anything
    documents = [with_label_parts(saved.load(path)) for path in args.plot]
    print(f"plot: {plots.write(documents, args.output)}")
    return EXIT_OK


def compare(args) -> int:
    base_path, new_path = args.compare
    base, new = with_label_parts(saved.load(base_path)), with_label_parts(saved.load(new_path))
    if not regression.common_names(base, new):
        raise UsageError(f"no variant in common: {base_path} has {_names(base)}; {new_path} has {_names(new)}")
    threshold = regression.DEFAULT_THRESHOLD if args.threshold is None else args.threshold / 100
    document = regression.compare(base, new, threshold)
    if args.json:
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    else:
        print(report(document, {v["name"]: labels.size_of(v) for v in base["variants"] + new["variants"]}))
    return document["exit_code"]


def _names(document: dict) -> str:
    names = [v["name"] for v in document["variants"]]
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "") if names else "none"


def _ratio(value) -> str:
    return "n/a" if value is None else f"{value:.3f}x"


def _resampled(document: dict) -> str:
    """How the interval was drawn: blocks of calls, or whole rounds when both runs were
    measured in rounds (regression.ratio_interval)."""
    by_rounds = {r.get("by_rounds") for r in document["variants"] if r.get("ratio") is not None}
    if by_rounds == {True}:
        return "bootstrap of whole rounds"
    if True in by_rounds:
        return "bootstrap of whole rounds where both runs are in rounds, else of blocks of calls"
    return "block bootstrap"


def report(document: dict, sizes: dict) -> str:
    """The comparison as text: one row per variant, grouped by size for a sweep."""
    pct = f"{document['threshold'] * 100:g}%"
    conf = f"{document['confidence'] * 100:g}%"
    lines = [f"base: {_run_line(document['base'])}", f"new:  {_run_line(document['new'])}",
             f"slower = the {conf} interval of new/base (ratio of medians, {_resampled(document)}) lies above "
             f"{1 + document['threshold']:.3g}", ""]
    headers = ["variant", "base median", "new median", "new/base", f"{conf} interval", "verdict"]
    rows = document["variants"]
    sweep = len({sizes.get(r["name"]) for r in rows} - {None}) > 1
    groups = {}
    for r in rows:
        groups.setdefault(sizes.get(r["name"]) if sweep else None, []).append(r)
    body, headings = [], {}
    for size in sorted(groups, key=lambda s: (s is None, s or 0)):
        if sweep:
            headings[len(body)] = f"size {size}:" if size is not None else "size unknown:"
        for r in groups[size]:
            interval = (f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else "")
            verdict = r["verdict"].upper() if r["verdict"] in (regression.SLOWER, regression.INCONCLUSIVE) \
                else r["verdict"]
            body.append([r["name"], fmt.seconds(r["base_median"]) if r["base_median"] is not None else "-",
                         fmt.seconds(r["new_median"]) if r["new_median"] is not None else "-",
                         _ratio(r["ratio"]), interval, verdict])
    lines.append(fmt.with_headings(fmt.table(headers, body, right={1, 2, 3}), headings))
    for r in rows:
        for note in r["notes"]:
            lines.append(f"note: {r['name']}: {note}")
    # the new run's own verdicts (results.json's; runs saved before verdicts: their checks)
    ended = [(r["name"], r.get("new_ended") or ("failed" if r["new_checks_passed"] is False else None))
             for r in rows]
    # (not judged: its checks passed, too few steps to judge the learning; exit code 0)
    unwell = [f"{name} {verdict_word(v)}" for name, v in ended if v not in (None, "passed", NOT_JUDGED)]
    if unwell:
        lines.append(f"note: in the new run, {', '.join(unwell)} (its own exit code said so)")
    slower = document["slower"]
    inconclusive = document.get("inconclusive") or []
    if slower:
        lines.append(f"{len(slower)} variant{'s' if len(slower) > 1 else ''} slower by more than {pct}: "
                     f"{', '.join(slower)}")
    elif inconclusive:
        lines.append(f"inconclusive: {', '.join(inconclusive)} moved by more than {pct}, but the machine's "
                     "load differed between the runs (the notes say how)")
    else:
        lines.append(f"no variant slower by more than {pct}")
    return "\n".join(lines)


def _run_line(run: dict) -> str:
    extra = [x for x in (run.get("title"), f"torch {run['torch']}" if run.get("torch") else None,
                         run.get("start_time")) if x]
    return f"{run.get('source')} ({', '.join(extra)})" if extra else str(run.get("source"))
