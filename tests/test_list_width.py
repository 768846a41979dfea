"""`couplescope --list` in a real 80-column terminal (tmux), read straight or through a
pipe, and the tables it is made of: every line fits, nothing is cut."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from couplescope.frontends import formatting as fmt

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="needs tmux for a real 80-column terminal")


def in_terminal(tmp_path, shell_command: str, columns: int = 80, rows: int = 24) -> str:
    """Run `shell_command` in a real terminal of that size (a tmux pane of its own server,
    COLUMNS unset, as a login shell has it) and return the pane's text, wrapped lines
    joined (what the terminal had to wrap shows as a line longer than the pane)."""
    socket = str(tmp_path / "tmux.sock")
    tmux = [TMUX, "-S", socket]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    signal = f"done-{os.getpid()}"
    script = tmp_path / "run.sh"
    script.write_text(f"{shell_command}\n{shlex.quote(TMUX)} -S {shlex.quote(socket)} wait-for -S {signal}\n"
                      "sleep 600\n")
    subprocess.run([*tmux, "new-session", "-d", "-x", str(columns), "-y", str(rows), "-s", "t",
                    f"sh {shlex.quote(str(script))}"], check=True, env=env)
    try:
        subprocess.run([*tmux, "wait-for", signal], check=True, timeout=120)
        return subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", "t"], capture_output=True,
                              text=True, check=True).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def command_line(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "couplescope", *args))


@needs_tmux
def test_list_piped_in_an_80_column_terminal_fits_it(tmp_path):
    """`couplescope --list | less` (here `| cat > file`) is read in the terminal: its rows
    ran to 236 columns when stdout was a pipe, and the terminal broke them mid-word."""
    listing = tmp_path / "list.txt"
    in_terminal(tmp_path, f"{command_line('--list')} | cat > {shlex.quote(str(listing))}")
    lines = listing.read_text().splitlines()
    assert len(lines) > 40, lines
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    for name in ("torchscript", "cudagraph", "simplenet-train", "native", "python"):
        assert name in listing.read_text()


@needs_tmux
def test_list_in_an_80_column_terminal_fits_it(tmp_path):
    shown = in_terminal(tmp_path, f"clear; {command_line('--list')}", rows=200)
    lines = [line for line in shown.splitlines() if line.strip()]
    assert any(line.startswith("presets (--preset NAME)") for line in lines), shown
    assert max(map(len, lines)) <= 80, max(lines, key=len)


def test_list_without_a_terminal_keeps_a_row_per_line():
    """No terminal at all (a batch job writing a file): one line per row, for grep."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = subprocess.run([sys.executable, "-m", "couplescope", "--list"], capture_output=True, text=True,
                       env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    row = [line for line in r.stdout.splitlines() if line.startswith("cudagraph ")]
    assert len(row) == 1 and "unavailable" in row[0] and len(row[0]) > 80


def test_a_table_with_more_hosts_and_long_reasons_fits_80_columns_and_keeps_every_word():
    """More hosts (ftorch, forpy) make the hosts column wide and their reasons long: the
    hosts column wraps too, so the line fits, and no word is lost."""
    reason = ("FTorch was not found: set FTORCH_DIR to an FTorch install (its lib/libftorch.so "
              "and include/ftorch.mod) or build one with cmake (docs/hosts.md)")
    rows = [["torchscript", "available", "native, python, ftorch, forpy", "direct coupling as FTorch does it"],
            ["bridge", "unavailable", "native, python, forpy", "embedded Python; unavailable: " + reason]]
    text = fmt.table(["backend", "status", "hosts", "what"], rows, width=80, wrap={2})
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    words = text.split()
    for row in rows:
        for cell in row:
            for word in cell.replace(",", " ").split():
                assert any(word in w for w in words), word


def test_a_table_wraps_its_last_column_only_where_that_is_enough():
    rows = [["cpu", "2 cores; torch's threads: --threads (default: torch's own) " * 3]]
    lines = fmt.table(["device", "what"], rows, width=60).splitlines()
    assert max(map(len, lines)) <= 60 and all(line[:8].strip() in ("device", "------", "cpu", "") for line in lines)
