"""The forpy host's Coupling: the bridge backend's calls made through the user's forpy.

The program (couplescope.backends.hosts.driver.forpy_program) is written for the variant's
arrays and task and compiled with the user's forpy_mod.F90, embedding the Python that runs
couplescope; it is driven through the shared file (couplescope.backends.hosts.driver.
library_coupling). In the driver the bridge module (the built-in bridge_module.py, or the
user's --model mine.py) is imported by name and initialised with the config the bridge
contract describes (docs/bridge.md), its phase clock included; each call is forpy's views,
tuples, call by name and destroys. The phases are the native host's EmbeddedHost's: the
host's marshal_in and marshal_out plus what the module timed (forward, and its own
marshal_in and marshal_out), added into one row after the iteration's last clock read.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from couplescope.backends.bridge_coupling import BUILTIN_MODULE, config as bridge_config
from couplescope.backends.clock import PHASES
from couplescope.backends.hosts.driver import forpy_install as forpy
from couplescope.backends.hosts.driver import forpy_program as program
from couplescope.backends.hosts.driver.build import DriverBuild, driver_files, fortran_compiler
from couplescope.backends.hosts.driver.driver_program import FORTRAN_KINDS, config_text
from couplescope.backends.hosts.driver.library_coupling import LibraryCoupling
from couplescope.backends.hosts.driver.process import driver_env
from couplescope.protocol.errors import UsageError


def signature(ctx) -> program.Signature:
    """What the driver's text depends on, from the variant's host arrays."""
    def array(a):
        if a.dtype.name not in FORTRAN_KINDS:
            raise UsageError(f"--host forpy: the forpy driver declares real32 and real64 arrays, not {a.dtype.name}")
        if not 1 <= a.ndim <= program.MAX_RANK:
            raise UsageError(f"--host forpy: forpy's ndarray_create_nocopy takes arrays of rank 1 to "
                             f"{program.MAX_RANK}, not {a.ndim}")
        return program.Array(a.dtype.name, a.ndim)

    calls = tuple(program.CallSignature(tuple(array(ctx.arrays[n]) for n in c.inputs),
                                        array(ctx.outputs[c.output])) for c in ctx.calls)
    return program.Signature(calls, task=ctx.spec.task,
                             reload=bool(ctx.spec.reload_every_call) and ctx.spec.task != "train")


class ForpyCoupling(LibraryCoupling):
    host = "forpy"
    phases = PHASES
    echo_output = True

    def __init__(self, ctx) -> None:
        self.sig = signature(ctx)
        self.module_path = os.path.abspath(ctx.extra.get("bridge_module") or BUILTIN_MODULE)
        super().__init__(ctx)

    def driver_build(self) -> DriverBuild:
        spec = self.ctx.spec
        source, _, why = forpy.find_source(spec)
        if source is None:
            raise UsageError(why or forpy.NOT_FOUND)
        files = driver_files("forpy.cmake", program.program(self.sig), "couplescope_forpy.f90")
        with open(source, errors="replace") as f:
            files[forpy.FILE_NAME] = f.read()
        return DriverBuild(host="forpy", files=files, compiler=fortran_compiler(spec),
                           cmake_args=[f"-DPython3_EXECUTABLE={sys.executable}"],
                           identity_files=[forpy.python_library()], what="the forpy driver")

    def parameters(self) -> list:
        return []   # the module's state() crosses as a file (state), not as regions

    def config(self) -> str:
        ctx, f = self.ctx, self.file
        folder = os.path.dirname(self.config_path)
        self.state_path = os.path.join(folder, "state.npz")
        settings = {
            "prefix": sys.prefix, "module": self.module_path, "shared": f.path, "capacity": self.capacity,
            "timings_offset": f.offsets["timings"], "state_path": self.state_path,
            # the bridge module's config (docs/bridge.md); the driver adds its phase clock
            "config": bridge_config(ctx.spec, ctx.size, ctx.dtype, ctx.device, None, ctx.torchscript_path,
                                    lr=ctx.extra.get("lr"), optimizer=ctx.extra.get("optimizer")),
        }
        settings_path = os.path.join(folder, "forpy.json")
        with open(settings_path, "w") as out:
            json.dump(settings, out)
        calls, feeds = self.array_config()
        calls = [(*call[:4], None) for call in calls]   # a step's loss is train's return value, not a buffer
        return config_text(settings_path, f.total, self.capacity, f.offsets["timings"], f.offsets["losses"],
                           ctx.spec.layout, "sgd", 0.0, calls, feeds, [])

    def driver_environment(self) -> dict:
        """The worker's interpreter's folder first on PATH, as an activated venv puts it: an
        embedded Python finds its prefix from the `python3` on PATH (a venv's pyvenv.cfg
        beside it), so the driver's Python is the worker's, with its torch and couplescope."""
        env = driver_env(self.ctx.spec.threads)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        return env

    def library_facts(self) -> dict:
        source, found_from, _ = forpy.find_source(self.ctx.spec)
        return {"library": "forpy", "library_dir": source or "", "found_from": found_from,
                "library_version": f"(sha256 {forpy.source_digest(source)})" if source else "",
                "fflags": os.environ.get("FFLAGS", "")}

    def raised(self, text: str) -> None:
        """A call whose module raised: a wrong output shape is a FAILED check, as on the
        other hosts; anything else is the module's error."""
        if text.startswith("ValueError: "):
            self.output_error = f"{self.sig.function} could not write the output: {text[len('ValueError: '):]}"
            return
        raise RuntimeError(text)

    def state(self):
        """The module's state() through the driver ({name: (weight, grad)}), or None when
        the module has none; the gradients the first time only (the first step's check)."""
        grads = not self._grads_read
        self.driver.ask("state" if grads else "weights", "state")
        self._grads_read = True
        with np.load(self.state_path) as saved:
            if "has_state" not in saved.files:
                return None
            out = {}
            for i in range(sum(1 for name in saved.files if name.startswith("name:"))):
                grad = saved[f"grad:{i}"] if f"grad:{i}" in saved.files else None
                out[str(saved[f"name:{i}"])] = (saved[f"weight:{i}"], grad)
            return out

    def save(self, path: str) -> None:
        from couplescope.backends.hosts.driver.process import DriverEnded

        try:
            self.driver.ask(f"save {path}", "saved")
        except DriverEnded as exc:
            raise UsageError(f"--save-model: {exc}") from None
