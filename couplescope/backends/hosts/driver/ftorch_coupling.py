"""The ftorch host's Coupling: the torchscript backend's calls made by the user's FTorch.

The program (couplescope.backends.hosts.driver.ftorch_program) is written for the
variant's arrays and task, compiled against the FTorch the host found, and driven through
the shared file (couplescope.backends.hosts.driver.library_coupling). Inference phases are
FTorch's calls: marshal_in is torch_tensor_from_array (every input and the output),
forward torch_model_forward (FTorch copies the result into the Fortran output inside it),
marshal_out torch_delete. Training phases are example 11's: zero_grad, forward, loss,
backward, step.
"""

from __future__ import annotations

import os

from couplescope.backends.hosts.driver import ftorch_install as ftorch
from couplescope.backends.hosts.driver import ftorch_program as program
from couplescope.backends.hosts.driver.build import DriverBuild, driver_files
from couplescope.backends.hosts.driver.library_coupling import LibraryCoupling, torchscript_load_failure
from couplescope.protocol.errors import UsageError


def signature(ctx) -> program.Signature:
    """What the driver's text depends on, from the variant's host arrays."""
    def array(a):
        if a.dtype.name not in program.KINDS:
            raise UsageError(f"--host ftorch: FTorch takes real32 and real64 arrays, not {a.dtype.name}")
        return program.Array(a.dtype.name, a.ndim)

    calls = tuple(program.CallSignature(tuple(array(ctx.arrays[n]) for n in c.inputs),
                                        array(ctx.outputs[c.output])) for c in ctx.calls)
    return program.Signature(calls, task=ctx.spec.task, train_call=ctx.spec.train_call,
                             reload=bool(ctx.spec.reload_every_call) and ctx.spec.task != "train",
                             layout=ctx.spec.layout)


class FTorchCoupling(LibraryCoupling):
    host = "ftorch"

    def __init__(self, ctx) -> None:
        self.sig = signature(ctx)
        self.phases = self.sig.phases
        super().__init__(ctx)

    def driver_build(self) -> DriverBuild:
        spec = self.ctx.spec
        config, _ = ftorch.find_config(spec)
        if config is None:
            raise UsageError(ftorch.NOT_FOUND)
        files = driver_files("ftorch.cmake", program.program(self.sig))
        return DriverBuild(host="ftorch", files=files, compiler=ftorch.fortran_compiler(spec),
                           cmake_args=[f"-DFTorch_DIR={config}"], identity_files=ftorch.install_files(config),
                           what="the ftorch driver")

    def config(self) -> str:
        ctx, f = self.ctx, self.file
        calls, feeds = self.array_config()
        params = [(f.offsets[f"weight:{i}"], f.offsets[f"grad:{i}"], p.dtype.name, p.shape)
                  for i, p in enumerate(self.parameters())]
        return program.config_text(os.path.abspath(ctx.torchscript_path), f.total, self.capacity,
                                   f.offsets["timings"], f.offsets["losses"], ctx.spec.layout,
                                   ctx.extra.get("optimizer") or "sgd", float(ctx.extra.get("lr") or 0.0),
                                   calls, feeds, params)

    def library_facts(self) -> dict:
        config, _ = ftorch.find_config(self.ctx.spec)
        return {"library": "FTorch", "library_version": ftorch.library_version(config) if config else "",
                "fflags": os.environ.get("FFLAGS", "")}

    def load_failure(self, error: str) -> Exception:
        """A model the user's libtorch cannot load: one line naming both versions."""
        return torchscript_load_failure(self, "FTorch", error)
