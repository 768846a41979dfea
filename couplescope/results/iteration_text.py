"""results.json as text for people, and its iterations' text made while the run goes.

The iterations are nearly all of a results document's bytes: one compact line each
(`readable_json`), the structure around them indented. json's indenting encoder is pure
Python, and even the C encoder takes about as long per iteration as a SimpleNet call, so
writing the document when a run of 200 000 calls ended added seconds the user waited
for. The results builder (couplescope.results.builder, `keep_text`) therefore keeps each
iteration's line as its batch arrives, in the parent, while the worker goes on
measuring (`batch_texts`); the document is then written by joining them
(`readable_json(document, texts)`). A line made this way is exactly what
`compact(iteration)` gives (tests/test_iteration_text.py holds them to it): floats by
`float.__repr__` (as json writes them), strings by json's own ASCII escaping, and an
iteration with a NaN or an infinity (written as a string) or a phase missing in some
call is left to the encoder.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii

from couplescope.protocol.events import json_clean

#: one iteration (or any value) on one line, as results.json holds it
compact = json.JSONEncoder(separators=(", ", ": "), allow_nan=False, default=str).encode

_FLOAT = float.__repr__
_BOOL = {True: "true", False: "false"}
_FLOAT_TYPE, _BOOL_TYPE, _ERROR_TYPES = {float}, {bool}, {type(None), str}


def json_safe(it: dict) -> dict:
    """An iteration with NaN and infinities as strings (JSON has none) and without the
    event's own keys."""
    out = dict(it)
    for key in ("max_rel_error", "loss"):
        value = out.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            out[key] = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    out.pop("event", None)
    out.pop("variant", None)
    return out


def _floats(column) -> bool:
    """Every value a finite float. (A sum of floats is finite only when each is; a sum
    that overflows says no, and the batch is written the slow way, as correctly.)"""
    return set(map(type, column)) <= _FLOAT_TYPE and math.isfinite(sum(column))


def _only(column, types: set) -> bool:
    return set(map(type, column)) <= types


def batch_texts(records: list[dict], phases: dict, columns: dict) -> list[str]:
    """Each record's line, for records made from one `iterations` event (the same kind,
    round, rank and phase names in every record): `phases` the event's phase columns,
    `columns` its seconds, max_rel_error, passed, error (and loss) columns. Anything the
    template does not know to write exactly as json does goes through `compact`."""
    first = records[0] if records else None
    simple = (first is not None and type(first["index"]) is int
              and all(_floats(column) for column in phases.values())
              and all(_floats(columns[k]) for k in ("seconds", "max_rel_error") + (("loss",) if "loss" in first else ()))
              and _only(columns["passed"], _BOOL_TYPE) and _only(columns["error"], _ERROR_TYPES)
              and all(type(first[k]) is int for k in ("round", "rank") if k in first))
    if not simple:
        return [compact(json_safe(it)) for it in records]
    head = ('{"index": %d, "kind": ' + encode_basestring_ascii(first["kind"]).replace("%", "%%")
            + ', "seconds": %s, "phases": {'
            + ", ".join(encode_basestring_ascii(n).replace("%", "%%") + ": %s" for n in phases)
            + '}, "max_rel_error": %s, "passed": %s, "error": %s, "warmup": ' + _BOOL[first["warmup"]]
            + ', "profiled": ' + _BOOL[first["profiled"]])
    tail = "".join(f', "{k}": {first[k]}' for k in ("round", "rank") if k in first)
    template = head + tail + (', "loss": %s}' if "loss" in first else "}")
    values = [[r["index"] for r in records], list(map(_FLOAT, columns["seconds"])),
              *[list(map(_FLOAT, column)) for column in phases.values()],
              _same_floats(columns["max_rel_error"]), _same(columns["passed"], _BOOL.__getitem__),
              _same(columns["error"], _error_text)]
    if "loss" in first:
        values.append(list(map(_FLOAT, columns["loss"])))
    return [template % row for row in zip(*values)]


def _same_floats(column: list[float]) -> list[str]:
    """The column's reprs, made once when every value is the same (a check result shared
    by every call whose outputs matched the judged ones)."""
    return _same(column, _FLOAT)


def _same(column: list, text) -> list[str]:
    """Each value's text, made once when every value is the same (a check's passed and
    error shared by every call whose outputs matched the judged ones)."""
    if column and column.count(column[0]) == len(column):
        return [text(column[0])] * len(column)
    return list(map(text, column))


def _error_text(error: str | None) -> str:
    return "null" if error is None else encode_basestring_ascii(error)


def readable_json(document: dict, texts: dict[str, list[str]] | None = None) -> str:
    """The document indented for people, with each variant's iterations one per line, and
    a NaN or an infinity outside them written as a string ("nan", "inf"), as in them.

    `texts`: variant name -> its iterations' lines already made (ResultsBuilder keeps
    them), used where they stand for exactly the iterations the document lists. The
    structure stays indented and the iterations go through the C encoder, one compact
    line each (3-4x faster than indenting them, and easier to read and to grep)."""
    blocks = []
    skeleton = dict(document)
    variants = []
    for variant in document.get("variants", []):
        its = variant.get("iterations")
        if isinstance(its, list) and its:
            made = (texts or {}).get(variant.get("name"))
            lines = made if made is not None and len(made) == len(its) else map(compact, its)
            variant = {**variant, "iterations": f"\0iterations {len(blocks)}\0"}
            blocks.append(",\n    ".join(lines))
        variants.append(variant)
    if "variants" in document:
        skeleton["variants"] = variants
    try:
        text = json.dumps(skeleton, indent=1, allow_nan=False, default=str)
    except ValueError:   # a NaN or an infinity (a diverged training's last loss): as strings
        text = json.dumps(json_clean(skeleton), indent=1, allow_nan=False, default=str)
    for i, block in enumerate(blocks):
        text = text.replace(json.dumps(f"\0iterations {i}\0"), f"[\n    {block}\n   ]", 1)
    return text
