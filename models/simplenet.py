"""SimpleNet, FTorch's examples 2 and 7: Linear(5, 5, no bias) with weight 2I.

Input [0, 1, 2, 3, 4] gives [0, 2, 4, 6, 8]; the expected output is exact, so the check
is `|got - expected| <= rtol * |expected|` against 2 x input rather than a reference run.
Under MPI, rank r's input is base + r (set through `offset`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from couplescope.workloads.base import Workload, estimate, fortran_array, numpy_dtype


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


WORKLOAD = SimpleNetWorkload()
