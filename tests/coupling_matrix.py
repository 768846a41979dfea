"""The backend x host x task matrix the tests run, read from the registries.

`couplescope.backends.hosts.table()` says which host makes which backend's calls for which
task; a backend's own options with a fixed set of values (the bridge's --bridge-model) are
part of what it is, so each value is a coupling of its own. A new backend, host or value is
in the matrix without editing a test. What cannot run here is in it too, skipped with the
reason the registry gives (cudagraph without CUDA, a host whose library is missing).
"""

from __future__ import annotations

import itertools

import pytest


def own_choices(backend: str) -> list[dict]:
    """Every combination of the values of the options only `backend` reads that have a fixed
    set of values ([{}] for a backend with none)."""
    from couplescope.protocol.options import OPTIONS

    own = [o for o in OPTIONS if o.backends == (backend,) and o.choices]
    return [dict(zip((o.name for o in own), values)) for values in itertools.product(*(o.choices for o in own))]


def couplings(task: str = "infer", device: str = "cpu", compiled: bool = False) -> list:
    """pytest params (backend, settings, host): every backend's calls for `task` on every
    host that makes them, each of the backend's own settings apart. Couplings that compile
    the model on load (aoti, the bridge's torch.compile: minutes per model) are left out
    unless `compiled`; their own tests run them (tests/test_aoti.py)."""
    from couplescope import RunSpec, backends
    from couplescope.backends import hosts

    params = []
    for host, backend, tasks in hosts.table():
        if task not in tasks:
            continue
        for settings in own_choices(backend):
            spec = RunSpec(model="simplenet", backend=backend, host=host, task=task, device=device, **settings)
            if backends.get(backend).compiles_on_load(spec) and not compiled:
                continue
            reason = backends.unavailable(backend, spec) or hosts.unavailable(host, spec)
            words = "-".join([backend, *map(str, settings.values()), host])
            marks = [pytest.mark.skip(reason=f"{words}: {reason}")] if reason else []
            params.append(pytest.param(backend, tuple(settings.items()), host, id=words, marks=marks))
    return params


def runnable(params) -> list[tuple]:
    """(backend, settings, host) of the params that are not skipped here."""
    return [p.values for p in params if not p.marks]


def hosts_for(backend: str, task: str) -> list:
    """pytest params: the hosts that make `backend`'s calls for `task`, each skipped (with
    the registry's reason) where it cannot run here."""
    from couplescope import RunSpec
    from couplescope.backends import hosts

    params = []
    for host, name, tasks in hosts.table():
        if name == backend and task in tasks:
            reason = hosts.unavailable(host, RunSpec(model="simplenet", backend=backend, host=host, task=task))
            marks = [pytest.mark.skip(reason=f"the {host} host: {reason}")] if reason else []
            params.append(pytest.param(host, id=host, marks=marks))
    assert params, f"no host makes {backend}'s calls for --task {task}"
    return params
