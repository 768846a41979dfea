"""The pytorch-fortran host: the user's own pytorch-fortran, called from a Fortran driver of ours.

pytorch-fortran (alexeedm/pytorch-fortran) is a Fortran module, torch_ftn, over a C++
proxy library: its torch_module loads a TorchScript file (`load`), runs it on a
torch_tensor_wrap of Fortran arrays (`forward`, the result as a torch_tensor the caller
points a Fortran pointer at with `to_array`), and trains it one step per call (`train`:
SGD from `create_optimizer_sgd`, an L2 loss) and saves it (`save`). This host makes the
torchscript backend's calls through it, as its examples make them: inference per call
(add_array, forward, to_array and clear) and training with `--train-call pytorch-fortran`
(the call the native host's replica models), from a driver written for the variant's
arrays (couplescope.backends.hosts.driver.pytorch_fortran_program), compiled with FC
(--fc, default gfortran) against the install found as its users' CMake finds it:
--pytorch-fortran-dir PREFIX, else $pytorch_fort_proxy_DIR, else $CMAKE_PREFIX_PATH. The
build is cached by compiler, flags, install and source; the driver runs in a process of
its own, since pytorch-fortran links the libtorch it was built with.

Parent side here (cheap: no torch, no build); the worker's side is
couplescope.backends.hosts.driver.pytorch_fortran_coupling.
"""

from __future__ import annotations

import os

from couplescope.backends.hosts.base import Host
from couplescope.backends.hosts.driver.build import fortran_compiler
from couplescope.backends.hosts.driver.pytorch_fortran_install import find_configs, missing_tools, why_not_found
from couplescope.protocol.errors import UsageError
from couplescope.workloads import catalogue

COUPLING = "couplescope.backends.hosts.driver.pytorch_fortran_coupling:PytorchFortranCoupling"


class PytorchFortranHost(Host):
    name = "pytorch-fortran"
    summary = ("the user's pytorch-fortran (its torch_module), called from a Fortran driver compiled with "
               "their compiler (FC or --fc); built on first use, cached")
    requires = ("pytorch-fortran installed (--pytorch-fortran-dir, pytorch_fort_proxy_DIR or CMAKE_PREFIX_PATH), "
                "a Fortran compiler, cmake")
    calls = {("torchscript", "infer"): COUPLING, ("torchscript", "train"): COUPLING}
    train_calls = ("pytorch-fortran",)

    def unavailable(self, spec=None) -> str | None:
        return why_not_found(spec) or missing_tools(spec)

    def validate(self, spec) -> None:
        """What pytorch-fortran's torch_module cannot make, refused in one line each."""
        if spec.device != "cpu":
            raise UsageError(f"--host pytorch-fortran makes CPU calls only so far, not --device {spec.device} "
                             "(its GPU path needs a build with OpenACC and CUDA); --host native runs on a GPU")
        if spec.dtype == "float16":
            raise UsageError("--host pytorch-fortran: pytorch-fortran's add_array takes real32 and real64 arrays "
                             "(and integers), not --dtype float16")
        if spec.layout != "fortran":
            raise UsageError("--host pytorch-fortran: pytorch-fortran has no layout argument (it reverses the "
                             "dimensions itself, and its users declare their arrays reversed), so --layout c "
                             "cannot be made through it; --host native simulates it")
        if spec.task != "train":
            return
        if spec.train_call not in self.train_calls:
            raise UsageError(f"--host pytorch-fortran trains with its torch_module's train: --train-call "
                             f"pytorch-fortran, not {spec.train_call}")
        optimizer = spec.optimizer or catalogue.train_optimizer(spec.model)
        if optimizer != "sgd":
            given = (f"--optimizer {optimizer}" if spec.optimizer
                     else f"{optimizer} ({spec.model}'s own; pass --optimizer sgd)")
            raise UsageError(f"--host pytorch-fortran: its torch_module has one optimizer, "
                             f"create_optimizer_sgd, not {given}")
        if spec.loss != "mse":
            raise UsageError("--host pytorch-fortran: its train makes the mse loss (mse_loss), not --loss "
                             + spec.loss)
        if spec.backend != "torchscript":
            raise UsageError("--host pytorch-fortran trains in one process only: data-parallel training needs "
                             "the gradients averaged between backward and step, inside its one train call; "
                             "run --backend torchscript")

    def environment(self, spec=None) -> dict:
        fortran, proxy, looked = find_configs(spec)
        return {"library": "pytorch-fortran", "config_dir": fortran or "", "proxy_config_dir": proxy or "",
                "found_from": looked, "version": "", "compiler": fortran_compiler(spec),
                "fflags": os.environ.get("FFLAGS", "")}


HOST = PytorchFortranHost()
