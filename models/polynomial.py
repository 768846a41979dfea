"""Polynomial (pytorch-fortran training example): MLP 1 -> 20 -> 20 -> 1 on a batch of 1024.

The reference trains this from the host (forward, loss, backward and an SGD step per call,
fitting a 4th-order polynomial). Under --task infer this workload is the inference forward
only, a tiny model where each call is almost all coupling overhead: the input is x
(batch, 1) uniform in [-1, 1]; weights use the seeded default init and are checked against
the eager reference. Under --task train it fits a 4th-order polynomial as the reference
does (`PolynomialFit`): new points every step, SGD with lr 0.1.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from couplescope.workloads.base import Workload, estimate, fortran_array, numpy_dtype, torch_dtype
from couplescope.workloads.learning_tasks import LearningTask


def polynomial(x: np.ndarray) -> np.ndarray:
    """The 4th-order polynomial the training task fits (ours: pytorch-fortran's example
    fits one of its own choosing)."""
    return x ** 4 - 0.5 * x ** 3 - 0.5 * x ** 2 + 0.25 * x + 0.1


class PolynomialNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 20), nn.ReLU(), nn.Linear(20, 20), nn.ReLU(),
                                 nn.Linear(20, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class PolynomialWorkload(Workload):
    name = "polynomial"
    summary = "MLP Linear(1,20)-ReLU-Linear(20,20)-ReLU-Linear(20,1), inference (pytorch-fortran)"
    size_name = "batch"
    size_help = "points per call, x is (batch, 1) in [-1, 1] (reference: 1024)"
    default_size = 1024
    dtype = "float32"
    # outputs cross zero across [-1, 1]: measure against 1e-3 of the largest
    relative_floor = 1e-3

    def build(self, size, dtype, seed):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = PolynomialNet()
        return model.to(torch_dtype(dtype)).eval()

    def host_arrays(self, size, dtype, seed):
        x = np.random.default_rng(seed).uniform(-1.0, 1.0, (size, 1))
        return {"x": fortran_array(x.astype(numpy_dtype(dtype)))}

    def memory_estimate(self, size, dtype):
        # two (batch, 20) activations alive at once in the reference call.
        # Measured peak RSS growth: 182 bytes per point (1e6 and 1e7), estimate 228.
        return estimate(size, size, dtype, working_elements=2 * 20 * size)


    train_lr = 0.1   # pytorch-fortran's polynomial example

    def learning_task(self, size, dtype, seed, expected):
        return PolynomialFit(seed)


class PolynomialFit(LearningTask):
    """New points x in [-1, 1] every step; the target is the polynomial at x."""

    name = "fit a 4th-order polynomial (pytorch-fortran's example)"
    fresh_data = True

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 4])

    def targets(self, arrays, outputs):
        return {"y": np.zeros_like(outputs["y"], order="F")}

    def fill(self, step, arrays, targets):
        x = arrays["x"]
        x[...] = self.rng.uniform(-1.0, 1.0, x.shape)
        targets["y"][...] = polynomial(x.astype(np.float64))


WORKLOAD = PolynomialWorkload()
