"""docs/hosts.md's table: which host makes which backend's calls, for which task.

Read from the hosts' declarations (couplescope.backends.hosts.table, `Host.requires`,
`default_candidate`) and the backends' (`tasks`, `runs_inner_backend`): a host or a
backend added to its registry is a row or a column here at the next regeneration.
"""

from __future__ import annotations

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def markdown() -> str:
    """Two tables: the hosts (what each is, when it is taken, what it needs), then the host x
    backend table whose cells name the tasks."""
    from couplescope import backends
    from couplescope.backends import hosts

    table = hosts.table()
    columns = [b for b in backends.names() if any(b == name for _, name, _ in table)]
    tasks = {(host, backend): ts for host, backend, ts in table}
    candidates = [h for h in hosts.names() if hosts.get(h).default_candidate]
    lines = ["| host | what makes the calls | when no `--host` is given | what it needs |", "|---|---|---|---|"]
    for name in hosts.names():
        host = hosts.get(name)
        order = f"tried {ORDINALS[candidates.index(name)]}" if name in candidates else "only when named"
        lines.append(f"| `{name}` | {host.summary} | {order} | {host.requires} |")
    lines += ["", "| host | " + " | ".join(f"`{b}`" for b in columns) + " |", "|---|" + "---|" * len(columns)]
    for name in hosts.names():
        cells = [", ".join(tasks[(name, b)]) if (name, b) in tasks else "—" for b in columns]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += ["", "A cell names the tasks (`--task`) the host makes that backend's calls for (— none: "
              "`--host` with that backend is refused). A variant that names no host takes the first "
              "host tried that makes its calls and is available here, and the run says so when it "
              "passes one over."]
    inner = [b for b in backends.names() if backends.get(b).runs_inner_backend]
    if inner:
        lines.append(" ".join(f"`{b}` runs another backend's calls (its inner backend's), on that "
                              "backend's hosts." for b in inner))
    return "\n".join(lines) + "\n"
