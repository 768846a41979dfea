"""The results document, built from events: what results.json holds.

The parent computes the statistics from the iteration events it received, so a worker
that dies half way still leaves correct statistics for what it measured, and every
front end agrees on the numbers. Events are the only input: replaying a run's
events.jsonl through a builder gives its results.json again (couplescope.core.replay).
The schema is documented in docs/results.md.
"""

from __future__ import annotations

import copy
import os

from couplescope.protocol import columns, events
from couplescope.protocol.contract import exit_code
from couplescope.protocol.step_words import NOT_JUDGED
from couplescope.results import ranks as rank_stats
from couplescope.results import stats
from couplescope.results.call_columns import CallColumns
from couplescope.results.document_text import readable_json
from couplescope.results.verdicts import verdict_word  # noqa: F401 (read from here too)

#: 2: a variant's iterations in blocks of columns (results/call_columns.py); 1: a record per call
SCHEMA_VERSION = 2
#: the schemas `couplescope.results.saved` reads
SCHEMAS_READ = (1, 2)

#: rank-tagged calls results.json keeps one by one; past this, each step's slowest rank's
#: call (events.jsonl keeps every call, and <backend>.per_rank every rank's statistics): 1024
#: ranks x 1000 steps made a results.json of 276 MB that took a minute to write
RANKED_CALLS_KEPT = 100_000

class VariantResult:
    def __init__(self, name: str) -> None:
        self.name = name
        self.spec: dict = {}
        self.environment: dict = {}
        self.load_seconds = None
        self.compile: dict | None = None   # aoti's or torch.compile's, from model_compiled
        self.model: dict = {}
        #: every call, in columns (results/call_columns.py); `iterations` gives a record per call
        self.calls = CallColumns()
        self.status = "running"   # running | finished | failed | interrupted
        self.error = None
        self.error_kind = None
        self.summary: dict = {}
        self.diagnostics: list[dict] = []
        self.telemetry = None   # a telemetry_record.TelemetryRecord once samples arrive
        self.coupling: dict = {}   # run_started's words: "coupling", "label_parts"
        #: rank -> where it runs (host, node, cores, threads, device), from the rank_info
        #: events the ranks send as they start: known even when the variant never finishes
        self.rank_info: dict[int, dict] = {}
        #: a run in rounds: the round the variant measures now (its timed iterations are
        #: tagged with it), the last it finished, and its place in each round's order
        self.round: int | None = None
        self.round_finished: int | None = None
        self.round_positions: dict[int, int] = {}
        #: per round: [sum, count] of other processes' CPU (percent of a core) in its timed samples
        self.round_load: dict[int, list] = {}
        self._cache: dict = {}   # figures computed from all the calls, with their count

    @property
    def ranks(self) -> list[dict]:
        """Per rank, where it ran: the finished variant's own list (which adds each rank's
        load time and sample values), else what the ranks said as they started."""
        return self.summary.get("ranks") or rank_stats.placements(self.rank_info)

    @property
    def iterations(self) -> list[dict]:
        """Every call as a record (call_columns.CallColumns.records: made when first asked,
        for the consumers that go call by call; the statistics read the columns)."""
        return self.calls.records()

    @property
    def timed(self) -> list[dict]:
        return [it for it in self.iterations if it["kind"] == "timed"]

    @property
    def steps(self) -> list[dict]:
        """The timed iterations the headline statistics summarise, a record each. Under MPI
        (records tagged with a rank) that is, per iteration, the slowest rank's record: the
        step time a simulation sees. Otherwise every timed iteration. Kept until the next
        iteration arrives (with a thousand ranks a variant has a million records, and the
        statistics, warnings, phases and comparison all ask)."""
        return self._kept("steps", lambda: rank_stats.slowest_per_iteration(self.timed))

    def step_seconds(self) -> list[float]:
        """The steps' seconds, in order: from the columns, but under MPI (each step's
        slowest rank)."""
        if self.calls.ranked:
            return self._kept("step_seconds", lambda: [it["seconds"] for it in self.steps])
        return self.calls.seconds("timed")

    def kept_calls(self) -> tuple[CallColumns, str | None]:
        """The calls results.json lists: all of them, or, for a job of many ranks past
        RANKED_CALLS_KEPT, each step's slowest rank's call (per kind), and a note saying so."""
        if self.calls.count <= RANKED_CALLS_KEPT or not self.calls.ranked:
            return self.calls, None
        kept = []
        for kind in ("warmup", "timed", "profiled"):
            kept += rank_stats.slowest_per_iteration([it for it in self.iterations if it["kind"] == kind])
        return CallColumns.of_records(kept), (
            f"each step's slowest rank: {len(kept)} of {self.calls.count} calls "
            f"(more than {RANKED_CALLS_KEPT}); every call is in events.jsonl, every rank's "
            f"statistics in {self.ranked_key}.per_rank")

    @property
    def ranked_key(self) -> str:
        """Where results.json files the per-rank figures: under the name of the backend whose
        processes sent rank-tagged calls, as the variant's run_started says (mpi's), so that
        results/ reads the name from the events and never asks which backend it is."""
        return self.spec.get("backend") or "ranked"

    def ranked_summary(self) -> dict:
        """results.json's per-rank object (results/ranks.py), kept until more arrives."""
        key = (self.calls.count, len(self.ranks))
        cached = self._cache.get("ranked")
        if cached is None or cached[0] != key:
            cached = self._cache["ranked"] = (key, rank_stats.summary(self.iterations, self.ranks))
        return cached[1]

    def stats(self) -> dict:
        """The timed steps' statistics, kept until another iteration arrives (the table,
        results.json, the noise verdict and the printer all ask)."""
        return self._kept("stats", lambda: stats.summarize(self.step_seconds()))

    def phases(self) -> dict:
        """Each phase's median and IQR over the timed steps, kept as stats() is."""
        if self.calls.ranked:
            return self._kept("phases", lambda: stats.phase_summaries(self.steps))
        return self._kept("phases", lambda: stats.column_summaries(self.calls.phase_seconds("timed")))

    def _kept(self, what: str, compute):
        cached = self._cache.get(what)
        if cached is None or cached[0] != self.calls.count:
            cached = self._cache[what] = (self.calls.count, compute())
        return cached[1]

    def warnings(self) -> list[str]:
        """Noise, a slow first call, timed calls still warming up (stats.warnings_for)."""
        if self.calls.ranked:
            warm = [it for it in self.iterations if it["kind"] == "warmup"]
            first, made = (warm[0]["seconds"] if warm else None), len({it["index"] for it in warm})
        else:
            warm = self.calls.seconds("warmup")
            first, made = (float(warm[0]) if len(warm) else None), len(warm)
        return stats.warnings_for(self.stats(), first, self.step_seconds(),
                                  torchscript=bool(self.model.get("torchscript")), warmup=made)

    def all_passed(self) -> bool:
        """Every iteration measured so far passed its check (says nothing of how it ended)."""
        return self.calls.count > 0 and self.calls.failed == 0

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
        if self.status == "failed" or (self.status == "finished" and not self.calls.count):
            return "error"
        if self.status == "interrupted":
            return "stopped"
        return "running" if self.status == "running" else "passed"

    @property
    def training(self) -> bool:
        """A --task train variant: its iterations are optimizer steps with a loss."""
        return bool(self.model.get("training")) or self.spec.get("task") == "train"

    @property
    def said_verdict(self) -> str:
        """The verdict as the tables, the app and results.json say it (results.json said
        passed where they said not judged: the fifteenth walk)."""
        return NOT_JUDGED if self.verdict == "passed" and self.learning_not_judged() else self.verdict

    def learning_not_judged(self) -> bool:
        """A training variant whose learning task was not judged: fewer steps than it needs
        (the worker's final check: passed None, with the steps it needs). Its checks passed
        say nothing of whether the model learned: `not judged` in place of passed."""
        final = (self.summary.get("training") or {}).get("final_check") or {}
        return final.get("passed", True) is None and bool(final.get("steps_needed"))

    def last_loss(self) -> float | None:
        """The loss of the last step measured: every step trains the model, the profiled
        ones too, so the last loss is the trained model's (the loss lines say the same)."""
        for _, loss in reversed(self.calls.losses()):
            if loss is not None:
                return loss
        return None

    def failed_checks(self) -> int:
        """Iterations that failed their check, and a training run's final check if it failed."""
        final = (self.summary.get("training") or {}).get("final_check") or {}
        return self.calls.failed + (final.get("passed") is False)

    def note_round_load(self, sample: dict) -> None:
        """A telemetry sample taken during this variant's current round: what other
        processes than couplescope's used while its timed calls ran (the noise verdict,
        couplescope.results.noise, judges the rounds by it)."""
        from couplescope.results.telemetry import is_number, others_cpu_percent

        if (sample.get("iteration") or {}).get("kind") != "timed":
            return
        others = others_cpu_percent(sample)
        if is_number(others):
            total = self.round_load.setdefault(self.round, [0.0, 0])
            total[0] += others
            total[1] += 1

    def steps_by_round(self) -> dict[int, tuple[list[float], int, int]]:
        """Round -> its timed steps' seconds and first and last index (a run in rounds),
        kept as stats() is."""
        return self._kept("by_round", self._steps_by_round)

    def _steps_by_round(self) -> dict[int, tuple[list[float], int, int]]:
        by_round: dict[int, tuple[list[float], int, int]] = {}
        if self.calls.ranked:
            for it in self.steps:
                if it.get("round") is not None:
                    seconds, first, _ = by_round.get(it["round"], ([], it["index"], 0))
                    seconds.append(it["seconds"])
                    by_round[it["round"]] = (seconds, first, it["index"])
            return by_round
        for b in self.calls.of_kind("timed"):
            if b.get("round") is not None:
                seconds, first, _ = by_round.get(b["round"], ([], b["first_index"], 0))
                seconds.extend(columns.to_seconds(b["ns"]))
                by_round[b["round"]] = (seconds, first, b["first_index"] + len(b["ns"]) - 1)
        return by_round

    def round_seconds(self) -> dict[int, list[float]]:
        """Round -> its timed steps' seconds, in order (what paired.by_round gives of the steps)."""
        return {number: seconds for number, (seconds, _, _) in self.steps_by_round().items()}

    def round_summaries(self) -> list[dict]:
        """Per round (a run in rounds), the variant's share: its place in the round's order,
        its timed steps' count and median, the first and last step's index."""
        by_round = self.steps_by_round()
        out = []
        for number in sorted(set(by_round) | set(self.round_positions)):
            seconds, first, last = by_round.get(number, ([], None, None))
            s = stats.summarize(seconds)
            load = self.round_load.get(number)
            out.append({"round": number, "position": self.round_positions.get(number),
                        "n": s["n"], "median": s["median"] if s["n"] else None,
                        "others_cpu_percent": round(load[0] / load[1], 1) if load and load[1] else None,
                        "first_index": first, "last_index": last,
                        "finished": self.round_finished is not None and number <= self.round_finished})
        return out

    def to_dict(self) -> dict:
        s = self.stats()
        kept, note = self.kept_calls()
        return {"name": self.name, "spec": self.spec, **self.coupling, "status": self.status,
                "verdict": self.said_verdict, "error": self.error, "error_kind": self.error_kind,
                "load_seconds": self.load_seconds, "model": self.model,
                "iterations": kept.document(),
                **({"iterations_kept": note} if note else {}),
                "stats": {k: s[k] for k in ("n", "min", "median", "mean", "max", "stddev", "iqr")},
                "noisy": s["noisy"],
                "phases": {name: dict(s) for name, s in self.phases().items()},
                "warnings": self.warnings(),
                "checks_passed": self.all_passed(),
                "diagnostics": self.diagnostics,
                **({"compile": self.compile} if self.compile is not None else {}),
                **({self.ranked_key: self.ranked_summary()} if self.calls.ranked else {}),
                **({"telemetry": self.telemetry.to_dict()} if self.telemetry is not None else {}),
                **({"ranks": self.ranks} if self.rank_info else {}),
                **({"rounds": self.round_summaries()} if self.round_positions else {}),
                **self.summary}


class ResultsBuilder:
    """Feed it every event (`on_event`); `document()` is results.json at that moment."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.variants: dict[str, VariantResult] = {}
        self.environment: dict = {}
        self.started = None
        self.extra: dict = {}
        #: a run in rounds: {"rounds", "seed", "orders", "baseline"} (rounds_planned)
        self.rounds: dict | None = None
        #: the variant whose ending event came last (a run in rounds ends them in any order)
        self.last_ended: str | None = None
        self._pairs: dict = {}   # paired ratios, by the two variants and their call counts
        #: a run in rounds: the variants in the run's own order (the first round's is shuffled)
        self.order: list[str] = []
        self._traces: dict[str, list[str]] = {}   # variant -> trace files, run-relative

    def in_order(self) -> list[VariantResult]:
        """The variants in the run's order (a run in rounds met them in its first round's)."""
        rank = {name: i for i, name in enumerate(self.order)}
        return sorted(self.variants.values(), key=lambda v: rank.get(v.name, len(rank)))

    def put_in_order(self, names: list[str]) -> None:
        """Keep the variants in the order of `names`, any other after them as they came
        (the app's compare of several runs: each run's own order, run after run)."""
        self.order = list(names)
        self.variants = {v.name: v for v in self.in_order()}

    def variant(self, name: str) -> VariantResult:
        if name not in self.variants:
            self.variants[name] = VariantResult(name)
            if self.order:   # kept in the run's order, whichever variant a round began with
                self.variants = {v.name: v for v in self.in_order()}
        return self.variants[name]

    def on_event(self, ev: dict) -> None:
        ev = events.typed(ev)
        kind, name = ev.event, ev.variant
        if kind == "run_started":
            v = self.variant(name)
            v.spec, v.environment = ev["spec"], ev.environment   # the spec as written
            v.coupling = {k: ev[k] for k in ("coupling", "label_parts") if k in ev}
            self.environment = self.environment or ev.environment
            self.started = self.started or ev.t
        elif kind == "model_loaded":
            v = self.variant(name)
            v.load_seconds = ev.seconds
            v.model = {k: ev[k] for k in ("size", "dtype", "tolerance", "inputs", "outputs", "torchscript",
                                          "training")
                       if k in ev}
        elif kind in ("iterations", "iteration"):   # kept in columns, as they come
            v = self.variant(name)
            v.calls.add(ev, v.round)
        elif kind == "rounds_planned":
            self.rounds = {"rounds": ev.rounds, "seed": ev.seed, "orders": ev.orders,
                           "baseline": ev.baseline}
            self.order = list(ev.variants)
        elif kind == "round_started":
            v = self.variant(name)
            v.round = ev.round
            v.round_positions[ev.round] = ev.position
        elif kind == "round_finished":
            self.variant(name).round_finished = ev.round
        elif kind == "model_compiled":
            self.variant(name).compile = {k: ev[k] for k in ("status", "seconds", "compiler",
                                                              "export_seconds", "package") if k in ev}
        elif kind == "variant_finished":
            v = self.variant(name)
            v.status = "finished"
            self.last_ended = name
            # a copy: later events (trace_written) refine it, and the event itself is shared
            # with every other listener, which must see it as the worker wrote it
            v.summary.update(copy.deepcopy(ev.summary or {}))
        elif kind == "variant_failed":
            v = self.variant(name)
            v.status = "interrupted" if ev.kind == "interrupted" else "failed"
            self.last_ended = name
            v.error, v.error_kind = ev.reason, ev.kind
        elif kind == "rank_info" and name:
            self.variant(name).rank_info[ev.rank] = rank_stats.placement(ev)
        elif kind == "diagnostic" and name:
            self.variant(name).diagnostics.append({k: ev[k] for k in ("check", "level", "message", "setting")
                                                   if k in ev})
        elif kind == "trace_written" and ev.relative_path:
            # where the parent moved the worker's trace: the worker's own list named only
            # the files in its staging directory
            files = self._traces.setdefault(name, [])
            files.append(ev.relative_path)
            profile = self.variant(name).summary.setdefault("profile", {})
            profile["trace_dir"] = os.path.dirname(ev.relative_path)
            profile["trace_files"] = list(files)
        elif kind == "host_build" and name and ev.status != "building":
            self.variant(name).summary["host_build"] = {
                "status": ev.status, "directory": ev.directory,
                "compile_seconds": ev.get("seconds", 0.0),
                **({"host": ev.host} if ev.host else {}), **({"library": ev.library} if ev.library else {})}
        elif kind == "telemetry" and name:
            from couplescope.results.telemetry import record_sample

            v = self.variant(name)
            record_sample(v, ev)
            if v.round is not None and not ev.node:
                v.note_round_load(ev.sample)

    def comparison(self) -> list[dict]:
        """Median, IQR, ratio to the fastest and coupling overhead (call minus forward)."""
        rows = []
        for v in self.in_order():
            s = v.stats()
            if not s["n"]:
                continue
            phases = v.phases()
            forward = phases.get("forward", {}).get("median")
            training = v.training
            row = {"name": v.name, "median": s["median"], "iqr": s["iqr"],
                   "forward": forward,
                   "overhead": (s["median"] - forward) if forward is not None and not training else None,
                   "verdict": v.said_verdict, "passed": v.verdict == "passed", "n": s["n"],
                   "compile_status": (v.compile or {}).get("status"),
                   "compile_seconds": (v.compile or {}).get("seconds")}
            if training:   # a step: what backward costs, and where the loss ended
                row.update(task="train", backward=phases.get("backward", {}).get("median"),
                           last_loss=v.last_loss())
            rows.append(row)
        fastest = min((r["median"] for r in rows), default=None)
        for r in rows:
            r["ratio"] = r["median"] / fastest if fastest else None
        if self.rounds is not None and rows:
            from couplescope.results import paired

            paired.pair_rows(rows, self.variants, self.rounds.get("baseline"), self._pairs)
        return rows

    def document(self) -> dict:
        comparison = self.comparison()
        rounds = {}
        if self.rounds is not None:
            from couplescope.results import noise

            rounds = {"rounds": {**self.rounds, "noise": noise.verdict(self, comparison)}}
        return {"schema": SCHEMA_VERSION, "title": self.title, "environment": self.environment,
                **rounds, "variants": [v.to_dict() for v in self.in_order()],
                "comparison": comparison, **self.extra}

    def document_text(self) -> str:
        """document() as results.json holds it (document_text.readable_json)."""
        return readable_json(self.document())

    def outcomes(self) -> set[str]:
        """What the variants came to, for the exit code (protocol.contract.exit_code): their
        verdicts, "stopped" for one a signal or the user ended, "lost" for one whose job lost
        a node, "usage" for one that found bad input in its worker."""
        found = {v.verdict for v in self.variants.values()}
        if any(v.status == "interrupted" for v in self.variants.values()):
            found.add("stopped")
        if any(v.error_kind == "lost" for v in self.variants.values()):
            found.add("lost")
        if any(v.error_kind == "usage" for v in self.variants.values()):
            found.add("usage")
        return found

    def exit_code(self) -> int:
        """The results' own code (130 a variant was stopped, 4 a node of its job was lost, 2
        one found bad input in the worker, 1 one failed a check or broke, else 0); a signal's and a write failure's are
        the pipeline's (core.pipeline.Outcome), all decided by protocol.contract.exit_code."""
        return exit_code(outcomes=self.outcomes())
