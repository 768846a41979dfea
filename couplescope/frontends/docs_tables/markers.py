"""A generated block inside a hand-written docs file: between two marker comments.

    <!-- generated: hosts (python -m couplescope.frontends.docs_tables) -->
    ...the table...
    <!-- end generated: hosts -->

Markdown renders neither comment, so a reader sees the table in the page's prose; the
first one tells a writer not to edit what follows by hand, and which command writes it.
"""

from __future__ import annotations

import re

from couplescope.protocol.errors import UsageError


def opening(block: str, command: str) -> str:
    return f"<!-- generated: {block} ({command}) -->"


def closing(block: str) -> str:
    return f"<!-- end generated: {block} -->"


def replace(text: str, block: str, content: str, command: str, where: str = "the file") -> str:
    """`text` with block `block`'s content replaced by `content` (a missing block is an
    error naming the markers to add: where a table goes is the page's decision)."""
    pattern = re.compile(rf"(<!-- generated: {re.escape(block)} \([^)]*\) -->\n).*?(?={re.escape(closing(block))})",
                         re.S)
    if not pattern.search(text):
        raise UsageError(f"{where} has no generated block '{block}': put {opening(block, command)} "
                         f"and {closing(block)} on lines of their own where it goes")
    return pattern.sub(lambda m: opening(block, command) + "\n" + content, text, count=1)
