"""How long the terminal stays blank after `q` in the app.

Starts the real command (`python -m couplescope --tui --model simplenet`) in a pseudo
terminal of 80x24, waits until the catalogue is read (the size field's label names the
model's size), presses `q` and times: from q to the app giving the terminal back (its
leaving the alternate screen, \\e[?1049l), and from then to the process's end, the stretch
the terminal shows nothing of either (before: the interpreter tearing down what the app
loaded). Each source tree given is timed in turn, run by run, so that the machine's load
falls on all of them alike; it prints each one's median.

    python benchmarks/quit_time.py [--runs 5] [SRC ...]

SRC: a couplescope source tree to run instead of the installed one (put first on
PYTHONPATH), e.g. `git archive main | tar -x -C /tmp/main-src`; without one, the
installed couplescope.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import statistics
import struct
import sys
import termios
import time

READY = b"size (batch)"     # the catalogue read: the app is as a user finds it
LEFT = b"\x1b[?1049l"       # the app gave the terminal back


def read_until(fd: int, wanted: bytes, seen: bytearray, deadline: float) -> float | None:
    """Read the terminal's output until `wanted` appears; the moment it did (None: the
    process ended or the deadline passed first)."""
    while wanted not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return None
        if not chunk:
            return None
        seen += chunk
    return time.monotonic()


def one_quit(src: str | None) -> tuple[float, float]:
    """(seconds from q to the terminal given back, seconds from then to the process's end)."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="80", LINES="24")
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(sys.executable, [sys.executable, "-m", "couplescope", "--tui", "--model", "simplenet"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = bytearray()
    try:
        if read_until(fd, READY, seen, time.monotonic() + 120) is None:
            raise RuntimeError(f"the app did not come up: {bytes(seen[-300:])!r}")
        time.sleep(0.5)
        del seen[:]
        os.write(fd, b"q")
        pressed = time.monotonic()
        left = read_until(fd, LEFT, seen, pressed + 60)
        while True:   # drain what it writes until it has gone
            try:
                if not os.read(fd, 65536):
                    break
            except OSError:
                break
        _, status = os.waitpid(pid, 0)
        ended = time.monotonic()
    finally:
        os.close(fd)
    if left is None or os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"q did not close the app cleanly (status {status})")
    return left - pressed, ended - left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("src", nargs="*", help="source trees to time in turn (default: the installed one)")
    args = parser.parse_args()
    trees = args.src or [None]
    figures: dict = {tree: [] for tree in trees}
    for _ in range(args.runs):
        for tree in trees:
            figures[tree].append(one_quit(tree))
    for tree, runs in figures.items():
        closing = statistics.median(r[0] for r in runs)
        blank = statistics.median(r[1] for r in runs)
        print(f"{tree or 'installed'}: q to the terminal given back {closing:.2f} s, then blank "
              f"until the process ended {blank:.2f} s (medians of {len(runs)}; blank runs "
              f"{', '.join(f'{r[1]:.2f}' for r in runs)})")


if __name__ == "__main__":
    main()
