"""docs/options.md, written from the declarations (couplescope/protocol/options.py).

`python -m couplescope.frontends.docs_tables` regenerates it with the other generated docs
(`python -m couplescope.protocol.options_doc` prints it alone); tests/test_options.py and
tests/test_docs_tables.py fail when the file is not this module's text.
"""

from __future__ import annotations

from couplescope.protocol.option import KIND_WORDS, RUN
from couplescope.protocol.options import GROUPS, OPTIONS


def markdown() -> str:
    """docs/options.md: one table per group, every option with its flag, preset key,
    default and meaning (tests/test_options.py checks the file is this text)."""
    lines = ["# Options", "",
             "Every option of a run, generated from its declaration in",
             "`couplescope/protocol/options.py` (`python -m couplescope.frontends.docs_tables` writes it).",
             "The same option is a command-line flag, a field of the app's form and a preset key:",
             "per-variant keys go in a preset's `[defaults]` or `[[variant]]`, per-run keys at its top",
             "level (docs/presets.md). A value is checked the same way wherever it comes from.", ""]
    for group in GROUPS:
        members = [o for o in OPTIONS if o.group == group]
        if not members:
            continue
        lines += [f"## {group}", "", "| flag | preset key | type | default | applies to | meaning |",
                  "|---|---|---|---|---|---|"]
        for o in members:
            key = "—" if o.not_in_presets else f"`{o.name}`" + (" (top level)" if o.scope == RUN else "")
            kind = {tuple: "shape"}.get(o.kind, KIND_WORDS.get(o.kind, o.kind.__name__))
            if o.choices:
                kind = " \\| ".join(f"`{c}`" for c in o.choices)
            elif o.above_low:
                kind += f", above {o.low:g}"
            elif o.low is not None or o.high is not None:
                kind += f", {o.low:g}" if o.high is None else f", {o.low:g}–{o.high:g}"
                kind += " or more" if o.high is None else ""
            applies = ", ".join(o.backends) if o.backends else "every backend"
            if o.tasks:
                applies += f"; task {', '.join(o.tasks)}"
            if o.hosts:
                applies += f"; host {', '.join(o.hosts)}"
            meaning = o.help + ("; a comma list runs one variant per value" if o.sweep and "comma" not in o.help else "")
            lines.append(f"| `{o.flag}` | {key} | {kind} | {o.default_words()} | {applies} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
