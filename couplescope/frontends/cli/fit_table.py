"""Fitting the closing comparison table to a terminal narrower than it.

fold.py folds sentences and leaves tables alone: a table's row folded between words loses
its columns, and a terminal wraps it wherever its edge falls (a sweep's
`stride-bridge-torchscript-256` row was 102 columns). So on a terminal the table is made to
fit: first its variant names are cut between words, the middle words given up for `…`
(`stride-bridge-…-256`), as long as every name stays distinct; where that is not
enough, columns are left out (IQR first, the verdict and the median never), and a line
says which. To a file or a pipe the table stays whole (the printer passes no width).
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt

#: the narrowest a cut name may be: shorter forms say too little to tell variants apart
MIN_NAME = 20
#: the columns left out, in this order, when cutting names is not enough
DROPPABLE = ("IQR", "by round", "overhead", "compile", "backward", "forward", "vs base", "vs fastest")


def cut_name(name: str, room: int) -> str | None:
    """`name` in at most `room` columns, cut between its words (at '-'): its first word (the
    model) and last (the size, the host) always kept, as many of the others as fit, the
    middle ones given up for `…`; None when even the shortest such form does not fit."""
    if len(name) <= room:
        return name
    words = name.split("-")
    forms = [("-".join([*words[:first], "…", *words[len(words) - last:]]), last)
             for first in range(1, len(words)) for last in range(1, len(words) - first)]
    fitting = [(len(form), last, form) for form, last in forms if len(form) <= room]
    return max(fitting)[2] if fitting else None   # the longest; of equals, the most last words


def cut_names(names: list[str], room: int) -> dict[str, str] | None:
    """Every name cut to `room` columns, or None when they do not all fit or two would read
    the same."""
    cut = {n: cut_name(n, room) for n in names}
    forms = list(cut.values())
    if None in forms or len(set(forms)) < len(set(names)):
        return None
    return cut


def width_of(headers: list[str], body: list[list[str]], right: set[int]) -> int:
    return max(len(line) for line in fmt.table(headers, body, right=right).split("\n"))


def fit(headers: list[str], body: list[list[str]], width: int | None) -> tuple[list[str], list[list[str]], str]:
    """(headers, body, a line saying what was done or "") for a terminal `width` columns
    wide; unchanged when width is None or the table fits. Column 0 holds the names; the
    first and last columns are kept, the middle ones right-aligned."""
    def right(headers):
        return set(range(1, len(headers) - 1))

    if width is None or width_of(headers, body, right(headers)) <= width:
        return headers, body, ""
    said = []
    names = [row[0] for row in body]
    longest = max(len(n) for n in names)
    room = longest - (width_of(headers, body, right(headers)) - width)
    cut = cut_names(names, max(room, MIN_NAME))
    if cut is not None and any(cut[n] != n for n in names):
        body = [[cut[row[0]], *row[1:]] for row in body]
        said.append("names cut with …")
    left_out = []
    for column in DROPPABLE:
        if width_of(headers, body, right(headers)) <= width:
            break
        if column in headers:
            i = headers.index(column)
            headers = headers[:i] + headers[i + 1:]
            body = [row[:i] + row[i + 1:] for row in body]
            left_out.append(column)
    if left_out:
        said.append(f"{', '.join(left_out)} left out")
    line = (f"({' and '.join(said)} to fit this terminal's {width} columns; "
            f"to a file or a pipe the table is whole)")
    return headers, body, line
