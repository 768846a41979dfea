"""The runs of one app session: what each one ran, its events, and its export.

A RunRecord is written on the UI thread only (its ResultsBuilder is fed from messages);
the events themselves are recorded by the run's AppListener on the run's thread. Every
run goes through the pipeline with a staging run directory in a temporary folder, the
very listeners `--export` uses, so traces a run leaves behind are kept until the user
exports it or quits.
"""

from __future__ import annotations

import os
import shutil
import threading
import time

from couplescope.core import replay
from couplescope.export.run_dir import check_writable, new_run_directory, write_json_atomic
from couplescope.protocol import events
from couplescope.protocol.errors import UsageError
from couplescope.results.builder import ResultsBuilder, verdict_word

#: a run shows its worst variant's verdict
WORST_FIRST = ("failed", "error", "stopped", "running", "passed")

STANDARD_FILES = ("events.jsonl", "results.json")


class RunRecord:
    def __init__(self, run_id: int, title: str, specs, request) -> None:
        self.id = run_id
        self.title = title
        self.specs = list(specs)
        self.request = request             # the RunRequest it ran
        self.builder = ResultsBuilder(title)
        self.status = "running"            # running | finished | stopped | error
        self.error: str | None = None
        self.started = time.time()
        self.ended: float | None = None
        self.listener = None               # AppListener (holds the recorded events)
        self.staging = None                # the pipeline's RunDirectoryExporter (a temporary folder)
        self.pipeline = None
        self.session = None
        self.export_path: str | None = None
        self.summary_error: str | None = None   # why an export has no summary.png
        self.selected = False              # marked for the compare view
        self.current: str | None = None    # variant being measured
        self.done = threading.Event()      # set when its session thread has finished

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

    def verdict(self) -> str | None:
        """The run's verdict: its worst variant's (ResultsBuilder's VariantResult.verdict)."""
        verdicts = {v.verdict for v in self.builder.variants.values()}
        return next((w for w in WORST_FIRST if w in verdicts), None)

    def checks(self) -> str:
        """The History view's word for the run: PASSED, FAILED, ERROR, STOPPED, running, -."""
        verdict = self.verdict()
        return verdict_word(verdict) if verdict else "-"

    def finish(self, error: str | None) -> None:
        self.ended = time.time()
        self.error = error
        verdicts = {v.verdict for v in self.builder.variants.values()}
        if error or "error" in verdicts:
            self.status = "error"
        elif "stopped" in verdicts or any(v.status == "interrupted" for v in self.builder.variants.values()):
            self.status = "stopped"
        else:
            self.status = "finished"


def export_run(record: RunRecord, parent: str) -> str:
    """Write `record` to a new run directory under `parent`, as --export does; return its path.

    events.jsonl holds the recorded events (trace paths moved from the staging run
    directory to the new one) and results.json is rebuilt from them alone, as any run's
    can be (couplescope.core.replay); what else the staging directory holds (traces/,
    TensorBoard scalars) is copied beside them, and summary.png is drawn as --export does.
    """
    recorded = record.builder_events()
    if not any(ev["event"] == "model_loaded" for ev in recorded):
        raise UsageError(f"nothing to export from run #{record.id}: no variant loaded its model")
    staged = record.staging.path if record.staging is not None else None
    path = new_run_directory(check_writable(parent), record.title)
    if staged:
        recorded = [{**ev, "path": path + ev["path"][len(staged):]}
                    if ev["event"] == "trace_written" and str(ev.get("path", "")).startswith(staged + os.sep)
                    else ev for ev in recorded]
    with open(os.path.join(path, "events.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(events.dumps(ev) + "\n" for ev in recorded)
    document = replay.document(recorded, record.title)
    write_json_atomic(os.path.join(path, "results.json"), document)
    if staged and os.path.isdir(staged):
        for entry in os.listdir(staged):
            if entry in STANDARD_FILES or ".tmp-" in entry:
                continue
            src, dst = os.path.join(staged, entry), os.path.join(path, entry)
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dst)
    if any(v["stats"]["n"] for v in document["variants"]):
        from couplescope.export.plots import write_summary

        try:
            write_summary(path, document)
            record.summary_error = None
        except Exception as exc:   # the picture must never cost the export
            record.summary_error = f"summary.png not drawn: {type(exc).__name__}: {exc}"
    record.export_path = path
    return path
