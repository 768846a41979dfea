"""`escape` and the key read with it, as two keys: the terminal's bytes, read apart.

A terminal sends alt+KEY as ESC and KEY's bytes, so an `escape` typed just before a key and
read with it (`tmux send-keys Escape Tab`, a fast typist, ssh) is the same bytes as alt+KEY.
Textual's parser (XTermParser) reads them as one key, and for most keys not as alt+KEY but as
another key or as the key alone: ESC TAB is shift+tab (focus one field back, where escape then
tab goes to the tab bar and on to the first field), ESC ENTER is enter, ESC SPACE space, ESC
BACKSPACE ctrl+w, ESC f and ESC b ctrl+right and ctrl+left, ESC 1 `¡` (a Mac's option+1). The
app binds no alt key, so ESC and one key in one read are escape, then that key, whatever the
key; an arrow or another ESC after the ESC Textual already reads so. Not an ESC that starts a
sequence (`[`, `O`: the arrows, F-keys, the terminal's answers, pasted text; `]`, `P`, `_`:
the terminal's reports): those stay whole, and an ESC `[` typed is escape then `[` once
ESCAPE_DELAY finds nothing after it. (Word moves in a text field stay on ctrl+left and
ctrl+right; alt+backspace, read so, deletes one character after the escape has left the field.)

Textual builds its parser inside the Linux driver's input thread, by the driver module's name
XTermParser, with no hook to give it another: read_escape_apart() gives that name this one.
Key events from another driver (a Pilot test, Windows) keep alt+letter, which
key_order.escape_then_key splits the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual._xterm_parser import XTermParser   # (Textual's terminal parser: no public name)
from textual.drivers import linux_driver

ESC = "\x1b"

#: the bytes after an ESC that start a longer sequence: CSI and SS3 (keys, the terminal's
#: answers, bracketed paste), OSC, DCS and APC (its reports)
SEQUENCE_STARTS = frozenset("[O]P_")


class EscapeApartParser(XTermParser):
    """Textual's parser, with ESC and one key read together taken as escape, then the key."""

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        if alt:   # ESC and a character with no sequence after them (ESCAPE_DELAY passed)
            yield events.Key("escape", ESC)
            yield from super()._sequence_to_key_events(sequence)
        elif len(sequence) == 2 and sequence[0] == ESC and sequence[1] not in SEQUENCE_STARTS | {ESC}:
            yield events.Key("escape", ESC)
            yield from super()._sequence_to_key_events(sequence[1])
        else:
            yield from super()._sequence_to_key_events(sequence)


def read_escape_apart() -> None:
    """The Linux driver's input thread, started after this, reads with EscapeApartParser."""
    linux_driver.XTermParser = EscapeApartParser
