"""The forpy host: the bridge backend's calls made through the user's own forpy, from Fortran.

The native host's EmbeddedHost reproduces forpy call for call in C++; this host runs the
real thing: the user's forpy_mod.F90 (--forpy-source FILE, else $FORPY_SOURCE: forpy is one
Fortran file that projects copy into their tree) compiled with their Fortran compiler (FC,
--fc) into a driver of ours that embeds the Python running couplescope (its venv's torch
and couplescope visible to it). Each call is made as forpy's users make it: no-copy views
of the Fortran arrays (ndarray_create_nocopy), the argument tuples (tuple_create,
setitem), the module's function called by name (call_py), and destroy of what was made
(couplescope.backends.hosts.driver.forpy_program). The build is cached by compiler,
flags, forpy's source and the Python it embeds; the driver runs in a process of its own.

Parent side here (cheap: no torch, no build); the worker's side is
couplescope.backends.hosts.driver.forpy_coupling.
"""

from __future__ import annotations

import os
import sys

from couplescope.backends.hosts.base import Host
from couplescope.backends.hosts.driver.build import fortran_compiler
from couplescope.backends.hosts.driver.forpy_install import NOT_FOUND, find_source, missing_tools, source_digest
from couplescope.protocol.errors import UsageError


class ForpyHost(Host):
    name = "forpy"
    summary = ("the user's forpy_mod.F90 in a Fortran driver embedding couplescope's Python, compiled "
               "with their compiler (FC or --fc); built on first use, cached")
    requires = ("forpy's forpy_mod.F90 (--forpy-source or FORPY_SOURCE), a Fortran compiler, cmake, "
                "the Python headers")
    calls = {
        ("bridge", "infer"): "couplescope.backends.hosts.driver.forpy_coupling:ForpyCoupling",
        ("bridge", "train"): "couplescope.backends.hosts.driver.forpy_coupling:ForpyCoupling",
    }

    def unavailable(self, spec=None) -> str | None:
        source, looked, why = find_source(spec)
        if source is None:
            return why or NOT_FOUND
        return missing_tools(spec)

    def validate(self, spec) -> None:
        if spec.device != "cpu":
            raise UsageError(f"--host forpy makes CPU calls only so far, not --device {spec.device}; "
                             "--host native replicates forpy on a GPU")
        if spec.dtype == "float16":
            raise UsageError("--host forpy: forpy's ndarray_create_nocopy takes real32 and real64 arrays "
                             "(and integers), not --dtype float16")
        if spec.layout != "fortran":
            raise UsageError("--host forpy: forpy's ndarray_create_nocopy makes Fortran-ordered views only, "
                             "so --layout c cannot be made through it; --host native simulates it")
        if spec.bridge_model == "compiled" and not spec.model.endswith(".py"):
            raise UsageError("--host forpy runs --bridge-model torchscript or eager, not compiled "
                             "(torch.compile's first call would fall inside a timed call)")
        if spec.backend == "mpi" and spec.task == "train":
            raise UsageError("--host forpy trains in one process only: data-parallel training needs the "
                             "worker's allreduce inside the module's step; run --backend bridge")
        module = spec.model if spec.model.endswith(".py") else ""
        name = os.path.splitext(os.path.basename(module))[0]
        if module and not name.isidentifier():
            raise UsageError(f"--host forpy imports {module} by name, as forpy's import_py does, and "
                             f"'{name}' is not a Python module name; rename the file")

    def environment(self, spec=None) -> dict:
        source, looked, _ = find_source(spec)
        return {"library": "forpy", "source": source or "", "found_from": looked,
                "version": f"sha256 {source_digest(source)}" if source else "",
                "compiler": fortran_compiler(spec), "fflags": os.environ.get("FFLAGS", ""),
                "python": sys.executable}


HOST = ForpyHost()
