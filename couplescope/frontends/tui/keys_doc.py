"""The app's keys and tabs as docs/tui.md and docs/architecture.md list them, read from the
bindings and the view registry (python -m couplescope.frontends.docs_tables writes them).

A key is documented where it is bound: its Binding's tooltip (what the footer shows on
hover) is the table's "what it does", else its description. The rows: the app's own keys,
the views' keys (one row, from the registry), each view's own bindings, a field's that
takes words (fields.FieldInput), then each screen's (every Screen subclass of the app's
modules), so a key, view or screen added to the code is in the docs at the next
regeneration.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.keys import key_to_character
from textual.screen import Screen


def key_name(key: str) -> str:
    """How the docs write a key: its character where it prints (`?`), else its name
    (`space`, `escape`, `ctrl+c`)."""
    character = key_to_character(key)
    return character if character and character.isprintable() and not character.isspace() else key


def _keys(binding: Binding) -> list[str]:
    return [key_name(k.strip()) for k in binding.key.split(",")]


def _rows(bindings, where: str) -> list[tuple[list[str], str, str]]:
    """(keys, where, what it does) per action: keys bound to the same action and words are one row."""
    rows: dict[tuple[str, str], list[str]] = {}
    for binding in bindings:
        words = binding.tooltip or binding.description
        rows.setdefault((binding.action, words), []).extend(_keys(binding))
    return [(keys, where, words) for (_, words), keys in rows.items()]


def screens() -> list[type]:
    """The app's screens (compare, help, ...): Screen subclasses defined in its modules, by name."""
    import couplescope.frontends.tui.app  # noqa: F401  (imports every screen the app opens)

    found, todo = [], list(Screen.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("couplescope.frontends.tui") and "BINDINGS" in vars(cls):
            found.append(cls)
    return sorted(found, key=lambda cls: cls.__name__)


def _screen_words(cls: type) -> str:
    """CompareScreen -> "compare screen"."""
    name = cls.__name__.removesuffix("Screen")
    return "".join(f" {c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name)) + " screen"


def keys_table(views) -> str:
    """docs/tui.md's key table: the app's keys, the views' keys, each view's and each screen's."""
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.fields import FieldInput

    rows = _rows(CoupleScopeApp.BINDINGS, "the app")
    rows.append(([key_name(v.key) for v in views], "the app",
                 f"switch view: {', '.join(v.title for v in views)} (from the screens below too), the "
                 "focus back where it was in that view."))
    for view in views:
        rows += _rows(vars(view).get("BINDINGS", ()), f"the {view.title} view")
    rows += _rows(FieldInput.BINDINGS, "a field that takes words")
    for screen in screens():
        rows += _rows(screen.BINDINGS, f"the {_screen_words(screen)}")
    lines = ["| key | where | what it does |", "|---|---|---|"]
    lines += [f"| {' '.join(f'`{k}`' for k in keys)} | {where} | {words} |" for keys, where, words in rows]
    return "\n".join(lines) + "\n"


def tabs_list(views) -> str:
    """docs/architecture.md's list of the app's tabs: each view's title, key and module."""
    return "\n".join(f"- **{v.title}** (`{key_name(v.key)}`): `{v.__module__.replace('.', '/')}.py`"
                     for v in views) + "\n"
