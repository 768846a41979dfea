"""The host contract: who makes a variant's timed calls, declared in one place.

A host is the program that makes the calls a backend describes: the worker's own Python
loop (python), C++ against libtorch as FTorch and forpy make them (native), and, through
the same contract, a user's installed library called from Fortran. A host is one module
in couplescope/backends/hosts/ defining `HOST`, an instance of a `Host` subclass, plus
one line in `couplescope.backends.hosts.REGISTRY`. It declares:

  what it is        name, summary, requires (in words), default_candidate
  what it serves    calls: (backend, task) -> the Coupling that makes those calls on this
                    host ("module:attribute", imported in the worker only); the python
                    host serves every backend for every task the backend declares;
                    train_calls: the --train-call forms its training step is made in
  may it run here   unavailable(spec): one line naming what is missing, or None;
                    validate(spec): refuse what it cannot make (a device, a dtype, a loss)
  its build         needs_build, key_inputs, build_key, build_dir, ensure_built, cache_state,
                    worker_env: what the parent compiles before a worker starts (cached)
  in the worker     open(backend, ctx): the Coupling; environment(): what results record

Everything a host declares is read by the registry's queries (`--list`, the form, the
`--host` choices, docs/hosts.md's table, the test matrix): adding a host adds it to all
of them. The parent side must stay cheap and torch-free.
"""

from __future__ import annotations

import importlib

from couplescope.protocol.options import TRAIN_CALLS


class Host:
    """A host's registry object. Override what differs."""

    name = ""
    #: one line: what it is and what its figures mean
    summary = ""
    #: what it needs to run, in words (--list, docs/hosts.md)
    requires = ""
    #: tried, in registry order, for a variant that names no host (the first available
    #: host serving the variant's backend and task is taken)
    default_candidate = False
    #: (backend name, task) -> "module:attribute" of the Coupling making those calls here
    calls: dict = {}
    #: the --train-call forms its training step is made in (every one, unless the host's
    #: library has fewer); the first is what a test that trains on every host asks for
    train_calls: tuple[str, ...] = TRAIN_CALLS

    @property
    def label_part(self) -> str:
        """The word a variant's default name carries for this host ("" for the default host)."""
        return f"{self.name}-host"

    # -- what it serves --------------------------------------------------------------------
    def serves(self, backend, task: str) -> bool:
        """Whether this host makes `backend`'s calls for `task` (a backend object)."""
        return task in backend.tasks and (backend.name, task) in self.calls

    def served(self, backend) -> tuple[str, ...]:
        """The tasks of `backend` this host makes calls for."""
        return tuple(task for task in backend.tasks if self.serves(backend, task))

    # -- may it run here (parent) ------------------------------------------------------------
    def unavailable(self, spec=None) -> str | None:
        """Why it cannot make calls here (for `spec`, if given), in one line; None if it can."""
        return None

    def validate(self, spec) -> None:
        """Raise UsageError for a spec this host cannot make the calls of (in the parent)."""

    # -- its build (parent) --------------------------------------------------------------------
    def needs_build(self, spec) -> bool:
        """Whether something must be compiled (or found in the cache) before `spec`'s worker starts."""
        return False

    def key_inputs(self, spec) -> tuple:
        """The spec's fields that change the build (a compiler, a library's path): variants
        with the same ones share one build key, worked out once per run."""
        return ()

    def build_key(self, spec) -> str:
        """What identifies one build: every input that changes what is compiled."""
        raise NotImplementedError

    def build_dir(self, key: str) -> str:
        raise NotImplementedError

    def ensure_built(self, spec, say, key: str) -> tuple[str, float | None]:
        """(what the worker is handed, build seconds or None when it came from the cache);
        `say(words)` reports progress while a build runs."""
        raise NotImplementedError

    def cache_state(self) -> str:
        """Where its builds are cached and whether this installation's is there (--list)."""
        return ""

    def worker_env(self, built: str) -> dict:
        """The variables that tell a worker where this run's build is."""
        return {}

    # -- the worker side ---------------------------------------------------------------------
    def open(self, backend, ctx):
        """The Coupling that makes `backend`'s calls on this host (in the worker)."""
        target = self.calls[(backend.name, ctx.spec.task)]
        module, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module), attribute)(ctx)

    def environment(self, spec=None) -> dict:
        """What run_started's environment records of this host (library, version, compiler)."""
        return {}
