"""SimpleNet, FTorch's examples 2, 7 and 11: Linear(5, 5, no bias) with weight 2I.

Input [0, 1, 2, 3, 4] gives [0, 2, 4, 6, 8]; the expected output is exact, so the check
is `|got - expected| <= rtol * |expected|` against 2 x input rather than a reference run.
Under MPI, rank r's input is base + r (set through `offset`).

Under --task train it learns FTorch's example 11's task (`ShiftByOne`): new random inputs
every step, the target the input shifted by one place, SGD with lr 0.05; after the steps
it must map 1..5 to 5,1,2,3,4 within rtol 1e-3.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from couplescope.workloads.base import Workload, estimate, fortran_array, max_relative_error, numpy_dtype
from couplescope.workloads.learning_tasks import LearningTask

#: example 11's target: the input shifted by one place, (x1..x5) -> (x5, x1, x2, x3, x4)
SHIFT = [4, 0, 1, 2, 3]
#: example 11's final check: input 1..5 must give 5,1,2,3,4 within this relative tolerance
SHIFT_RTOL = 1e-3


class SimpleNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(5, 5, bias=False)
        with torch.no_grad():
            self.fc.weight.copy_(2.0 * torch.eye(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class SimpleNetWorkload(Workload):
    name = "simplenet"
    summary = "Linear(5, 5) with weight 2I (FTorch examples 2 and MPI); exact expected output"
    size_name = "batch"
    size_help = "rows of 5 values; row b is [b, b+1, b+2, b+3, b+4] (reference: 1)"
    default_size = 1
    dtype = "float32"

    def build(self, size, dtype, seed):
        return SimpleNet().to(getattr(torch, dtype)).eval()

    def host_arrays(self, size, dtype, seed, offset: float = 0.0):
        rows = np.arange(size, dtype=np.float64)[:, None] + np.arange(5)[None, :] + offset
        if size == 1:
            rows = rows[0]  # the reference passes a rank-1 array of 5 values
        return {"x": fortran_array(rows.astype(numpy_dtype(dtype)))}

    def expected(self, module, arrays, size):
        return {"y": 2.0 * arrays["x"]}

    def memory_estimate(self, size, dtype):
        # rows of 5 in and out; nothing else grows with the batch but the check
        return estimate(5 * size, 5 * size, dtype)

    train_lr = 0.05   # example 11's
    # example 11's loop: 10 000 steps learn the shift within 1e-3 (fewer do not: 10 steps
    # give 1..5 -> 1.0 2.8 5.3 7.0 8.5); --task train makes them unless --iterations is given
    train_steps = 10_000

    def learning_task(self, size, dtype, seed, expected):
        return ShiftByOne(seed)


class ShiftByOne(LearningTask):
    """FTorch's example 11: every step new uniform random inputs in [0, 1) and the target
    the input shifted by one place; learnt when 1..5 maps to 5,1,2,3,4 within 1e-3."""

    name = "shift the input by one place (FTorch's example 11)"
    fresh_data = True

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng([seed, 11])

    def targets(self, arrays, outputs):
        return {"y": np.zeros_like(outputs["y"], order="F")}

    def fill(self, step, arrays, targets):
        x = arrays["x"]
        x[...] = self.rng.random(x.shape)
        targets["y"][...] = x[..., SHIFT]

    def final_check(self, predict, losses):
        probe = np.arange(1, 6, dtype=np.float64)
        got = predict(probe)
        expected = probe[SHIFT]
        err = max_relative_error(np.asarray(got, dtype=np.float64).reshape(-1)[:5], expected)
        passed = bool(np.isfinite(err) and err <= SHIFT_RTOL)
        return {"check": "shift by one place", "passed": passed, "max_rel_error": err,
                "tolerance": SHIFT_RTOL,
                "message": f"input 1..5 gives {np.array2string(np.asarray(got).reshape(-1)[:5], precision=4)}"
                           f"; expected 5,1,2,3,4 within a relative tolerance of {SHIFT_RTOL:.4E}"}


WORKLOAD = SimpleNetWorkload()
