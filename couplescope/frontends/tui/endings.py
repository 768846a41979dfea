"""How the app ends on a signal: SIGTERM (a batch time limit, kill) or SIGHUP (the
terminal closed) saves every run not yet exported and exits 128 + the signal's number;
so does ctrl+c (the app's key for SIGINT: action_interrupt) when it stops a run going: 130.

A part of the app (CoupleScopeApp inherits it): it reads the app's runs, options and
farewell lines, and stops runs through the app's own `stop_session`.
"""

from __future__ import annotations

import os
import signal
import textwrap

from textual.css.query import NoMatches

from couplescope.export.run_dir import DEFAULT_PARENT
from couplescope.protocol import scratch
from couplescope.protocol.contract import exit_code
from couplescope.protocol.errors import UsageError


def signal_name(signum) -> str:
    """SIGTERM, SIGHUP; ctrl+c for SIGINT (the app's key: the terminal sends no signal)."""
    return "ctrl+c" if signum == signal.SIGINT else signal.Signals(signum).name


#: the closing lines' width: printed after the app has left the screen, a longer line is
#: wrapped by the terminal, a run's directory cut mid-name (a double-click copied half)
CLOSING_WIDTH = 80


def closing_lines(text: str, width: int = CLOSING_WIDTH) -> list[str]:
    """`text` as lines of at most `width` columns, broken at spaces only: a word (a path)
    longer than that stays whole on a line of its own."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def saved_lines(name: str, path: str, missing: list[str] = ()) -> list[str]:
    """Where a run was saved as the app closes: the directory on a line of its own, whole
    (`couplescope: run #1 simplenet saved to /tmp/.../20261127-094409-simplenet` was wider
    than 80 columns, and the terminal wrapped the directory mid-name), then the files a
    full disk kept out of it."""
    return [*closing_lines(f"couplescope: run {name} saved to"), path,
            *(closing_lines(f"(no room for {', '.join(missing)})") if missing else [])]


#: the app's keys the footer offers, none of which acts while the app closes: the run is
#: being stopped and every run saved, a compare, help or the quit question opened then is
#: closed at once, and q or e do what the closing does (the eleventh walk: the footer offered
#: `c compare ? help q quit` for the 15 s ctrl+c took to save and close)
CLOSED_KEYS = frozenset({"run", "stop", "why_not", "export", "compare", "help", "quit"})


class SignalEndings:
    """The app's endings by signal (see the module docstring)."""

    def closing(self) -> bool:
        """Whether the app is closing: ctrl+c or a signal (its runs saved first), or q's
        yes stopping the run going; the top line says what it does till it has closed."""
        return self._ending is not None or self._quitting

    def end_on_signal(self, signum: int) -> None:
        """SIGTERM (a batch time limit, kill) or SIGHUP (the terminal closed): stop the run
        going, export every run not yet exported (the run in progress included: nothing
        is lost), and exit 128 + signum. A second signal while this happens changes nothing."""
        if self._ending is not None:
            return
        self._ending = signum
        self.exit_code = exit_code(signal=signum)
        self.back_to_the_views()
        self.refresh_bindings()   # the footer offers none of the keys closing stops (CLOSED_KEYS)
        if self.active is not None:
            self.begin_stop(signal_name(signum))   # its RunEnded finishes the job
        else:
            self._save_and_exit()

    def action_interrupt(self) -> None:
        """ctrl+c: what Ctrl-C does on the command line (an interrupted run exits 130, what it
        measured kept and exported): the run going stops, every run not exported is saved,
        and the app closes, 130 when a run was going, else 0. It exited 0 and lost them."""
        if self._ending is not None or self._quitting:
            return   # already ending: a second ctrl+c changes nothing
        if self.active is not None:
            self.end_on_signal(signal.SIGINT)   # its RunEnded saves the runs and closes the app
            return
        unsaved = [r for r in self.runs.values() if not r.export_path and r.measured()]
        if not unsaved:
            self.exit()
            return
        self._ending = signal.SIGINT
        self.save_then_close()

    def save_then_close(self) -> None:
        """Say so on the top line, then save every run not exported and close: the copies
        block the app for seconds, and it showed the stopped run's last progress (or words
        offering e and r) all that time."""
        unsaved = sum(1 for r in self.runs.values() if not r.export_path and r.measured())
        self.back_to_the_views()
        self.refresh_bindings()
        self.set_status(f"saving {unsaved} run(s) not exported, then closing ..." if unsaved else "closing ...")
        self.call_after_refresh(self._save_and_exit)   # the line drawn before the copies block

    def back_to_the_views(self) -> None:
        """Close the screens over the views (compare, help, the quit question), so the top
        line saying what the ending does is on the screen: ctrl+c on the compare screen
        left it there, its title over the top line, for the seconds the saving took."""
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def hang_up(self, signum, frame) -> None:
        """SIGHUP: the terminal is gone, and with it any way to draw or to tear the app
        down (Textual would block writing to it). So, right here in the signal handler:
        stop the run going, wait for it to report, export every run not yet exported,
        remove the temporary folder and leave with 129, without Textual."""
        if self._ending is not None:
            return
        self._ending = signum
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            for record in self.runs.values():
                if record.session is not None and not record.done.is_set():
                    record.session.stop()
                    record.done.wait(timeout=15)
            # a run whose session has not reported by then is saved as it stands: no
            # terminal is left to say anything, and what was measured must not be lost
            self._export_unsaved(unfinished=True)
        finally:
            scratch.remove()
            os._exit(exit_code(signal=signum))

    def _export_unsaved(self, unfinished: bool = False) -> None:
        """Export every run not exported yet (where `e` would: see closing_folder), noting
        where for the farewell lines. `unfinished` (a hang-up): a run whose session has not
        finished too, and a run that fails to export does not keep the others from it."""
        parent = self.closing_folder()
        empty = []   # runs that measured nothing: one line for them all, not an error each
        for record in self.runs.values():
            record.export_done.wait(timeout=120)   # an export on its thread (e) finishes first
            if record.export_path or not (record.done.is_set() or unfinished):
                continue
            if not (record.measured_by_its_session() if unfinished else record.measured()):
                empty.append(record.name)
                continue
            try:
                path = record.export(parent)
                self.farewell += saved_lines(record.name, path, record.export_missing)
            except (UsageError, OSError) as exc:
                self.farewell += closing_lines(f"couplescope: run {record.name} not saved: {exc}")
            except Exception as exc:   # noqa: BLE001 - only on a hang-up: nobody to show it to
                if not unfinished:
                    raise
                self.farewell += closing_lines(f"couplescope: run {record.name} not saved: "
                                               f"{type(exc).__name__}: {exc}")
        if empty:
            self.farewell += closing_lines(f"couplescope: {'runs' if len(empty) > 1 else 'run'} "
                                           f"{', '.join(empty)} measured nothing: not saved")

    def closing_folder(self) -> str:
        """The export field's folder, as `e` has it (ctrl+c saved to --export's folder only:
        one typed into the field was passed over), else ./couplescope-runs. A value the
        field refuses, or no form (the app not yet drawn), gives --export's, else
        ./couplescope-runs: the runs are saved all the same, and the farewell lines say where."""
        try:
            return self.export_folder()
        except (UsageError, NoMatches):
            return self.options.export or DEFAULT_PARENT

    def _save_and_exit(self) -> None:
        """Save every run not exported, then close with the exit code the ending set (130
        after ctrl+c stopped a run, 0 after one with none going: nothing was interrupted)."""
        self.farewell += closing_lines(f"couplescope: {signal_name(self._ending)}: the app closed")
        self._export_unsaved()
        self.exit(return_code=self.exit_code)

