"""Folding the headless output's sentences to the terminal that shows them.

A terminal wraps a line longer than itself wherever the edge falls, mid-word (the README's
first command printed 30 such lines at 80 columns: the comparison's legend, the notes, the
trace and telemetry lines). On a terminal, a sentence longer than the terminal is folded
between words instead, its following lines indented two spaces. Tables are left alone (a
line with two spaces in a row past its indent is a table's row: folding it would break its
columns; the comparison table is fitted before it is printed, fit_table.py), and so is output that goes to a file or a pipe: there each line stays whole, for
grep.
"""

from __future__ import annotations

import os
import re

from couplescope.frontends.cli.colors import RESET

ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: a number and its unit stay on one line (`238 MiB`, not `238` / `MiB`)
NUMBER = re.compile(r"^[\d.,]+$")
UNITS = {"ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "Hz", "cores", "core", "x"}


def words_of(text: str) -> list[str]:
    """`text`'s words, split at single spaces, a number kept with the unit after it."""
    words: list[str] = []
    for word in text.split(" "):
        unit = ANSI.sub("", word).rstrip(",;:)")
        if words and unit in UNITS and NUMBER.match(ANSI.sub("", words[-1]).rsplit(" ", 1)[-1]):
            words[-1] += " " + word
        else:
            words.append(word)
    return words


def terminal_width(stream) -> int | None:
    """The width of the terminal `stream` writes to; None when it is not a terminal (a
    file, a pipe, a test's StringIO)."""
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, OSError, ValueError):
        pass
    return None


def fold(line: str, width: int | None) -> str:
    """`line` (one line, painted or not) folded to `width` columns between words, a colour
    open at a fold closed at the line's end and opened again on the next; unchanged when it
    fits, when width is None, or when it is a table's row."""
    plain = ANSI.sub("", line)
    if width is None or len(plain) <= width or "  " in plain.strip():
        return line
    indent = len(line) - len(line.lstrip(" "))
    lines, current, used, colour, empty = [], line[:indent], indent, None, True
    for word in words_of(line[indent:]):
        seen = len(ANSI.sub("", word))
        if not empty and used + 1 + seen > width:   # fold before this word
            lines.append(current + (RESET if colour else ""))
            current, used, empty = (colour or "") + " " * (indent + 2), indent + 2, True
        if not empty:
            current, used = current + " ", used + 1
        current, used, empty = current + word, used + seen, False
        for code in ANSI.findall(word):
            colour = None if code == RESET else code
    lines.append(current)
    return "\n".join(lines)
