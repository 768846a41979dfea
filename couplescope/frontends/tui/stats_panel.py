"""The Watch view's statistics: the shown variant's status, its call counts, the timed
calls' median, IQR, min and max, and a training variant's loss and verdict.

Drawn from what the view's redraw hands it, once: the numbers are the redraw's, so the
panel never names calls the plot, the table and the progress bar of that redraw do not
show (laid out again at a new width, it kept the variant itself and counted its calls
anew: `10 010/10 010 steps` beside an 83% bar). Its lines are decided from the whole run
(`plan`), not from each variant's words, so its height stays through a run: a long
variant name put the counts on a second line and a short one back, and `n=10 000 timed`
pushed `noisy` to a line of its own, and the plot under it grew and shrank by a row. The
figures and `n=` share a line wherever the words shown fit it (decided for the widest
figures a run could have, `n=3 000 timed` took a row of its own beside 50 columns of
figures at 80: the fourteenth walk); the panel never gets shorter within a run, so a
break they need later costs the plot a row once, never one back and forth.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual.widgets import Static

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.notes import training_verdict
from couplescope.frontends.tui.watch_widgets import KIND_LEGEND, calls_done
from couplescope.frontends.tui.top_line import NO_RUN_WORDS
from couplescope.frontends.tui.whole_numbers import wrapped
from couplescope.protocol.step_words import NOT_JUDGED


def call_counts(variant, spec: dict | None = None) -> str:
    """"204/204 calls = 200 timed + 1 warm-up + 3 profiled": every call is checked, only
    the timed ones are in the statistics (n=), so the two totals must not look alike. A
    training variant's are steps: "10 010/10 010 steps = 10 000 timed + 10 warm-up".
    `spec`: the variant's as the run asked for it, until its own arrives (a run in rounds
    names a variant at its round's start, before its worker reports: "0/? calls" of a
    training variant)."""
    spec = variant.spec or spec or {}
    training = variant.training or spec.get("task") == "train"
    return counts_words(calls_done(variant), spec, training)


def counts_words(done: dict[str, int], spec: dict, training: bool) -> str:
    """call_counts's words for the calls `done` (by kind) of a variant of `spec`."""
    expected = {"timed": spec.get("iterations"), "warmup": spec.get("warmup"),
                "profiled": spec.get("profile_iterations")}
    parts = [f"{fmt.thousands(done['timed'])} timed"] + [
        f"{fmt.thousands(done[kind])} {KIND_LEGEND[kind]}" for kind in ("warmup", "profiled")
        if done[kind] or expected[kind]]
    total = sum(done.values())
    planned = sum(v or 0 for v in expected.values()) if expected["timed"] else None
    unit = "steps" if training else "calls"
    return f"{fmt.thousands(total)}/{fmt.thousands(planned) if planned else '?'} {unit} = " + " + ".join(parts)


def widest_words(record) -> tuple[int, int, str]:
    """The widest the run's variants can make the panel's pieces, in columns: the head
    (the longest name, `stopping` or a training run's `not judged`, every call checked, the
    last round) and the counts (every call made); and a training run's widest loss line
    (its lines are counted at the panel's width)."""
    from couplescope import backends

    rounds = getattr(record.request, "rounds", None) or 1
    head = counts = timed = warmup = profiled = 0
    for spec in record.specs:
        asked = spec.to_dict()
        planned = {"timed": spec.iterations or 0, "warmup": spec.warmup or 0,
                   "profiled": spec.profile_iterations or 0}
        total = fmt.thousands(sum(planned.values()))
        status = NOT_JUDGED if spec.task == "train" else "stopping"   # (the widest status word)
        processes = backends.get(spec.backend).launcher(spec).processes(spec)   # (an MPI job's ranks)
        ranks = f" on {processes} ranks" if processes > 1 else ""
        head = max(head, len(f"{spec.label} {status}  {total} checks passed{ranks}")
                   + (len(f"  round {rounds}") if rounds > 1 else 0))
        counts = max(counts, len(counts_words(planned, asked, spec.task == "train")))
        timed, warmup = max(timed, planned["timed"]), max(warmup, planned["warmup"])
        profiled = max(profiled, planned["profiled"])
    loss = fmt.sci(-1.0)   # -1.0000E+00: the widest a loss is written
    losses = (f"loss {loss} at the first step, {loss} at the last "
              f"({fmt.made_words(timed, warmup, 'steps', profiled)})"
              if any(spec.task == "train" for spec in record.specs) else "")
    return head, counts, losses


class StatsPanel(Static):
    """Running statistics of the timed iterations of the current variant; for a training
    variant its loss and, once it ends, whether it learnt its task.

    The status and the counts on one line where the run's widest of them fit, else the
    counts on a line of their own (80 columns); the figures and `n=` on one line where
    the ones shown fit. Within
    a run the panel never gets shorter (a training variant's loss line, a verdict). Before
    a variant has reported, what is happening (`waiting`), never "no run yet" while a run
    is going.
    """

    _parts: tuple | None = None   # (head, counts, figures, n=, the rest) as the last show made them
    _waiting: str = NO_RUN_WORDS[True]   # before any run (WatchView.form_changed says more)
    _widest: tuple = (0, 0, "")    # widest_words of the run shown
    _most = 0                      # the lines it has had in this run (at this width)
    _width = 0                     # the width they were laid out in

    def plan(self, record) -> None:
        """A run starts: its lines are decided from its widest words."""
        self._widest, self._most = widest_words(record), 0
        self.styles.min_height = None

    def on_resize(self) -> None:
        """Laid out again at another width (its own height changing is no reason: that
        is what its min-height asks for)."""
        if self.content_size.width != self._width:
            self._most = 0   # another width: other lines
            self._lay_out()

    def waiting(self, text: str) -> None:
        """What to say until a variant reports (a run starting: its worker, its model)."""
        self._waiting = text
        self.show(None, None)

    def show(self, variant, expected: int | None, spec: dict | None = None, stopping: bool = False) -> None:
        """`spec`: the variant's as the run asked for it (call_counts); `stopping`: its run
        is being stopped (`s`), so a variant still running says "stopping", not "running".
        Its words are made here, from the variant as it is now; a new width lays out the
        same words (`_lay_out`)."""
        self._parts = None if variant is None else self._words(variant, spec, stopping)
        self._lay_out()

    def _words(self, variant, spec: dict | None, stopping: bool) -> tuple:
        s = variant.stats()
        done = variant.calls.count
        failed = variant.failed_checks()
        # the verdict (the headless table's word), then what the checks so far say
        verdict = variant.verdict
        status = {"passed": "[green]PASSED[/]", "failed": "[red]FAILED[/]", "error": "[red]ERROR[/]",
                  "stopped": "[yellow]STOPPED[/]"}.get(verdict, verdict)
        if verdict == "passed" and variant.learning_not_judged():   # as History and compare say
            status = f"[yellow]{NOT_JUDGED}[/]"   # (it said PASSED beside their not judged)
        if stopping and verdict == "running":
            status = "[yellow]stopping[/]"
        checks = (f"[red]{fmt.thousands(failed)} of {fmt.thousands(done)} checks FAILED[/]" if failed else
                  "1 check passed" if done == 1 else   # (it read `1 checks passed`)
                  f"{fmt.thousands(done)} checks passed" if done else "no checks yet")
        if done and len(variant.rank_info) > 1:   # every rank checks each call (616 beside 308/308 calls)
            checks += f" on {len(variant.rank_info)} ranks"
        head = f"[b]{escape(variant.name)}[/] {status}  {checks}"
        if verdict == "stopped" and not done:   # its statistics, counts and loss would all be empty
            return (f"[b]{escape(variant.name)}[/] {status}  nothing measured",)
        rounds = variant.round_positions and max(variant.round_positions)
        if rounds and variant.status == "running":   # a run in rounds: where it is
            head += f"  round {variant.round}"
        figures = (f"median [b]{fmt.seconds(s['median'])}[/]  IQR {fmt.seconds(s['iqr'])}  "
                   f"min {fmt.seconds(s['min'])}  max {fmt.seconds(s['max'])}")
        count = f"n={fmt.thousands(s['n'])} timed" + ("  [yellow]noisy[/]" if s["noisy"] else "")
        rest = training_text(variant) if variant.training or (spec or {}).get("task") == "train" else ""
        return head, call_counts(variant, spec), figures, count, rest

    def _lay_out(self) -> None:
        self._width = self.content_size.width
        width = self._width or self.app.size.width - 2   # (before its first layout: its padding's)
        if self._parts is None:
            text = self._waiting
        elif len(self._parts) == 1:
            text = self._parts[0]
        else:
            text = self._lines(*self._parts, width)
            losses = self._widest[2]
            if losses:   # a training run's loss line as wide as it gets: its lines kept from the first step
                planned = wrapped(self._lines(*self._parts[:4], losses, width), width)
                self._most = max(self._most, planned.plain.count("\n") + 1)
        shown = wrapped(text, width)   # (lines made here: Textual broke `10 000` at its space)
        self._most = max(self._most, shown.plain.count("\n") + 1)
        if self._parts is not None:    # a run's: it keeps its height
            self.styles.min_height = self._most
        self.update(shown)

    def _lines(self, head: str, counts: str, figures: str, count: str, rest: str, width: int) -> str:
        """The pieces on their lines: the status and the counts where the run's widest of
        them (or these, wider still) fit one line; the figures and `n=` where these do."""
        widest = [max(w, len(Text.from_markup(p))) for w, p in zip(self._widest[:2], (head, counts))]
        after_head = "  " if widest[0] + 2 + widest[1] <= width else "\n"
        shown = len(Text.from_markup(figures)) + 2 + len(Text.from_markup(count))
        after_figures = "  " if shown <= width else "\n"
        return f"{head}{after_head}{counts}\n{figures}{after_figures}{count}" + (f"\n{rest}" if rest else "")


def training_text(variant) -> str:
    """A training variant's loss, first and latest, and once it has ended its task's
    verdict: `[training] PASSED shift by one place: input 1..5 gives [5. 1. 2. 3. 4.]; ...`
    (the learned output, in the words of the model's learning task)."""
    # every step trains the model, the profiled ones too: the last loss is the last step's
    steps = [it for it in variant.iterations if it.get("loss") is not None]
    training = variant.summary.get("training") or {}
    done = calls_done(variant)   # a step once, not once per rank; as the line above counts them
    if steps:
        last = "at the last" if variant.status != "running" else "now"
        text = (f"loss [b]{fmt.sci(steps[0]['loss'])}[/] at the first step, [b]{fmt.sci(steps[-1]['loss'])}[/] "
                f"{last} ({fmt.made_words(done['timed'], done['warmup'], 'steps', done['profiled'])})")
    else:
        text = "loss: no step yet"
    word, verdict = training_verdict(training, done)
    if verdict:   # the verdict's word in its colour, the rest as the worker wrote it
        rest = verdict.removeprefix(f"[training] {word} " if word else "[training] ")
        color = "green" if word == "PASSED" else "red"
        text += "\n[b]\\[training][/] " + (f"[{color}]{word}[/] " if word else "") + escape(rest)
    return text
