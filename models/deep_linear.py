"""Deep linear (pytorch-functional benchmark): L layers of Linear(4, 4) on a (4, 4) input.

Each layer is a tiny kernel, so per-call launch and dispatch overhead dominates: the case
where CUDA Graphs help most and where coupling overhead is easiest to see. This is the
reference's class-based variant: an nn.ModuleList looped over in forward.

There is no activation, so the network is one long affine map. With the default Linear
init every weight contracts, so after a few dozen layers the output is the map's fixed
point, set by the biases alone: it no longer depends on the input, and a transposed
(wrongly ordered) input would pass the check. The weights are therefore random orthogonal
matrices (norm-preserving) with small biases, which keeps the input visible and the
values O(1) for every L in the sweep, in float16 too.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from couplescope.workloads.base import Workload, estimate, fortran_array, numpy_dtype, torch_dtype


class DeepLinear(nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class DeepLinearWorkload(Workload):
    name = "deep-linear"
    summary = "L x Linear(4, 4) on a (4, 4) input: many tiny kernels (pytorch-functional)"
    size_name = "layers"
    size_help = "number of Linear(4, 4) layers (reference sweep: 250, 500, 750, 1000)"
    default_size = 250
    sweep = (250, 500, 750, 1000)
    dtype = "float32"
    # The column-major input takes a different matmul path from the reference, and the
    # rounding difference random-walks through up to 1000 layers. Over 30 seeds at
    # L = 1000 the worst error was 3.4e-6 of the largest output, and 8.5e-5 in relative
    # terms with a floor of 1e-2 of the largest output. So float32 gets that floor and
    # rtol 1e-3; a wrongly ordered input is off by 5 to 50.
    relative_floor = 1e-2
    rtol = {"float32": 1e-3, "float64": 1e-10, "float16": 5e-2, "bfloat16": 5e-2}

    def build(self, size, dtype, seed):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = DeepLinear(size)
            with torch.no_grad():
                for layer in model.layers:
                    nn.init.orthogonal_(layer.weight)
                    nn.init.uniform_(layer.bias, -0.02, 0.02)
        return model.to(torch_dtype(dtype)).eval()

    def host_arrays(self, size, dtype, seed):
        x = np.random.default_rng(seed).random((4, 4))
        return {"x": fortran_array(x.astype(numpy_dtype(dtype)))}

    def memory_estimate(self, size, dtype):
        # each layer is a Python module, a traced graph node and its TorchScript copy:
        # measured 83 KB per layer (1e3 to 1e4 layers); 96 KB here. 1e8 layers: 9 TB.
        return estimate(16, 16, dtype, model_bytes=96 * 1024 * size)


WORKLOAD = DeepLinearWorkload()
