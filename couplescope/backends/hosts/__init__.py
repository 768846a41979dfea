"""The hosts, registered by name: who makes a variant's timed calls.

A host is one module here plus one line in REGISTRY; its module defines `HOST`, an
instance of a couplescope.backends.hosts.base.Host subclass (that module documents the
contract). Every question about hosts is answered here, from the declarations: which
exist (`--host` choices), which serve a backend and task, which is taken when none is
named, which are available here and why not (`--list`, the form), the host x backend x
task table (docs/hosts.md, the test matrix). Host modules import cheaply (no torch).
"""

from __future__ import annotations

import importlib

from couplescope.protocol.errors import UsageError, choices_text

#: name -> module. Order is the order `--list` shows, and the order in which a variant
#: that names no host tries the default candidates.
REGISTRY = {
    "native": "couplescope.backends.hosts.native",
    "python": "couplescope.backends.hosts.python",
    "ftorch": "couplescope.backends.hosts.ftorch",
    "forpy": "couplescope.backends.hosts.forpy",
    "pytorch-fortran": "couplescope.backends.hosts.pytorch_fortran",
}


#: the host of a spec that names none and was never resolved (a spec made in code and run
#: in the worker directly), and the last resort of `resolve`: the worker's own loop, which
#: serves every backend
FALLBACK = "python"


def names() -> list[str]:
    return list(REGISTRY)


def check_name(name: str) -> None:
    if name not in REGISTRY:
        raise UsageError(f"unknown host '{name}'; choose one of: {choices_text(REGISTRY)}")


def get(name: str):
    """The registry object of host `name`."""
    check_name(name)
    return importlib.import_module(REGISTRY[name]).HOST


def of(spec):
    """The registry object of the host making `spec`'s calls (FALLBACK when it names none)."""
    return get(spec.host or FALLBACK)


def unavailable(name: str, spec=None) -> str | None:
    """Why host `name` cannot make calls here (for `spec`, if given), or None."""
    return get(name).unavailable(spec)


def _coupling_backend(spec):
    from couplescope import backends

    return backends.get(spec.backend).coupling_backend(spec)


def serving(spec) -> tuple[str, ...]:
    """The hosts that make the calls of `spec`'s backend (an MPI job's: its inner backend's)
    for its task, in registry order."""
    backend = _coupling_backend(spec)
    return tuple(name for name in REGISTRY if get(name).serves(backend, spec.task))


def check(spec) -> None:
    """Raise UsageError when the spec's explicit host cannot make its backend's calls here."""
    if spec.host is None:
        return
    check_name(spec.host)
    hosts = serving(spec)
    if spec.host not in hosts:
        backend = _coupling_backend(spec)
        task = f" --task {spec.task}" if spec.task != "infer" else ""
        raise UsageError(f"backend '{backend.name}'{task} runs on the {' or '.join(hosts)} host only, "
                         f"not --host {spec.host}")
    reason = unavailable(spec.host, spec)
    if reason:
        others = [h for h in hosts if h != spec.host and unavailable(h, spec) is None]
        instead = f"; --host {others[0]} runs without it" if others else ""
        raise UsageError(f"--host {spec.host} is unavailable: {reason}{instead}")
    get(spec.host).validate(spec)


def resolve(spec):
    """(the spec with its host decided, a note or None). An unset host becomes the first
    default candidate that serves the backend and task and is available here; the note says
    why a preferred host was passed over."""
    if spec.host is not None:
        return spec, None
    skipped = []
    for name in serving(spec):
        host = get(name)
        if not host.default_candidate:
            continue
        reason = host.unavailable(spec)
        if reason is None:
            note = None
            if skipped:
                note = (f"{spec.label}: on the {name} host because the {skipped[0][0]} host is "
                        f"unavailable ({skipped[0][1]})")
            return spec.replace(host=name), note
        skipped.append((name, reason))
    hosts = serving(spec)
    return spec.replace(host=hosts[-1] if hosts else FALLBACK), None


def rows() -> dict:
    """host name -> (what it is, with its build cache's state where it builds, why it is
    unavailable here or None): `--list` and the app."""
    out = {}
    for name in REGISTRY:
        host = get(name)
        reason = host.unavailable()
        state = host.cache_state() if reason is None else ""
        out[name] = (host.summary + (f"; {state}" if state else ""), reason)
    return out


def table() -> list[tuple[str, str, tuple[str, ...]]]:
    """(host, backend, tasks it makes calls for) for every pair that has any: the host x
    backend x task table of docs/hosts.md and of the test matrix."""
    from couplescope import backends

    out = []
    for name in REGISTRY:
        host = get(name)
        for backend_name in backends.names():
            backend = backends.get(backend_name)
            if backend.runs_inner_backend:
                continue   # a backend that runs another's calls (mpi) has no calls of its own
            tasks = host.served(backend)
            if tasks:
                out.append((name, backend_name, tasks))
    return out
