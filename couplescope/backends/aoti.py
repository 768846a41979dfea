"""After TorchScript: torch.export + AOTInductor.

TorchScript is deprecated in favour of torch.export; a code that couples a model through
TorchScript today will move to an exported, ahead-of-time compiled package. This backend
measures what that costs or saves per call, with the direct coupling's contract: the
model is exported and compiled into a .pt2 package for the host arrays' shapes and
strides (couplescope.backends.aoti_package, cached), loaded once, and every call wraps the
host memory without copying, runs the package and writes the result into the host output,
timed in the usual phases (marshal_in, forward, marshal_out; h2d and d2h on a GPU).

Two hosts make the calls: the native host (C++, couplescope/backends/native/aoti_host.cpp:
torch::inductor::AOTIModelPackageLoader, what a Fortran code would call) and the python
host (torch._inductor.aoti_load_package, what a Python simulation code would call). Export
and compile time is its own number (the model_compiled event), never part of the load
time or of any call.

Models: catalogue models that export, a user's .py module that provides the nn.Module and
its inputs (make_model, and make_inputs or --input-shape), or a .pt2 exported program of
the user's (torch.export.save). A TorchScript .pt file cannot be exported and is refused
with what to give instead (docs/aoti.md).
"""

from __future__ import annotations

from couplescope.backends.base import Backend, check_task
from couplescope.backends.torchscript import NativeTorchScriptCoupling, TorchScriptCoupling
from couplescope.protocol.errors import UsageError

#: the first torch with aoti_compile_and_package and aoti_load_package
MIN_TORCH = (2, 6)


class AotiCoupling(TorchScriptCoupling):
    """The python host: the package loaded with torch._inductor.aoti_load_package and called
    like the TorchScript module (the same wrapping, phases and checks)."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        from couplescope.backends.aoti_package import AotiPackage

        self.package = AotiPackage(ctx)

    def load(self) -> None:
        import torch._inductor

        self.compiled = self.package.ensure()
        index = self.ctx.device.split(":")[1] if ":" in self.ctx.device else None
        self.module = (torch._inductor.aoti_load_package(self.package.path) if index is None
                       else torch._inductor.aoti_load_package(self.package.path, device_index=int(index)))
        self.enter_grad_mode()


class NativeAotiCoupling(NativeTorchScriptCoupling):
    """The native host: AotiHost (aoti_host.cpp) loads the package with libtorch's
    AOTIModelPackageLoader and makes the calls in C++, as DirectHost does for TorchScript."""

    HOST = "AotiHost"

    def __init__(self, ctx) -> None:
        from couplescope.backends.aoti_package import AotiPackage

        self.package = AotiPackage(ctx)
        super().__init__(ctx)

    def model_path(self) -> str:
        return self.package.path

    def load(self) -> None:
        self.compiled = self.package.ensure()
        super().load()


class AotiBackend(Backend):
    name = "aoti"
    model_kinds = ("catalogue", "bridge-module", "exported-program")
    tasks = ("infer",)
    tasks_why = ("an AOTInductor package is inference-only (aoti_compile_and_package compiles "
                 "forward alone, with no autograd); train with --backend torchscript (FTorch's "
                 "way) or bridge (embedded Python, any optimizer)")

    def unavailable(self, spec=None) -> str | None:
        from couplescope.backends import native

        version = native.torch_version()
        if version is None:
            return "torch is not installed"
        numbers = tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())
        if numbers < MIN_TORCH:
            return (f"needs torch >= {'.'.join(map(str, MIN_TORCH))} (aoti_compile_and_package); "
                    f"torch {version} is installed")
        path, _ = native._compiler_identity(native.compiler())
        if path is None:
            return f"AOTInductor compiles C++: no C++ compiler ({native.compiler()} not found; install g++ or set CXX)"
        return None

    def validate(self, spec) -> None:
        check_task(self, spec.task)   # the task first: a training spec is refused before its model
        if spec.model.endswith((".pt", ".pth")):
            raise UsageError(f"{spec.model} is TorchScript, which torch.export cannot read: give aoti "
                             "a .py that defines make_model(size, dtype, seed) (and make_inputs(size, "
                             "seed) or --input-shape), or a .pt2 saved with torch.export.save "
                             "(docs/aoti.md)")
        super().validate(spec)

    def compiles_on_load(self, spec) -> bool:
        return True

    def open(self, ctx):
        return AotiCoupling(ctx)


BACKEND = AotiBackend()
