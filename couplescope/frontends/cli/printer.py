"""The headless front end: the reference suite's lines, statistics and a comparison table.

A timed iteration's check prints the reference's own line,
    PASSED :: [check iteration 1 (2.023 s)] maximum relative error = 0.0000E+00
(green/red on a terminal): a variant's first few, every one that failed, and a count of
the rest (check_lines.py; --verbose prints all). Then per variant min, median, mean, max
and stddev of the time taken and the sample size; after all variants, a comparison table. On a terminal a
status line on stderr shows progress while nothing else is printed (model loading, long
iterations); it is cleared before every printed line.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from couplescope.frontends import formatting as fmt
from couplescope.frontends.cli.check_lines import CheckLines
from couplescope.frontends.cli.colors import GREEN, RED, RESET, YELLOW
from couplescope.frontends.cli.comparison import comparison_table
from couplescope.frontends.cli.fold import fold, terminal_width
from couplescope.frontends.cli.ranks_report import report_lines
from couplescope.frontends.cli.step_lines import PER_RANK_LINES, StepLines
from couplescope.frontends.cli.trace_lines import format_lines
from couplescope.frontends.cli.training_lines import made_as, training_lines
from couplescope.protocol import events
from couplescope.protocol.listener import Listener
from couplescope.results import stats
from couplescope.results.labels import size_of


def use_color(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class Progress:
    """A one-line spinner with elapsed time on stderr, only on a terminal."""

    FRAMES = "|/-\\"

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.text = ""
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._shown = False
        self._stop = threading.Event()
        self._thread = None
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        i = 0
        while not self._stop.wait(0.2):
            i += 1
            # only after a couple of seconds: short runs stay free of flicker
            if time.monotonic() - self.started < 2.0 or not self.text:
                continue
            with self._lock:
                elapsed = time.monotonic() - self.started
                try:
                    self.stream.write(f"\r\033[K{self.FRAMES[i % 4]} {self.text} [{elapsed:.0f} s]")
                    self.stream.flush()
                except OSError:   # the terminal went away (SIGHUP): no more spinner
                    return
                self._shown = True

    def clear(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            try:
                self.clear()
            except OSError:
                pass


class HeadlessPrinter(Listener):
    def __init__(self, total_variants: int, out=None, err=None, quiet_iterations: bool = False,
                 verbose: bool = False, debug: bool = False) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.color = use_color(self.out)
        self.total = total_variants
        self.count = 0
        self.progress = Progress(self.err)
        self.quiet_iterations = quiet_iterations
        #: which timed checks print a line (the first few, failures; --verbose: all)
        self.checks = CheckLines(verbose=verbose, quiet=quiet_iterations)
        self.debug = debug   # --debug: a worker's traceback under its error
        self._expected = {}
        self._warm = {}
        self._profiled = {}
        self._started = None
        self._compiled = {}   # variant -> its model_compiled event, printed under its header
        self._specs: dict[str, dict] = {}   # variant -> its spec (from run_started)
        self._finished: set[str] = set()    # variants that ran to their end
        self._steps: dict[str, StepLines] = {}   # variant -> its steps, for a job of many ranks
        self._training: dict[str, dict] = {}   # --task train variants: model_loaded's training
        self._rounds: int | None = None      # a run in rounds: how many
        self._round: dict[str, int] = {}     # variant -> the round it measures now
        self.gone = False   # the terminal or pipe went away: nothing more is printed

    # -- output helpers ---------------------------------------------------------------
    def _paint(self, text: str, color: str) -> str:
        return f"{color}{text}{RESET}" if self.color else text

    def print(self, text: str = "", err: bool = False) -> None:
        """One line, folded between words on a terminal narrower than it (fold.py). A
        terminal that went away (SIGHUP: EIO) or a closed pipe ends the printing, not the
        run: the run directory still gets everything."""
        if self.gone:
            return
        with self.progress._lock:
            try:
                self.progress.clear()
                stream = self.err if err else self.out
                width = terminal_width(stream)
                if width is not None:
                    text = "\n".join(fold(line, width) for line in text.split("\n"))
                stream.write(text + "\n")
                stream.flush()
            except OSError:
                self.gone = True

    def _paint_words(self, line: str) -> str:
        for word, color in (("PASSED", GREEN), ("FAILED", RED)):
            if line.startswith(word):
                return self._paint(word, color) + line[len(word):]
        return line

    def status(self, text: str) -> None:
        self.progress.text = text

    # -- events -----------------------------------------------------------------------
    def on_event(self, ev: dict) -> None:
        handler = getattr(self, "_on_" + ev["event"], None)
        if handler:
            handler(events.typed(ev))

    def _on_run_started(self, ev: events.RunStarted):
        # The header waits for the model to load: bad input then prints one line only.
        self.count += 1
        self._started = ev
        self._specs[ev.variant] = ev["spec"]
        spec = ev.run_spec
        if compiles_on_load(spec):
            self.status(f"{ev.variant}: building, compiling (or finding the compiled model in the cache) "
                        "and loading the model")
        else:
            self.status(f"{ev.variant}: building and loading the model")

    def _on_model_compiled(self, ev: events.ModelCompiled):
        self._compiled[ev.variant] = ev   # printed under the header, which waits for the load

    def _print_header(self, ev: events.RunStarted):
        spec = ev.run_spec
        what = [ev.coupling or spec.backend, spec.device]
        if spec.layout != "fortran":
            what.append(f"layout {spec.layout}")
        # a training variant's steps as its loss line counts them (formatting.made_words)
        made = (fmt.made_words(spec.iterations, spec.warmup, "steps") if spec.task == "train"
                else f"{spec.warmup} warm-up + {spec.iterations} iterations")
        rounds = f" in {self._rounds} rounds" if self._rounds else ""
        self.print(f"== {ev.variant} ({self.count}/{self.total}): {spec.model}, {', '.join(what)}, "
                   f"{made}{rounds} ==")
        self._expected[ev.variant] = (spec.warmup, spec.iterations)

    def _running_next(self, variant: str, kind: str, index: int) -> None:
        """Status text for what runs now: the iteration after the one just reported."""
        warmup, timed = self._expected.get(variant, (0, 0))
        unit = "step" if variant in self._training else "iteration"
        where = f"round {self._round[variant]}/{self._rounds}, " if variant in self._round else ""
        if kind == "warmup" and index < warmup:
            self.status(f"{variant}: warm-up {index + 1}/{warmup}")
        elif kind in ("loaded", "warmup") or (kind == "timed" and index < timed):
            n = index + 1 if kind == "timed" else 1
            self.status(f"{variant}: {where}{unit} {n}/{timed}")
        else:
            self.status(f"{variant}: profiling and finishing")

    def _on_model_loaded(self, ev: events.ModelLoaded):
        if (ev.ranks or 0) > PER_RANK_LINES:
            self._steps[ev.variant] = StepLines(ev.ranks)
        if ev.training:
            self._training[ev.variant] = ev.training
        self._print_header(self._started)
        warmup = self._expected.get(ev.variant, (0, 0))[0]
        self._running_next(ev.variant, "warmup" if warmup else "loaded", 0)
        compiled = self._compiled.pop(ev.variant, None)
        if compiled is not None:
            self.print(fmt.compiled_line(compiled))
        shapes = ", ".join(f"{n} {tuple(s)}" for n, s in (ev.inputs or {}).items())
        self.print(f"model loaded in {fmt.seconds(ev.seconds)} (size {ev.size}, {ev.dtype}, "
                   f"inputs {shapes}, tolerance {ev.tolerance})")
        if ev.training:
            t = ev.training
            checked = ("no gradient check (a user's module: couplescope has no model of it)"
                       if t.get("gradient_tolerance") is None else
                       f"the first step checked against eager PyTorch within {t['gradient_tolerance']:g}")
            self.print(f"training: {t['task']}; {t['optimizer']}, learning rate {t['lr']:g}, "
                       f"{t['loss']} loss{made_as(t.get('train_call'))}; {checked}")

    def _on_iterations(self, ev: events.Iterations):
        """A batch of calls: a timed batch that all passed and has no line to print is
        only counted (the parent's work stays proportional to what is shown). A job of
        many ranks goes call by call: its lines are steps made of every rank's call."""
        if (ev.kind == "timed" and ev.variant not in self._steps and all(ev.passed)
                and self.checks.count_batch(ev.variant, len(ev.passed), ev.rank)):
            self._running_next(ev.variant, "timed", ev.last_index)
            return
        for call in ev.calls:
            self._on_iteration(call)

    def _on_iteration(self, ev: events.Iteration):
        v = ev.variant
        steps = self._steps.get(v)
        if steps is not None and ev.rank is not None and ev.kind != "profiled":
            self._on_rank_call(ev, steps)
            return
        if ev.kind == "timed":
            if self.checks.shows(v, ev.passed, ev.rank):
                self.print(self._check_line(ev))
            self._running_next(v, "timed", ev.index)
        elif ev.kind == "warmup":
            self._warm.setdefault(v, []).append(ev)
            if not ev.passed:
                self.print(f"warm-up {self._check_line(ev)}")
            self._running_next(v, "warmup", ev.index)
        else:
            self._profiled.setdefault(v, []).append(ev)
            self.status(f"{v}: profiling, iteration {ev.index + 1}")

    def _check_line(self, ev: events.Iteration) -> str:
        """A call's line: its check, or a training step's loss as example 11 logs it."""
        word = self._paint("PASSED", GREEN) if ev.passed else self._paint("FAILED", RED)
        where = f" on rank {ev.rank}" if ev.rank is not None else ""
        if ev.loss is not None:
            line = (f"{word} :: [training step {ev.index}{where} ({fmt.seconds(ev.seconds)})] "
                    f"loss = {fmt.sci(ev.loss)}")
        else:
            line = (f"{word} :: [check iteration {ev.index}{where} ({fmt.seconds(ev.seconds)})] "
                    f"maximum relative error = {fmt.sci(ev.max_rel_error)}")
        return line + (f" ({ev.error})" if ev.error else "")

    def _on_rank_call(self, ev: events.Iteration, steps: StepLines) -> None:
        """A call of one rank of many: its own line only when its check failed; the step's
        line once every rank has reported it."""
        v = ev.variant
        if not ev.passed:
            self.print(f"{'warm-up ' if ev.kind == 'warmup' else ''}{self._paint('FAILED', RED)} :: "
                       f"[check iteration {ev.index} on rank {ev.rank} ({fmt.seconds(ev.seconds)})] "
                       f"maximum relative error = {fmt.sci(ev.max_rel_error)}"
                       + (f" ({ev.error})" if ev.error else ""))
        if ev.kind == "warmup":
            self._warm.setdefault(v, []).append(ev)
        for kind, index, step in steps.add(ev):
            self._step_line(v, kind, index, step, steps.ranks)

    def _step_line(self, v: str, kind: str, index: int, step, ranks: int) -> None:
        if kind == "timed" and self.checks.shows(v, not step.failed):
            word = self._paint("PASSED", GREEN) if not step.failed else self._paint("FAILED", RED)
            who = f"{ranks} ranks" if step.count == ranks else f"{step.count} of {ranks} ranks"
            failed = f", {step.failed} failed" if step.failed else ""
            self.print(f"{word} :: [check iteration {index} on {who}{failed} (slowest: rank "
                       f"{step.slowest_rank}, {fmt.seconds(step.slowest)})] largest maximum relative "
                       f"error = {fmt.sci(step.max_error)}")
        self._running_next(v, kind, index)

    def _on_rounds_planned(self, ev: events.RoundsPlanned):
        self._rounds = ev.rounds
        self.print(f"interleaved: {ev.rounds} rounds; in each, every variant makes its share of the "
                   f"iterations, in an order shuffled per round (--order-seed {ev.seed} repeats it)")
        self.print()

    def _on_round_started(self, ev: events.RoundStarted):
        """A variant's next round: a line above its calls (its first round's is its header)."""
        v = ev.variant
        self._round[v] = ev.round
        if v in self._expected:
            unit = "steps" if v in self._training else "iterations"
            self.print(f"-- {v}: round {ev.round}/{ev.rounds}, {ev.iterations} {unit} --")
        self.status(f"{v}: round {ev.round}/{ev.rounds}")

    def _on_variant_finished(self, ev: events.VariantFinished):
        self._finished.add(ev.variant)

    def _on_variant_failed(self, ev: events.VariantFailed):
        if ev.kind == "interrupted":
            kept = ("what was measured is kept" if ev.variant in self._expected
                    else "before its model loaded; nothing measured")
            self.print(self._paint(f"{ev.variant}: interrupted; {kept}", YELLOW), err=True)
        elif ev.kind == "usage":
            self.print(f"couplescope: {ev.reason}", err=True)
        else:
            self.print(f"couplescope: {ev.variant}: {ev.reason}", err=True)
        if self.debug and ev.traceback:   # the worker's own, as --debug shows the parent's
            self.print(f"{ev.variant}: the worker's traceback (--debug):", err=True)
            for line in ev.traceback.rstrip("\n").split("\n"):
                self.print(line, err=True)

    #: how many of a worker's last printed lines the terminal shows (all are in events.jsonl
    #: and, exported, in <variant>.output.log)
    OUTPUT_LINES_SHOWN = 20

    def _on_worker_output(self, ev: events.WorkerOutput):
        """What the worker printed (a user module's print()s), on stderr, each line prefixed
        with the variant: it arrives when the worker has ended, after its measurements.
        Shown for a user's module, or a variant that did not finish (fmt.shows_output)."""
        v = ev.variant
        if not fmt.shows_output(self._specs.get(v), v in self._finished):
            return
        shown = ev.lines[-self.OUTPUT_LINES_SHOWN:]
        if ev.total > len(shown):
            self.print(f"{v}: the worker printed {ev.total} lines; the last {len(shown)}:", err=True)
        for line in shown:
            self.print(f"{v} | {line}", err=True)

    def _on_host_build(self, ev: events.HostBuild):
        what = "native host" if not ev.host else f"{ev.host} driver"
        if ev.status == "building":
            self.print(f"couplescope: {ev.message} ...", err=True)
            self.status(f"{ev.variant}: building the {what} (first use)")
        elif ev.status == "built":
            self.print(f"couplescope: {what} built in {fmt.seconds(ev.seconds)}; "
                       f"later runs reuse it from {ev.directory}", err=True)
        if ev.library and ev.status != "building":
            self.print(f"{ev.variant}: {fmt.library_line(ev.library)}")

    def _on_diagnostic(self, ev: events.Diagnostic):
        self.print(self._paint(f"warning: {ev.message}", YELLOW), err=True)

    def _on_log(self, ev: events.Log):
        # verbatim: lines shaped like a reference example's output (MPI's per-rank input/output)
        if ev.verbatim:
            self.print(ev.message)
        elif ev.variant:
            self.print(f"{ev.variant}: {ev.message}")
        else:   # the run's own (the export failing)
            self.print(f"couplescope: {ev.message}", err=True)

    def variant_done(self, builder) -> None:
        name = builder.last_ended or list(builder.variants)[-1]
        if name in self._round:   # a run in rounds: the variant's block follows its last calls
            status = builder.variants[name].status
            self.print(f"-- {name}: {ENDED.get(status, 'finished')} --")
        steps = self._steps.pop(name, None)
        for kind, index, step in steps.rest() if steps is not None else ():   # a job that ended early
            self._step_line(name, kind, index, step, steps.ranks)
        rest = self.checks.rest_line(name, "steps" if name in self._training else "checks")
        if rest:
            self.print(rest)
        v = builder.variants[name]
        if not v.calls.count:
            return
        s = v.stats()
        warm = self._warm.get(name, [])
        if warm:
            ok = all(w.passed for w in warm)
            self.print(f"warm-up: {len({w.index for w in warm})} iteration(s), first {fmt.seconds(warm[0].seconds)}, "
                       f"checks {'passed' if ok else 'FAILED'} (not in the statistics)")
        if s["n"]:
            for key in ("min", "median", "mean", "max", "stddev"):
                self.print(f"{key:<6} time taken (s): {fmt.sci(s[key])}")
            self.print(f"sample size: {s['n']}")
            phases = v.phases()   # kept by the builder: results.json and the table ask too
            if phases:
                self.print("median per phase: " + ", ".join(f"{k} {fmt.seconds(p['median'])}"
                                                          for k, p in phases.items()))
            for w in v.warnings():
                self.print(self._paint(f"note: {w}", YELLOW))
        self._print_profiled(name, v)
        for line in training_lines(v.summary.get("training"), v):
            self.print(self._paint_words(line))
        if v.calls.ranked:  # per-rank table, slowest rank, imbalance
            for line in report_lines(v.iterations, v.ranks, v.ranked_summary()):
                self.print(line)
        if getattr(v, "telemetry", None) is not None:
            from couplescope.results.telemetry import summary_line

            self.print(summary_line(v.telemetry))
        self.print()

    def _print_profiled(self, name: str, v) -> None:
        """The profiled iterations and their trace's figures, after the timings and said to
        be the profiler's: they run 10 to 50 times slower than the timed calls."""
        prof = self._profiled.get(name, [])
        if prof:
            self.print(f"profiled: {len({p.index for p in prof})} iteration(s) under torch.profiler, "
                       f"median {fmt.seconds(stats.summarize([p.seconds for p in prof])['median'])} "
                       "(not in the statistics: the profiler slows every call)")
        for line in format_lines(v.summary.get("trace_summary") or {}):
            self.print(line)

    def session_done(self, builder) -> None:
        self.progress.close()
        rows = builder.comparison()
        if len(rows) > 1 or (rows and len(builder.variants) == 1):
            sizes = {name: size_of({"spec": v.spec, "model": v.model}) for name, v in builder.variants.items()}
            not_judged = {name: v.summary["training"]["final_check"]["message"]
                          for name, v in builder.variants.items() if v.learning_not_judged()}
            self.print(comparison_table(rows, self._paint, sizes, not_judged, terminal_width(self.out)))
            from couplescope.results.phase_pairs import host_comparison

            by_host = host_comparison(rows, builder.variants)
            if by_host is not None:
                from couplescope.frontends.cli.host_phases import host_phase_table

                hosts = {n: (builder.variants[n].spec or {}).get("host") or "?" for n in by_host["names"]}
                self.print()
                self.print(host_phase_table(by_host, hosts))
        if builder.rounds is not None:
            from couplescope.results import noise

            found = noise.verdict(builder, rows)
            for line in found["unranked"]:
                self.print(f"note: {line}")
            if found["line"]:
                self.print(self._paint(f"noise: {found['line']}", YELLOW))

    def close(self) -> None:
        self.progress.close()


#: how a run in rounds' variant block begins, by how the variant ended (a stopped one said
#: "finished" right under "interrupted; what was measured is kept")
ENDED = {"interrupted": "stopped", "failed": "ended early"}


def compiles_on_load(spec) -> bool:
    """Whether the variant's first load compiles its model (the backend says; a recorded
    backend this installation does not know compiles nothing)."""
    from couplescope import backends
    from couplescope.protocol.errors import UsageError

    try:
        return backends.get(spec.backend).compiles_on_load(spec)
    except (UsageError, ImportError):
        return False
