"""The runs of one app session: what each one ran, its events, and its export.

A RunRecord is written on the UI thread only (its ResultsBuilder is fed from messages);
the events themselves are recorded by the run's AppListener on the run's thread. Every
run also writes a staging run directory in a temporary folder through the very
listeners `--export` uses (RunDirectoryExporter and optional_listeners), so traces a
run leaves behind are kept until the user exports it or quits.
"""

from __future__ import annotations

import os
import shutil
import time

from couplescope.errors import UsageError
from couplescope.export.run_dir import RunDirectoryExporter
from couplescope.results import ResultsBuilder

STANDARD_FILES = ("events.jsonl", "results.json")


class RunRecord:
    def __init__(self, run_id: int, title: str, specs, options) -> None:
        self.id = run_id
        self.title = title
        self.specs = list(specs)
        self.options = options
        self.builder = ResultsBuilder(title)
        self.status = "running"            # running | finished | stopped | failed
        self.error: str | None = None
        self.started = time.time()
        self.ended: float | None = None
        self.listener = None               # AppListener (holds the recorded events)
        self.staging: RunDirectoryExporter | None = None
        self.session = None
        self.export_path: str | None = None
        self.selected = False              # marked for the compare view
        self.current: str | None = None    # variant being measured

    @property
    def name(self) -> str:
        return f"#{self.id} {self.title}"

    def builder_events(self) -> list[dict]:
        """Every event recorded so far, in order."""
        return self.listener.snapshot() if self.listener else []

    def expected(self, variant: str) -> int | None:
        v = self.builder.variants.get(variant)
        spec = v.spec if v else None
        if not spec:
            return None
        return spec["warmup"] + spec["iterations"] + (spec.get("profile_iterations") or 0)

    def fastest_median(self):
        rows = self.builder.comparison()
        return min((r["median"] for r in rows), default=None)

    def checks(self) -> str:
        variants = list(self.builder.variants.values())
        if not variants or not any(v.iterations for v in variants):
            return "-"
        return "PASSED" if all(v.all_passed() for v in variants if v.iterations) else "FAILED"

    def finish(self, error: str | None) -> None:
        self.ended = time.time()
        self.error = error
        statuses = [v.status for v in self.builder.variants.values()]
        if error or "failed" in statuses:
            self.status = "failed"
        elif "interrupted" in statuses:
            self.status = "stopped"
        else:
            self.status = "finished"


def export_run(record: RunRecord, parent: str) -> str:
    """Write `record` to a new run directory under `parent`, as --export does; return its path.

    events.jsonl and results.json come from replaying the recorded events through a
    RunDirectoryExporter (variant by variant, as a live run calls it; trace paths are
    moved from the staging directory to the new one); everything else the staging run
    directory holds (traces/, TensorBoard scalars) is copied next to them.
    """
    events = record.listener.snapshot() if record.listener else []
    staged = record.staging.path if record.staging is not None else None
    exporter = RunDirectoryExporter(parent, record.title)
    builder = ResultsBuilder(record.title)
    for ev in events:
        if ev["event"] == "trace_written" and staged and exporter.path and \
                str(ev.get("path", "")).startswith(staged + os.sep):
            ev = {**ev, "path": exporter.path + ev["path"][len(staged):]}
        builder.on_event(ev)
        exporter.on_event(ev)
        if ev["event"] in ("variant_finished", "variant_failed"):
            exporter.variant_done(builder)
    if exporter.path is None:
        raise UsageError(f"nothing to export from run #{record.id}: no variant loaded its model")
    if staged and os.path.isdir(staged):
        for entry in os.listdir(staged):
            if entry in STANDARD_FILES or ".tmp-" in entry:
                continue
            src, dst = os.path.join(staged, entry), os.path.join(exporter.path, entry)
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dst)
    # the session's own builder also holds what listeners added (where the traces went,
    # relative to the run directory): once the run is over it is the document --export wrote
    final = record.session.builder if record.session is not None and record.status != "running" else builder
    exporter.session_done(final)
    record.export_path = exporter.path
    return exporter.path
