"""The app's top line: what the app does or did, a key's refusal over it, and a run's
progress under both.

A part of the app (CoupleScopeApp inherits it), as export_key.py and endings.py are: it
reads the run going (`active`) and writes the `#status` line of the main screen. Three
kinds of words share the line: what the app did (a run started, stopped, exported: said
at once, and lasting), a key's refusal (`say_why_not`: at once, and gone with the next
key or its toast), and what the run going says as it goes (`progress`: a variant
loading, measuring, its round), which never covers the other two.

Its words come in forms, the fullest first (`Words`: a run's title left out, a shorter
phrase): the line (StatusLine) says the first that fits its width, so at 80 columns a
long run name or a round's variant never wraps it (the eighth walk: stop answers and a
round's "building and loading the model" took two rows and pushed the tab bar's underline
out). Words no form of which fits (a user's long file name, an export's folder) take two
lines, never cut, and the tab bar stays whole under them: the view gives the row.
"""

from __future__ import annotations

from dataclasses import replace

from rich.cells import cell_len
from textual import events
from textual.css.query import NoMatches
from textual.widgets import Static, TabbedContent

from couplescope.frontends.tui import messages as m
from couplescope.frontends.tui.runs import NEXT_KEYS, RUNS_AGAIN

#: the top line before the first run: whether the form describes a run (the form says
#: which, FormChanged); with --model given it still said to pick one
HINTS = {False: "couplescope: pick a model or a preset, then press r",
         True: "couplescope: r runs what the line beside Run (at the bottom) says; ? help"}
#: the top line before the first run with --replay: r plays the recording, whatever the form says
REPLAY_HINT = "couplescope: r plays the recorded run back (--replay); ? help"
#: r's refusal in a line too narrow for its reason: the Run line says it whole
WHY_NOT = "r will not run: Pick's Run line (p) says why"
#: the form's reason when nothing is picked (PickForm.build): HINTS[False] says what to do
NOTHING_PICKED = "nothing to run: "
#: what Watch and History say before the first run, as `r` would answer: the form runs,
#: nothing is picked, or the form's value is refused (Watch said "r runs what Pick (p)
#: shows" while r answered "cannot run: nothing to run: pick a model or a preset")
NO_RUN_WORDS = {True: "no run yet: r runs what Pick (p) shows",
                False: "no run yet: pick a model or a preset in Pick (p), then press r"}


def first_words(options, recording=None) -> str:
    """The top line's first words, before the form has said whether it runs (FormChanged):
    what the command line gave (a --preset start read `pick a model or a preset` for 5-10 s
    under load while the form showed the preset, the tenth walk)."""
    if recording is not None:
        return REPLAY_HINT
    return HINTS[bool(options is not None and (options.preset or options.model))]


def no_run_words(runnable: bool, reason: str | None) -> str:
    """Watch's and History's words before the first run (NO_RUN_WORDS), or r's reason."""
    if runnable or not reason or reason.startswith(NOTHING_PICKED):
        return NO_RUN_WORDS[runnable]
    return f"no run yet: r will not run: {reason}"

#: what the top line is given: one text, or its forms, the fullest first
Words = str | tuple[str, ...]


def forms(words: Words) -> tuple[str, ...]:
    return (words,) if isinstance(words, str) else tuple(words)


def fitting(words: Words, width: int) -> str:
    """The first form of `words` that fits `width` columns; the last (shortest) when none does."""
    said = forms(words)
    return next((text for text in said if cell_len(text) <= width), said[-1])


def with_r_refused(shown: list[str], refused: str) -> list[str]:
    """An ended run's words (`shown`, its forms) while r will not run the form: each form
    says why in place of "r runs again" (it promised a run r refused), then, too narrow for
    the reason, the Run line pointed to (WHY_NOT), without the keys the footer offers, and
    last without what came between the run's state and r (`run #1 finished: e exports, c
    compares, r will not run: Pick's Run line (p) says why` took two rows at 80 columns,
    the eleventh walk, and the form below lost its last row)."""
    why, last = f"r will not run: {refused}", shown[-1]
    said = [*(words.replace(RUNS_AGAIN, why) for words in shown)]
    for keys, because in ((NEXT_KEYS, why), (NEXT_KEYS, WHY_NOT), (RUNS_AGAIN, WHY_NOT)):
        said += [words.replace(keys, because) for words in shown if keys in words]
    if RUNS_AGAIN in last and ": " in last:   # `run #12 stopped by you (ctrl+c): r will not run: ...`
        said.append(f"{last.split(': ', 1)[0]}: {WHY_NOT}")
    return said


def runs_other(title: str) -> tuple[str, ...]:
    """What r runs, in place of "r runs again", while the form describes another run than
    the last: its title (the footer offers `r run`), else where to read it."""
    return (f"r runs {title}, as Pick (p) shows", "r runs what Pick (p) shows")


def with_r_other(shown: list[str], title: str) -> list[str]:
    """An ended run's words (`shown`, its forms) while the form describes another run:
    each form says what r runs in place of "r runs again" (after another preset was picked
    it promised the last run again, and r ran the preset: the fourteenth walk), then each
    with the shorter words."""
    return [words.replace(RUNS_AGAIN, what) for what in runs_other(title) for words in shown]


def with_r_said(shown: list[str], texts: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Words that say nothing of r (an export's: `#1 simplenet exported to ...` and its
    `where`, `shown`; `texts` without it) with "r runs again" after them, then without
    their `where`; and, apart, the run alone with it (`run #1: r runs again`), the last
    resort: for with_r_refused and with_r_other to say what r does (the export's words
    stayed through every change of the form, the fifteenth walk)."""
    last = texts[-1]
    run = last.split(": ", 1)[0] if ": " in last else " ".join(last.split()[:2])
    return ([f"{words}; {RUNS_AGAIN}" for words in shown] + [f"{words}; {RUNS_AGAIN}" for words in texts],
            [f"{run}: {RUNS_AGAIN}"])


def same_run(request, other) -> bool:
    """Whether two runs' requests run the same (where `e` writes them aside)."""
    return replace(request, export=None) == replace(other, export=None)


class StatusLine(Static):
    """The top line: the first of its words' forms that fits its width, chosen again when
    the terminal's width changes."""

    _words: tuple[str, ...] = ("",)
    _shown: str | None = None

    def say(self, words: Words) -> None:
        self._words = forms(words)
        self._shown = fitting(self._words, self._room())
        self.update(self._shown)

    def _room(self) -> int:
        """Its width inside its padding (before its first layout: the screen's, less that)."""
        return self.size.width or max(1, self.app.size.width - self.styles.gutter.width)

    def on_resize(self) -> None:
        text = fitting(self._words, self._room())
        if self._shown is not None and text != self._shown:   # (before `say`: its first words)
            self._shown = text
            self.update(text)


class TopLine:
    """The top line's words (see the module docstring)."""

    #: what the top line says (under a refusal too): the app sets its first words
    _status = ""
    #: words after the status pointing to History (" (where, and its command: h)"), said
    #: only while History is not on the screen
    _where = ""
    #: a key's refusal (or answer) on the top line, till the next key acts or its toast goes
    _refusal: Words | None = None
    #: the form's note (say_form_note) among the refusals: the form's change keeps it
    _form_note: Words | None = None
    _refusals = 0   # how many were said: whether a key said one of its own
    _refusal_timer = None
    #: the refusals said in toasts: they go when the screen or the view changes
    _refusal_toasts: set = set()
    #: what the form said of r last (FormChanged): whether it runs, and if not, why
    _form_runs: tuple[bool, str | None] = (True, None)
    #: the run the form describes (FormChanged), while r runs it
    _form_request = None

    def say_why_not(self, text: Words, severity: str = "warning", timeout: float | None = None,
                    toast: bool = True) -> None:
        """A key that cannot act now says why at once: on the top line (always on the
        screen, wherever the focus is) and in a toast (`toast`: an answer that a toast would
        hide, "already exported", goes the same way on the top line alone). The top line
        keeps it till the next key acts (any key: "already exported" stayed through p,
        escape, tab and a preset chosen) or its toast goes; what a run going says of its
        progress meanwhile waits (a round of a fast model took `e`'s refusal off at once),
        and the latest of it shows then. The toast says its fullest form (`text`: Words)."""
        timeout = self.NOTIFICATION_TIMEOUT if timeout is None else timeout
        self._refusal = text
        self._refusals += 1
        self._show_status(text)
        if toast and not self.history_shows_a_path():
            fullest = forms(text)[0]
            self._refusal_toasts = self._refusal_toasts | {fullest}
            self.notify(fullest, severity=severity, timeout=timeout)
        if self._refusal_timer is not None:
            self._refusal_timer.stop()
        self._refusal_timer = self.set_timer(timeout, self.refusal_gone)

    def refusal_gone(self) -> None:
        """The top line back to what it said under the refusal (or said since)."""
        if self._refusal is not None:
            self._refusal = None
            self._show_status(self._status, self._where)

    async def on_event(self, event) -> None:
        """A key, whatever takes it (a field, a list, the tab bar): the refusal it follows is
        no news once the key has acted, unless the key said something of its own."""
        said = self._refusals
        await super().on_event(event)
        if isinstance(event, events.Key) and self._refusals == said and not self.key_waits(event):
            self.refusal_gone()   # (a key held till the keys before it land acts later: key_order)

    def set_status(self, text: Words, progress: bool = False, where: Words = "") -> None:
        """The top line: what the app does or did, in its forms, the fullest first (`where`:
        words pointing to History, in forms too, said
        while it is not on the screen). `progress`: what the run going says as
        it goes (a variant loading or measuring, its round, a build). Progress waits under
        a refusal, and is not said once the run is being stopped: events its workers sent
        before they ended arrive after `s` (a variant's "building and loading the model"
        read for seconds after `s`, over "stopping"), and stopping is said till it is done."""
        if progress and (self.active is None or self.active.stopping):
            return
        self._status, self._where = text, where
        if progress and self._refusal is not None:
            return
        self._refusal = None
        self._show_status(text, where)

    def say_stop_progress(self, words: Words) -> None:
        """The stop of the run going, as far as it has gone (a worker ended): said at once, as
        set_status says it, but under a key's answer it waits, as a run's progress does:
        `s` again during a stop said `still stopping` and the next worker's end took it off
        at once, on a busy machine before it was drawn (the fourteenth walk: `s` said nothing)."""
        self._status, self._where = words, ""
        if self._refusal is None:
            self._show_status(words)

    def history_shown(self) -> bool:
        """Whether History is on the screen (what `where` points to)."""
        return bool(self.screen_stack) and self.screen is self.main and self.main.query_one("#tabs", TabbedContent).active == "history"

    def history_shows_a_path(self) -> bool:
        """Whether History is on the screen with an exported run's path and command under
        its table, where a toast sits (a refusal's covered half the command for 5 s: the
        top line says it all the same)."""
        picked = self.picked() if self.history_shown() else None
        return bool(picked and picked.export_path)

    def drop_refusal_toasts(self) -> None:
        """The toasts of refusals said on the screen or view left: they were about a key
        pressed there, the top line has moved on with the next key, and on History they
        covered the export's path and command. (Textual has no public way to take one
        toast off: its own _unnotify, as its toasts' timers do.)"""
        if not self._refusal_toasts:
            return
        for notification in list(self._notifications):
            if notification.message in self._refusal_toasts:
                self._unnotify(notification, refresh=False)
        self._refusal_toasts = set()
        self._refresh_notifications()

    def show_where(self) -> None:
        """The status again, with or without its `where`, as History shows or not: "(where,
        and its command: h)" stayed after compare's esc back to History."""
        if self._where and self._refusal is None and self.screen_stack:
            self._show_status(self._status, self._where)

    def on_tabbed_content_tab_activated(self, event) -> None:
        self.drop_refusal_toasts()
        self.show_where()

    def pop_screen(self):
        done = super().pop_screen()
        self.drop_refusal_toasts()
        self.show_where()
        return done

    def push_screen(self, *args, **kwargs):
        self.drop_refusal_toasts()
        return super().push_screen(*args, **kwargs)

    def no_run_words(self) -> str:
        """What Watch and History say before the first run: what r would do now (with
        --replay: play the recording, whatever the form says)."""
        if self.recording:
            return "no run yet: r plays the recorded run back (--replay)"
        return no_run_words(*self._form_runs)

    def _r_refused(self) -> str | None:
        """Why r will not run the form now (None: it runs; a recording plays whatever the
        form says)."""
        runnable, reason = self._form_runs
        return None if runnable or self.recording else reason or "nothing to run"

    def _r_runs_other(self) -> bool:
        """Whether r runs another run than the last (the form changed since: another preset,
        another value); a recording plays whatever the form says."""
        if self.recording or not self.runs or self._form_request is None:
            return False
        last = self.runs[max(self.runs)].request
        return last is not None and not same_run(self._form_request, last)

    def _show_status(self, text: Words, where: Words = "") -> None:
        """The line's forms: each form of `text` with each of `where` (when said), in order."""
        wheres = forms(where) if where and not self.history_shown() else ("",)
        shown = [said + after for said in forms(text) for after in wheres]
        refused, alone = self._r_refused(), []
        if (self.active is None and self._refusal is None and self.runs and (refused or self._r_runs_other())
                and not any(RUNS_AGAIN in words for words in shown)):   # (a key's answer: as it is)
            shown, alone = with_r_said(shown, forms(text))
        if refused and self.active is None:
            shown = with_r_refused(shown + alone, refused)
        elif self.active is None and self._r_runs_other():
            shown = with_r_other(shown, self._form_request.title) + with_r_other(alone, self._form_request.title)
        try:
            status = self.main.query_one("#status", StatusLine)
        except NoMatches:   # the app closing: Watch's redraw timer ticked once its screen had gone
            return
        status.say(tuple(dict.fromkeys(shown)))

    @m.while_shown
    def on_form_changed(self, msg: m.FormChanged) -> None:
        """Before the first run, the top line says what `r` would do: run the form's run,
        or why it will not (the Run line's reason: with a model picked, a value the run
        refuses left the top line saying to pick one). A key that could not act says why,
        and the next change of the form replaces that. After a run, the ended run's words
        say why r will not run in place of "r runs again", or what it runs once the form
        describes another run (_show_status); before one, Watch
        and History say what r would do (no_run_words)."""
        self._form_runs, self._form_request = (msg.runnable, msg.reason), msg.request
        if self.runs:
            if self._refusal is None and self.active is None:
                self._show_status(self._status, self._where)
            return
        for view in self.views:
            view.form_changed()
        if self.recording:
            words = REPLAY_HINT
        elif msg.runnable or not msg.reason or msg.reason.startswith(NOTHING_PICKED):
            words = HINTS[msg.runnable]
        else:
            words = (f"couplescope: r will not run: {msg.reason}", f"r will not run: {msg.reason}", WHY_NOT)
        if self._refusal is not None and self._refusal == self._form_note:
            self._status = words   # said once the form's note goes (the change it follows made it)
        else:
            self.set_status(words)

    def say_form_note(self, words: Words) -> None:
        """What the form did that no key asked for (a preset picked cleared values typed),
        on the top line alone (a toast covered the Run line), through the form's change it
        follows (on_form_changed)."""
        self._form_note = words
        self.say_why_not(words, severity="information", toast=False, timeout=10)
