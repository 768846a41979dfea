"""The results document, built from events: what results.json holds.

The parent computes the statistics from the iteration events it received, so a worker
that dies half way still leaves correct statistics for what it measured, and every
front end agrees on the numbers. Events are the only input: replaying a run's
events.jsonl through a builder gives its results.json again (couplescope.core.replay).
The schema is documented in docs/results.md.
"""

from __future__ import annotations

import copy
import math
import os

from couplescope.protocol import events
from couplescope.protocol.contract import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from couplescope.results import ranks as mpi_stats
from couplescope.results import stats

SCHEMA_VERSION = 1

#: a variant's one-word outcome, as every front end shows it (VariantResult.verdict)
VERDICTS = ("running", "passed", "failed", "error", "stopped")


def verdict_word(verdict: str) -> str:
    """How tables print a verdict: PASSED, FAILED, ERROR, STOPPED, running."""
    return verdict if verdict == "running" else verdict.upper()


class VariantResult:
    def __init__(self, name: str) -> None:
        self.name = name
        self.spec: dict = {}
        self.environment: dict = {}
        self.load_seconds = None
        self.compile: dict | None = None   # aoti's or torch.compile's, from model_compiled
        self.model: dict = {}
        self.iterations: list[dict] = []
        self.status = "running"   # running | finished | failed | interrupted
        self.error = None
        self.error_kind = None
        self.summary: dict = {}
        self.diagnostics: list[dict] = []
        self.telemetry = None   # a telemetry_record.TelemetryRecord once samples arrive

    @property
    def timed(self) -> list[dict]:
        return [it for it in self.iterations if it["kind"] == "timed"]

    @property
    def steps(self) -> list[dict]:
        """The timed iterations the headline statistics summarise. Under MPI (records
        tagged with a rank) that is, per iteration, the slowest rank's record: the step
        time a simulation sees. Otherwise every timed iteration."""
        return mpi_stats.slowest_per_iteration(self.timed)

    def stats(self) -> dict:
        return stats.summarize([it["seconds"] for it in self.steps])

    def warnings(self) -> list[str]:
        """Noise, a slow first call, timed calls still warming up (stats.warnings_for)."""
        warm = [it for it in self.iterations if it["kind"] == "warmup"]
        return stats.warnings_for(self.stats(), warm[0]["seconds"] if warm else None,
                                  [it["seconds"] for it in self.steps],
                                  torchscript=bool(self.model.get("torchscript")))

    def all_passed(self) -> bool:
        """Every iteration measured so far passed its check (says nothing of how it ended)."""
        return bool(self.iterations) and all(it["passed"] for it in self.iterations)

    @property
    def verdict(self) -> str:
        """The variant's one status, shown by the headless table, results.json and the app:

        failed   a check failed (whatever ended the variant: a wrong answer comes first)
        error    it broke before finishing: a crash, a worker killed, bad input found in
                 the worker; the checks it made passed
        stopped  a signal or the user stopped it; the checks it made passed
        running  not over yet
        passed   it finished and every check passed
        """
        if self.failed_checks():
            return "failed"
        if self.status == "failed" or (self.status == "finished" and not self.iterations):
            return "error"
        if self.status == "interrupted":
            return "stopped"
        return "running" if self.status == "running" else "passed"

    def failed_checks(self) -> int:
        return sum(1 for it in self.iterations if not it["passed"])

    def to_dict(self) -> dict:
        s = self.stats()
        return {"name": self.name, "spec": self.spec, "status": self.status,
                "verdict": self.verdict, "error": self.error, "error_kind": self.error_kind,
                "load_seconds": self.load_seconds, "model": self.model,
                "iterations": [_json_safe(it) for it in self.iterations],
                "stats": {k: s[k] for k in ("n", "min", "median", "mean", "max", "stddev", "iqr")},
                "noisy": s["noisy"],
                "phases": stats.phase_summaries(self.steps),
                "warnings": self.warnings(),
                "checks_passed": self.all_passed(),
                "diagnostics": self.diagnostics,
                **({"compile": self.compile} if self.compile is not None else {}),
                **({"mpi": mpi_stats.summary(self.iterations)} if mpi_stats.ranked(self.iterations) else {}),
                **({"telemetry": self.telemetry.to_dict()} if self.telemetry is not None else {}),
                **self.summary}


def _json_safe(it: dict) -> dict:
    out = dict(it)
    err = out.get("max_rel_error")
    if isinstance(err, float) and not math.isfinite(err):
        out["max_rel_error"] = "nan" if math.isnan(err) else "inf"
    out.pop("event", None)
    out.pop("variant", None)
    return out


class ResultsBuilder:
    """Feed it every event (`on_event`); `document()` is results.json at that moment."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.variants: dict[str, VariantResult] = {}
        self.environment: dict = {}
        self.started = None
        self.extra: dict = {}
        self._traces: dict[str, list[str]] = {}   # variant -> trace files, run-relative

    def variant(self, name: str) -> VariantResult:
        if name not in self.variants:
            self.variants[name] = VariantResult(name)
        return self.variants[name]

    def on_event(self, ev: dict) -> None:
        kind = ev["event"]
        name = ev.get("variant")
        if kind == "run_started":
            v = self.variant(name)
            v.spec, v.environment = ev["spec"], ev["environment"]
            self.environment = self.environment or ev["environment"]
            self.started = self.started or ev["t"]
        elif kind == "model_loaded":
            v = self.variant(name)
            v.load_seconds = ev["seconds"]
            v.model = {k: ev[k] for k in ("size", "dtype", "tolerance", "inputs", "outputs", "torchscript")
                       if k in ev}
        elif kind == "iterations":
            for one in events.expand(ev):
                self.on_event(one)
        elif kind == "model_compiled":
            self.variant(name).compile = {k: ev[k] for k in ("status", "seconds", "compiler",
                                                              "export_seconds", "package") if k in ev}
        elif kind == "iteration":
            it = {k: ev[k] for k in ("index", "kind", "seconds", "phases", "max_rel_error", "passed", "error")}
            it["warmup"] = ev["kind"] == "warmup"
            it["profiled"] = ev["kind"] == "profiled"
            if "rank" in ev:
                it["rank"] = ev["rank"]
            self.variant(name).iterations.append(it)
        elif kind == "variant_finished":
            v = self.variant(name)
            v.status = "finished"
            # a copy: later events (trace_written) refine it, and the event itself is shared
            # with every other listener, which must see it as the worker wrote it
            v.summary.update(copy.deepcopy(ev.get("summary") or {}))
        elif kind == "variant_failed":
            v = self.variant(name)
            v.status = "interrupted" if ev.get("kind") == "interrupted" else "failed"
            v.error, v.error_kind = ev.get("reason"), ev.get("kind")
        elif kind == "diagnostic" and name:
            self.variant(name).diagnostics.append({k: ev[k] for k in ("check", "level", "message", "setting")
                                                   if k in ev})
        elif kind == "trace_written" and ev.get("relative_path"):
            # where the parent moved the worker's trace: the worker's own list named only
            # the files in its staging directory
            files = self._traces.setdefault(name, [])
            files.append(ev["relative_path"])
            profile = self.variant(name).summary.setdefault("profile", {})
            profile["trace_dir"] = os.path.dirname(ev["relative_path"])
            profile["trace_files"] = list(files)
        elif kind == "host_build" and name and ev.get("status") != "building":
            self.variant(name).summary["host_build"] = {
                "status": ev["status"], "directory": ev["directory"],
                "compile_seconds": ev.get("seconds", 0.0)}
        elif kind == "telemetry" and name:
            from couplescope.results.telemetry import record_sample

            record_sample(self.variant(name), ev)

    def comparison(self) -> list[dict]:
        """Median, IQR, ratio to the fastest and coupling overhead (call minus forward)."""
        rows = []
        for v in self.variants.values():
            s = v.stats()
            if not s["n"]:
                continue
            forward = stats.phase_summaries(v.steps).get("forward", {}).get("median")
            rows.append({"name": v.name, "median": s["median"], "iqr": s["iqr"],
                         "forward": forward,
                         "overhead": (s["median"] - forward) if forward is not None else None,
                         "verdict": v.verdict, "passed": v.verdict == "passed", "n": s["n"],
                         "compile_status": (v.compile or {}).get("status"),
                         "compile_seconds": (v.compile or {}).get("seconds")})
        fastest = min((r["median"] for r in rows), default=None)
        for r in rows:
            r["ratio"] = r["median"] / fastest if fastest else None
        return rows

    def document(self) -> dict:
        return {"schema": SCHEMA_VERSION, "title": self.title, "environment": self.environment,
                "variants": [v.to_dict() for v in self.variants.values()],
                "comparison": self.comparison(), **self.extra}

    def exit_code(self) -> int:
        """From the verdicts (docs/usage.md has the whole table): 130 a variant was stopped,
        2 one found bad input in the worker, 1 one failed a check or broke, else 0. (A
        signal's own code and a write failure's are the pipeline's: core.pipeline.Outcome.)"""
        verdicts = {v.verdict for v in self.variants.values()}
        if "stopped" in verdicts or any(v.status == "interrupted" for v in self.variants.values()):
            return EXIT_INTERRUPTED
        if any(v.error_kind == "usage" for v in self.variants.values()):
            return EXIT_USAGE
        if verdicts & {"failed", "error", "running"}:
            return EXIT_FAILED
        return EXIT_OK
