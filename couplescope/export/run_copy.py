"""A finished run directory copied to a new one: how the app exports a run.

The app runs every run through the pipeline with a run directory in a temporary folder
(the very RunDirectoryExporter and TraceListener `--export` uses), because traces must
have somewhere to go while the run goes, and the user decides afterwards whether to keep
it. Exporting is then a copy of that directory, so an exported run is what `--export`
would have written: results.json, events.jsonl, traces/, <variant>.output.log. Only two
things change on the way: the `trace_written` events' absolute paths (results.json holds
relative ones), and summary.png, drawn here (the app draws no picture for a run it never
keeps).

On a disk that fills (export/disk_full.py's rules): results.json first, written from the
run's own document (so it is there even when the staged copy could not be written);
without room for it nothing is left and OSError is raised. Any other file that cannot be
copied whole is removed and named in `missing`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from couplescope.export.disk_full import remove_quietly
from couplescope.export.run_dir import check_writable, new_run_directory, write_json_atomic, write_text_atomic
from couplescope.protocol import events
from couplescope.protocol.errors import WriteError

#: written by the copy itself, not copied as they are (summary.png is drawn afresh)
EVENTS_FILE, RESULTS_FILE, SUMMARY_FILE = "events.jsonl", "results.json", "summary.png"


@dataclass
class CopiedRun:
    path: str
    #: files of the run directory that could not be written (relative to it), in order
    missing: list = field(default_factory=list)
    #: why summary.png was not drawn (not for lack of room: that is in `missing`), or None
    summary_error: str | None = None


def copy_run(source: str, parent: str, title: str, started: float | None, document: dict) -> CopiedRun:
    """Copy the run directory `source` to a new run directory under `parent`, named by the
    run's start time; `document` is the run's results.json. Raises UsageError when
    `parent` cannot hold runs, OSError when results.json cannot be written (nothing is
    left behind then)."""
    path = new_run_directory(check_writable(parent), title, started)
    try:
        write_json_atomic(os.path.join(path, RESULTS_FILE), document)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)   # no directory without its results
        raise
    copied = CopiedRun(path)
    try:
        write_text_atomic(os.path.join(path, EVENTS_FILE), _moved_events(source, path))
    except OSError:
        copied.missing.append(EVENTS_FILE)
    copied.missing += _copy_whole_files(source, path)
    if any(v["stats"]["n"] for v in document.get("variants", [])):
        from couplescope.export.plots import write_summary

        try:
            write_summary(path, document)
        except WriteError:
            copied.missing.append(SUMMARY_FILE)
        except Exception as exc:   # the picture must never cost the export
            copied.summary_error = f"summary.png not drawn: {type(exc).__name__}: {exc}"
    return copied


def _moved_events(source: str, new_root: str) -> str:
    """events.jsonl line for line, a trace_written event's path pointing into the copy.
    Raises OSError when the staged file is not there (its disk was full)."""
    prefix = source + os.sep
    lines = []
    with open(os.path.join(source, EVENTS_FILE), encoding="utf-8") as f:
        for line in f:
            if '"trace_written"' in line:
                ev = events.parse(line)
                if ev is not None and str(ev.get("path", "")).startswith(prefix):
                    line = events.dumps({**ev, "path": new_root + ev["path"][len(source):]}) + "\n"
            lines.append(line)
    return "".join(lines)


def _copy_whole_files(source: str, path: str) -> list[str]:
    """Copy the other files (traces, scalars, output logs); one that cannot be copied whole
    is removed. Returns those, relative to the run directory."""
    missing = []
    for folder, _, files in os.walk(source):
        rel = os.path.relpath(folder, source)
        for name in sorted(files):
            if rel == "." and (name in (EVENTS_FILE, RESULTS_FILE, SUMMARY_FILE) or name.startswith(".")
                               or ".tmp-" in name):
                continue
            dst = os.path.normpath(os.path.join(path, rel, name))
            try:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(os.path.join(folder, name), dst)
            except OSError:
                remove_quietly(dst)
                missing.append(os.path.relpath(dst, path))
    return missing
