"""The headless output on a terminal of 80 columns: its sentences folded between words.

The README's first command printed 30 lines longer than 80 columns (the comparison's legend,
the notes, the trace and telemetry lines), which a terminal wraps wherever its edge falls,
mid-word. A recorded run is replayed by the real command under a real pseudo-terminal of 80
columns, and read back: every sentence fits, no word is split or lost (the words are those of
the same replay into a pipe, where each line stays whole), and a line painted in one colour
keeps its colour on each of its folded lines."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from conftest import run_cli

from couplescope.frontends.cli.fold import fold

FIXTURES = Path(__file__).parent / "fixtures"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def on_a_terminal(*args: str, columns: int = 80) -> str:
    """`python -m couplescope ARGS` with its stdout on a pseudo-terminal `columns` wide (stderr
    a pipe); what it printed there, as read from the terminal's other end."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    proc = subprocess.Popen([sys.executable, "-m", "couplescope", *args], stdout=follower,
                            stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:   # EIO: the command closed the terminal's last writer
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("fixture", ["busy-rounds", "preset-train"])
def test_the_sentences_of_a_run_fold_between_words_on_an_80_column_terminal(fixture):
    shown = on_a_terminal("--replay", str(FIXTURES / f"{fixture}.jsonl"))
    piped = run_cli("--replay", FIXTURES / f"{fixture}.jsonl").stdout
    plain = ANSI.sub("", shown)
    sentences = [line for line in plain.splitlines() if "  " not in line.strip()]
    assert max(map(len, sentences)) <= 80, max(sentences, key=len)
    long = [line for line in piped.splitlines() if len(line) > 80 and "  " not in line.strip()]
    assert long, "the replay has no sentence longer than 80 columns: the test shows nothing"
    # nothing split or lost: the same words, in the same order (the table's are fitted)
    assert without_table(plain).split() == without_table(piped).split()
    # a note painted yellow is yellow on each of its lines
    notes = [line for line in shown.splitlines() if ANSI.sub("", line).startswith("note: noisy")]
    assert notes and all(line.startswith("\x1b[33m") for line in notes)
    following = shown.splitlines()[shown.splitlines().index(notes[0]) + 1]
    assert following.startswith("\x1b[33m  "), following


def without_table(text: str) -> str:
    """`text` less its comparison table and the line saying how the table was fitted."""
    lines = text.splitlines()
    table = comparison_rows(text)
    start = lines.index(table[0])
    end = start + len(table)
    if end < len(lines) and lines[end].startswith("("):
        while not lines[end].endswith(")"):
            end += 1
        end += 1
    return "\n".join(lines[:start] + lines[end:])


def test_a_table_row_and_a_piped_line_stay_whole():
    row = "stride-torchscript-256         1.699 s  547.8 ms  cannot rank  1.16–1.45  1.697 s"
    assert fold(row + " " * 3 + "2.54 ms  PASSED", 80) == row + " " * 3 + "2.54 ms  PASSED"
    sentence = "note: " + "word " * 30
    assert fold(sentence, None) == sentence
    assert fold(sentence, 40).split("\n")[1].startswith("  word")
    # a number stays with its unit: the replay's telemetry line split `238` from `MiB`
    telemetry = "telemetry: worker CPU mean 33% (timed 36%) peak 52% of one core, RSS peak 238 MiB, threads"
    assert fold(telemetry, 78).split("\n")[1] == "  238 MiB, threads"


def comparison_rows(text: str) -> list[str]:
    """The comparison table's lines: its header, rule, size headings and rows."""
    lines = ANSI.sub("", text).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("comparison ("))
    table = []
    for line in lines[start + 1:]:
        if "  " not in line and not line.startswith("size "):   # the sentences after it
            break
        table.append(line)
    return table


@pytest.mark.parametrize("fixture", ["busy-rounds", "compiled"])
def test_the_comparison_table_fits_an_80_column_terminal_and_a_pipe_gets_it_whole(fixture):
    """A table wider than the terminal (busy-rounds' `stride-bridge-torchscript-256` row:
    101 columns) was wrapped by the terminal mid-row; now its names are cut between words
    (distinct) or columns are left out, and a line says so. A pipe gets it whole."""
    shown = on_a_terminal("--replay", str(FIXTURES / f"{fixture}.jsonl"))
    piped = run_cli("--replay", FIXTURES / f"{fixture}.jsonl").stdout
    whole, fitted = comparison_rows(piped), comparison_rows(shown)
    assert max(map(len, whole)) > 80, "the table fits 80 columns anyway: the test shows nothing"
    assert max(map(len, fitted)) <= 80, max(fitted, key=len)
    assert "to fit this terminal's 80 columns" in ANSI.sub("", shown)
    assert "to fit this terminal" not in piped
    names = [row.split("  ")[0] for row in fitted[2:]]
    assert len(set(names)) == len(names) == len(whole) - 2
    for name, full in zip(names, (row.split("  ")[0] for row in whole[2:])):
        first, *_ = full.split("-")
        assert name == full or (name.startswith(first + "-") and "…" in name
                                and name.endswith(full.split("-")[-1])), (name, full)
    headers = fitted[0].split()
    assert headers[0] == "variant" and headers[1] == "median" and headers[-1] == "checks"
