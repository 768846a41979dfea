"""`couplescope --list`: models, backends, presets and devices, from one catalogue query."""

from __future__ import annotations

import os
import sys

from couplescope.frontends import formatting as fmt


def list_width(out) -> int | None:
    """The width to wrap to: COLUMNS when it is set (piped or not: `COLUMNS=80 couplescope
    --list > file` asks for 80), else the terminal's that shows the listing: stdout's, or
    stderr's when stdout is piped into a pager or `head` in a terminal (`couplescope --list
    | less` is read at the terminal's width: unwrapped, its rows ran to 236 columns). With
    no terminal at all (a script, a file from a batch job) each row keeps one line, for
    grep."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for stream in (out, sys.stderr):
        try:
            if stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):   # not a real file (a test's StringIO)
            continue
    return None


def print_list(out=None) -> None:
    from couplescope.core.availability import read_catalogue

    out = out or sys.stdout
    cat = read_catalogue()
    width = list_width(out)
    rows = [[name, f"{m['size_name']}={m['default_size']}", m["dtype"], m["summary"]]
            for name, m in cat.models.items()]
    out.write("models (--model NAME, --size sets the size parameter):\n")
    out.write(fmt.table(["model", "size (default)", "dtype", "what"], rows, width=width) + "\n\n")
    rows = [[name, "unavailable" if reason else "available", ", ".join(cat.backend_hosts.get(name, ())),
             what + (f"; unavailable: {reason}" if reason else "")]
            for name, (what, reason) in cat.backends.items()]
    out.write("backends (--backend NAME):\n" + fmt.table(["backend", "status", "hosts", "what"], rows, width=width,
                                                        wrap={2})
              + "\n\n")
    rows = [[name, "unavailable" if reason else "available", what + (f"; unavailable: {reason}" if reason else "")]
            for name, (what, reason) in cat.hosts.items()]
    out.write("hosts (--host NAME; default: the first one available for the backend):\n"
              + fmt.table(["host", "status", "what"], rows, width=width) + "\n\n")
    rows = [[name, description] for name, description in cat.presets.items()]
    out.write("presets (--preset NAME):\n" + fmt.table(["preset", "description"], rows, width=width) + "\n\n")
    out.write("devices (--device):\n" + fmt.table(["device", "what"], cat.device_rows, width=width) + "\n")
    for error in cat.errors:
        out.write(f"note: {error}\n")
