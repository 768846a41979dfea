"""results.json as text for people, written fast enough for a run of a million calls.

json's indenting encoder is pure Python, and a document of 200 000 SimpleNet calls took
it longer to write than the calls took to make. So the structure around the calls is
indented by it, and each variant's calls (its blocks of columns,
couplescope.results.call_columns) go through the C encoder: a block's scalars on its first
line, each of its columns on a line of its own. Integers (the nanoseconds) are what the C
encoder writes fastest; a NaN or an infinity (a failed check's error, a diverged
training's loss) is written as a string ("nan", "inf"), in the calls and outside them.
"""

from __future__ import annotations

import json

from couplescope.protocol.events import json_clean

#: one value on one line, as results.json holds a block's columns
compact = json.JSONEncoder(separators=(", ", ": "), allow_nan=False, default=str).encode


def _text(value) -> str:
    try:
        return compact(value)
    except ValueError:   # a NaN or an infinity: as a string
        return compact(json_clean(value))


def element_text(element: dict, indent: str) -> str:
    """One block (or, in an older document, one record) of a variant's iterations: its
    consecutive scalars together on a line, each list or mapping on a line of its own."""
    lines, scalars = [], []
    for key, value in element.items():
        item = f"{compact(key)}: {_text(value)}"
        if isinstance(value, (list, dict)):
            if scalars:
                lines.append(", ".join(scalars))
                scalars = []
            lines.append(item)
        else:
            scalars.append(item)
    if scalars:
        lines.append(", ".join(scalars))
    return "{" + f",\n{indent} ".join(lines) + "}"


def readable_json(document: dict) -> str:
    """The document indented for people, each variant's iterations written by
    `element_text`, and a NaN or an infinity written as a string ("nan", "inf")."""
    blocks = []
    skeleton = dict(document)
    variants = []
    for variant in document.get("variants", []):
        its = variant.get("iterations")
        if isinstance(its, list) and its and all(isinstance(e, dict) for e in its):
            variant = {**variant, "iterations": f"\0iterations {len(blocks)}\0"}
            blocks.append(",\n    ".join(element_text(e, "    ") for e in its))
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
