"""Number formatting shared by every front end, so they all print the same figures."""

from __future__ import annotations

import math

from couplescope.protocol import events
from couplescope.results.time_text import seconds  # noqa: F401 (the one rule, shared with the pictures)


def shows_output(spec: dict, finished: bool) -> bool:
    """Whether a front end shows what a variant's worker printed (a worker_output event).

    A user's module (--model mine.py) prints what its author wants to see; the worker of
    couplescope's own models prints only torch's warnings (kineto's profiler_start markers
    are dropped by core.runner), worth showing only when the variant did not finish. Either way
    the lines are kept in events.jsonl and, exported, in <variant>.output.log."""
    return str((spec or {}).get("model", "")).endswith(".py") or not finished


def thousands(n: int) -> str:
    """9990 -> "9 990": digits grouped by a space, as the SI writes them."""
    return f"{n:,}".replace(",", " ")


def made_words(timed, warmup, unit: str, profiled=0) -> str:
    """"10 000 timed steps + 1 warm-up": what a variant makes, the one way every front end
    says it (the Run line, the watch view, the loss line, the printer's header). The loss
    line once counted 10 001 steps where the header said 10 000 and 1 warm-up. `unit`:
    "steps" or "calls"; a count the request leaves to be decided is given as words.
    `profiled`: the calls made under torch.profiler after the timed ones ("+ 3 profiled",
    as Watch counts them: the Run line said 205 and 1 where Watch then counted 209)."""
    def count(n):
        return thousands(n) if isinstance(n, int) else n

    warm = f" + {count(warmup)} warm-up" if warmup != 0 else ""
    profile = f" + {count(profiled)} profiled" if profiled else ""
    return f"{count(timed)} timed {unit}{warm}{profile}"


def sci(value) -> str:
    """The reference suite's Fortran-style E format: 0.0000E+00."""
    if value is None:
        return "n/a"
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity"
    return f"{v:.4E}"


def compile_cell(status, compile_seconds) -> str:
    """A compile in a table cell: its time, "cached" (zero: the package came from the
    cache), or "-" for a variant that compiles nothing."""
    if status is None:
        return "-"
    return "cached" if status == "cached" else seconds(compile_seconds)


def compiled_line(ev: dict) -> str:
    """A model_compiled event in words, for the headless output and the app."""
    ev = events.typed(ev)
    what = ev.compiler or "the compiler"
    if ev.status == "cached":
        return f"{what} package from the cache, compile 0 s: {ev.package}"
    text = f"compiled with {what} in {seconds(ev.seconds)}"
    if ev.export_seconds is not None:
        text += f" (torch.export {seconds(ev.export_seconds)})"
    if ev.package:
        text += f"; cached for later runs: {ev.package}"
    elif what == "torch.compile":
        text += " (its first call, made during the load)"
    return text


def library_line(facts: dict) -> str:
    """A library host's build in one line: "FTorch 1.1.0 at DIR, libtorch 2.13.0, GNU 12.2.0
    Fortran, flags -O3"."""
    name = facts.get("library") or "library"
    version = facts.get("library_version")
    compiler = " ".join(p for p in (facts.get("compiler_id"), facts.get("compiler_version")) if p)
    flags = " ".join(" ".join(p for p in (facts.get("flags", ""), facts.get("fflags", "")) if p).split())
    parts = [f"{name}{' ' + version if version else ''} at {facts.get('library_dir') or '?'}"]
    if facts.get("torch_version"):
        parts.append(f"libtorch {facts['torch_version']}")
    if compiler:
        parts.append(f"{compiler} Fortran" + (f", flags {flags}" if flags else ""))
    return ", ".join(parts)


def ratio(value) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def table(headers: list[str], rows: list[list[str]], right: set[int] | None = None,
          width: int | None = None, wrap: set[int] | None = None) -> str:
    """A plain text table with aligned columns (right-aligned where asked).

    With `width`, the lines fit it: the last column wraps (never narrower than 30
    characters while another column can give way), and so do the columns in `wrap`, down
    to their longest word, when the last alone cannot make room (a hosts column of four
    names beside a reason). A word longer than its column is broken at hyphens, then cut
    into pieces: wrapped, never truncated.
    """
    import textwrap

    right = right or set()
    last = len(headers) - 1
    wrap = (set(wrap or ()) | {last}) if width else set()
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    if width:
        widths = _fit(widths, width, wrap - {last}, [_longest_word(headers, rows, i) for i in range(len(headers))])

    def cells(row):
        return [(textwrap.wrap(str(c), widths[i]) or [""]) if i in wrap else [str(c)]
                for i, c in enumerate(row)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    for r in rows:
        parts = cells(r)
        for k in range(max(len(p) for p in parts)):
            out.append(line([p[k] if k < len(p) else "" for p in parts]))
    return "\n".join(out)


#: the last column of a table fitted to a width is at least this wide while another
#: wrappable column can give way
LAST_COLUMN_MIN = 30
#: and never narrower than this: below it a sentence wraps a word to a line and the table
#: stops being readable (a terminal that narrow sees lines run past its edge instead)
LAST_COLUMN_FLOOR = 12


def _fit(widths: list[int], width: int, wrappable: set[int], floors: list[int]) -> list[int]:
    """Column widths whose line fits `width`: the last column takes the room left, and
    the wrappable ones give way (widest first, down to their longest word) while the
    last would be narrower than LAST_COLUMN_MIN."""
    widths = list(widths)
    gaps = 2 * (len(widths) - 1)
    want_last = min(widths[-1], LAST_COLUMN_MIN)
    for i in sorted(wrappable, key=lambda i: -widths[i]):
        short = sum(widths) - widths[-1] + gaps + want_last - width
        if short <= 0:
            break
        widths[i] = max(floors[i], widths[i] - short)
    widths[-1] = max(LAST_COLUMN_FLOOR, min(widths[-1], width - sum(widths[:-1]) - gaps))
    return widths


def _longest_word(headers, rows, i: int) -> int:
    return max(len(word) for r in [headers] + rows for word in (str(r[i]).split() or [""]))


def with_headings(table_text: str, headings: dict[int, str]) -> str:
    """`table`'s text with a heading line above body row i for each i in `headings`
    (a sweep's sizes), below the header and its rule."""
    lines = table_text.split("\n")
    for at in sorted(headings, reverse=True):
        lines.insert(2 + at, headings[at])
    return "\n".join(lines)
