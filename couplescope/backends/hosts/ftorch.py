"""The ftorch host: the user's own FTorch, called from a Fortran driver of ours.

The native host reproduces FTorch call for call in C++; this host runs the real thing, so
what is measured is the user's FTorch version, the libtorch it was built against and what
their Fortran compiler does with FTorch's calls (gfortran 12 does not finalize the
results of FTorch's overloaded operators, so a training step leaks two tensors and their
autograd nodes a step: docs/training.md). The driver is written for the variant's arrays
(couplescope.backends.hosts.driver.ftorch_program), compiled with FC (--fc, default
gfortran) against FTorch found through its CMake package config, as its users find it:
--ftorch-dir PREFIX, else $FTorch_DIR, else $CMAKE_PREFIX_PATH. The build is cached by
compiler, flags, FTorch install and source. It runs in a process of its own, since the
user's FTorch links the libtorch it was built with.

Parent side here (cheap: no torch, no build); the worker's side is
couplescope.backends.hosts.driver.ftorch_coupling.
"""

from __future__ import annotations

import os

from couplescope.backends.hosts.base import Host
from couplescope.backends.hosts.driver.ftorch_install import (CONFIG_NAME, NOT_FOUND, find_config,
                                                              fortran_compiler, library_version,
                                                              missing_tools)
from couplescope.backends.hosts.driver.ftorch_program import TRAIN_CALLS
from couplescope.protocol.errors import UsageError

class FTorchHost(Host):
    name = "ftorch"
    summary = ("the user's FTorch, called from a Fortran driver compiled with their compiler "
               "(FC or --fc); built on first use, cached")
    requires = "FTorch installed (--ftorch-dir, FTorch_DIR or CMAKE_PREFIX_PATH), a Fortran compiler, cmake"
    calls = {
        ("torchscript", "infer"): "couplescope.backends.hosts.driver.ftorch_coupling:FTorchCoupling",
        ("torchscript", "train"): "couplescope.backends.hosts.driver.ftorch_coupling:FTorchCoupling",
    }
    train_calls = TRAIN_CALLS

    def unavailable(self, spec=None) -> str | None:
        config, looked = find_config(spec)
        if config is None:
            return NOT_FOUND + (f" (no {CONFIG_NAME} under {looked})" if looked else "")
        return missing_tools(spec)

    def validate(self, spec) -> None:
        if spec.device != "cpu":
            raise UsageError(f"--host ftorch makes CPU calls only so far, not --device {spec.device}; "
                             "--host native replicates FTorch on a GPU")
        if spec.dtype == "float16":
            raise UsageError("--host ftorch: FTorch's torch_tensor_from_array takes real32 and real64 "
                             "arrays, not --dtype float16")
        if spec.task != "train" and spec.grad_mode != "no_grad":
            raise UsageError(f"--host ftorch runs FTorch's own torch_model_forward, which has no "
                             f"--grad-mode {spec.grad_mode} (it runs under no_grad); --host native "
                             f"--grad-mode {spec.grad_mode} shows what FTorch would gain")
        if spec.task == "train":
            if spec.train_call not in self.train_calls:
                raise UsageError(f"--host ftorch trains as FTorch does: --train-call "
                                 f"{' or '.join(self.train_calls)}, not {spec.train_call}")
            if spec.loss != "mse":
                raise UsageError("--host ftorch: FTorch makes the mse loss (torch_tensor_mean of the "
                                 "squared difference, or torch_loss_mse), not --loss " + spec.loss)
            if spec.backend != "torchscript":
                raise UsageError("--host ftorch trains in one process only: data-parallel training "
                                 "needs the gradients averaged between backward and step, inside the "
                                 "Fortran step; run --backend torchscript")

    def environment(self, spec=None) -> dict:
        config, looked = find_config(spec)
        return {"library": "FTorch", "config_dir": config or "", "found_from": looked,
                "version": library_version(config) if config else "",
                "compiler": fortran_compiler(spec), "fflags": os.environ.get("FFLAGS", "")}


HOST = FTorchHost()
