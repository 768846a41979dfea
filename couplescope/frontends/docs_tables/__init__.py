"""The docs that are tables, generated from the code: `python -m couplescope.frontends.docs_tables`.

A table a person keeps by hand beside a registry goes stale the day a backend, host, key,
view or module is added. These are written from what they list instead:

  docs/options.md        every option (couplescope/protocol/options_doc.py), the whole file
  docs/hosts.md          which host makes which backend's calls, for which task (the
                         hosts' declarations: couplescope.backends.hosts.table)
  docs/tui.md            the app's keys (the bindings: couplescope/frontends/tui/keys_doc.py)
  docs/architecture.md   the app's tabs (the view registry) and every module under
                         couplescope/ (the source tree: module_map.py)

In a file that is more than its table, the table sits between marker comments
(markers.py) and the prose around it is left alone. tests/test_docs_tables.py fails when a
generated part differs from what the command would write, and names the command.
"""

from __future__ import annotations

import os

from couplescope.frontends.docs_tables import markers

COMMAND = "python -m couplescope.frontends.docs_tables"


def _options() -> str:
    from couplescope.protocol import options_doc

    return options_doc.markdown()


def _hosts() -> str:
    from couplescope.frontends.docs_tables.hosts_table import markdown

    return markdown()


def _keys() -> str:
    from couplescope.frontends.tui.keys_doc import keys_table
    from couplescope.frontends.tui.views import view_classes

    return keys_table(view_classes())


def _tabs() -> str:
    from couplescope.frontends.tui.keys_doc import tabs_list
    from couplescope.frontends.tui.views import view_classes

    return tabs_list(view_classes())


def _modules(root: str) -> str:
    from couplescope.frontends.docs_tables.module_map import markdown

    return markdown(root)


#: docs file -> its generated blocks: block name -> the block's text, made from the
#: checkout's root; a file generated whole has one maker, under the name ""
GENERATED = {
    "options.md": {"": lambda root: _options()},
    "hosts.md": {"hosts": lambda root: _hosts()},
    "tui.md": {"keys": lambda root: _keys()},
    "architecture.md": {"tabs": lambda root: _tabs(), "modules": _modules},
}


def checkout() -> str:
    """The source checkout this package runs from: docs/ beside couplescope/."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def generated(root: str) -> dict[str, str]:
    """docs file (relative to root) -> its text with every generated part as the code says."""
    out = {}
    for name, blocks in GENERATED.items():
        path = os.path.join(root, "docs", name)
        if "" in blocks:
            out[os.path.join("docs", name)] = blocks[""](root)
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for block, make in blocks.items():
            text = markers.replace(text, block, make(root), COMMAND, where=os.path.join("docs", name))
        out[os.path.join("docs", name)] = text
    return out


def _differing(root: str) -> dict[str, str]:
    """docs file -> what it should hold, for each file that holds something else now."""
    out = {}
    for rel, text in generated(root).items():
        path = os.path.join(root, rel)
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if current != text:
            out[rel] = text
    return out


def stale(root: str) -> list[str]:
    """The docs files whose generated parts differ from what the code says."""
    return list(_differing(root))


def write(root: str) -> list[str]:
    """Rewrite the stale docs files; returns them."""
    changed = _differing(root)
    for rel, text in changed.items():
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
    return list(changed)
