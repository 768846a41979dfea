"""The pytorch-fortran host's Coupling: the torchscript backend's calls made by the user's pytorch-fortran.

The program (couplescope.backends.hosts.driver.pytorch_fortran_program) is written for
the variant's arrays and task, compiled against the pytorch-fortran the host found, and
driven through the shared file (couplescope.backends.hosts.driver.library_coupling). The
host arrays are laid out row-major there: pytorch-fortran reverses the dimensions itself,
so its users declare their Fortran arrays with the dimensions reversed, and that is
what the driver's arrays are. Inference phases: marshal_in (add_array of the inputs),
forward (forward), marshal_out (to_array of the result, clear of the inputs). Training:
one phase, train, the library's one call per step.

pytorch-fortran's torch_module has no call that reads a parameter or a gradient (load,
forward, train, create_optimizer_sgd, save), so the weights come back as its users get
them: `save` into a TorchScript file, which the worker loads. The first step's check
compares those weights with eager PyTorch's (with SGD they are w - lr * grad); the
gradients themselves are not compared, and the check says so.
"""

from __future__ import annotations

import os

from couplescope.backends.hosts.driver import pytorch_fortran_install as install
from couplescope.backends.hosts.driver import pytorch_fortran_program as program
from couplescope.backends.hosts.driver.build import DriverBuild, driver_files, fortran_compiler
from couplescope.backends.hosts.driver.driver_program import FORTRAN_KINDS, config_text
from couplescope.backends.hosts.driver.library_coupling import LibraryCoupling, torchscript_load_failure
from couplescope.protocol.errors import UsageError

#: what the host says when a forward runs without flags (--grad-mode no_grad, the default)
AUTOGRAD_NOTE = ("pytorch-fortran's forward has no no_grad guard: called without flags (as its polynomial "
                 "example calls it) it runs with autograd on; --grad-mode inference passes "
                 "module_use_inference_mode (as its resnet_forward example does)")


def signature(ctx) -> program.Signature:
    """What the driver's text depends on, from the variant's host arrays."""
    def array(a):
        if a.dtype.name not in FORTRAN_KINDS:
            raise UsageError(f"--host pytorch-fortran: pytorch-fortran's add_array takes real32 and real64 arrays "
                             f"(and integers), not {a.dtype.name}")
        if not 1 <= a.ndim <= program.MAX_RANK:
            raise UsageError(f"--host pytorch-fortran: pytorch-fortran's add_array takes arrays of rank 1 to "
                             f"{program.MAX_RANK}, not {a.ndim}")
        return program.Array(a.dtype.name, a.ndim)

    calls = tuple(program.CallSignature(tuple(array(ctx.arrays[n]) for n in c.inputs),
                                        array(ctx.outputs[c.output])) for c in ctx.calls)
    return program.Signature(calls, task=ctx.spec.task,
                             reload=bool(ctx.spec.reload_every_call) and ctx.spec.task != "train",
                             grad_mode=ctx.spec.grad_mode)


class PytorchFortranCoupling(LibraryCoupling):
    host = "pytorch-fortran"
    array_order = "C"
    #: why the first step's check compares the weights only (training_checks reads it)
    no_gradients = ("pytorch-fortran's torch_module has no call that reads a gradient (load, forward, "
                    "train, create_optimizer_sgd, save)")

    def __init__(self, ctx) -> None:
        self.sig = signature(ctx)
        self.phases = self.sig.phases
        super().__init__(ctx)
        if ctx.spec.task != "train" and self.sig.grad_mode != "inference":
            self.report("log", message=AUTOGRAD_NOTE)

    def driver_build(self) -> DriverBuild:
        spec = self.ctx.spec
        fortran, proxy, _ = install.find_configs(spec)
        if fortran is None or proxy is None:
            raise UsageError(install.why_not_found(spec) or install.NOT_FOUND)
        files = driver_files("pytorch_fortran.cmake", program.program(self.sig))
        return DriverBuild(host="pytorch-fortran", files=files, compiler=fortran_compiler(spec),
                           cmake_args=[f"-D{install.FORTRAN_PACKAGE.env}={fortran}",
                                       f"-D{install.PROXY_PACKAGE.env}={proxy}"],
                           identity_files=install.install_files(fortran, proxy), what="the pytorch-fortran driver")

    def parameters(self) -> list:
        return []   # the weights cross as a saved TorchScript file (state), not as regions

    def config(self) -> str:
        ctx, f = self.ctx, self.file
        calls, feeds = self.array_config()
        calls = [(*call[:4], None) for call in calls]   # a step's loss is train's argument, not a buffer
        return config_text(os.path.abspath(ctx.torchscript_path), f.total, self.capacity, f.offsets["timings"],
                           f.offsets["losses"], ctx.spec.layout, "sgd", float(ctx.extra.get("lr") or 0.0),
                           calls, feeds, [])

    def library_facts(self) -> dict:
        _, proxy, found_from = install.find_configs(self.ctx.spec)
        torch_dir, torch_version = install.linked_libtorch(install.proxy_library(proxy) if proxy else None)
        return {"library": "pytorch-fortran", "library_version": "", "found_from": found_from,
                "torch_dir": torch_dir, "torch_version": torch_version,
                "forward_flags": ("module_use_inference_mode" if self.sig.grad_mode == "inference"
                                  else "none (autograd on)") if self.ctx.spec.task != "train" else "",
                "fflags": os.environ.get("FFLAGS", "")}

    def load_failure(self, error: str) -> Exception:
        """A model the user's libtorch cannot load: one line naming both versions."""
        return torchscript_load_failure(self, "pytorch-fortran", error)

    def state(self) -> dict:
        """{name: (weight, None)}: the module saved by the driver (`model%save`, outside the
        timed region) and loaded here; pytorch-fortran gives no gradients (no_gradients)."""
        import torch

        path = os.path.join(os.path.dirname(self.config_path), "state.pt")
        self.driver.ask(f"save {path}", "saved")
        saved = torch.jit.load(path, map_location="cpu")
        # by name: the check says which parameter is missing, should the saved module differ
        return {name: (p.detach().numpy().copy(), None) for name, p in saved.named_parameters()}
