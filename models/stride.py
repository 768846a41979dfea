"""StrideNet, the reference suite's "large stride" coupling test, kept faithful on purpose.

The model has no parameters: it allocates a zero tensor, copies 2 * x into it with a
Python double loop, element by element, and negates y[0, 1]. The loop is the point: the
benchmark measures an interpreter-heavy model, and its TorchScript form is scripted (not
traced, which would unroll N^2 copies) so the same loop runs in the TorchScript
interpreter. The negated element breaks the symmetry, so column-major memory read as
row-major (a silent transpose) fails the check instead of hiding.

The eager loop is slow at N = 512, so the expected output is analytic, and the check is
the reference's own: undo the negation, halve, and compare with the input.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from couplescope.workloads.base import Workload, estimate, fortran_array, max_relative_error, numpy_dtype


class StrideNet(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.zeros_like(x)
        for i in range(x.size(0)):
            for j in range(x.size(1)):
                y[i, j] = 2 * x[i, j]
        y[0, 1] = -y[0, 1]
        return y


class StrideWorkload(Workload):
    name = "stride"
    summary = "StrideNet: element-by-element Python loop y = 2x, y[0,1] negated (FTorch benchmarks)"
    size_name = "N"
    size_help = "the input is an N x N float32 array of uniform random numbers (reference: 512)"
    default_size = 512
    dtype = "float32"
    untrainable = ("StrideNet has no parameters (its forward copies element by element), so "
                   "there is nothing to train; train simplenet, cgdrag or polynomial")

    def validate_size(self, size):
        if size < 2:
            raise ValueError("N must be at least 2 (the check negates element [0, 1])")

    def build(self, size, dtype, seed):
        return StrideNet().eval()  # no parameters: nothing to seed or cast

    def host_arrays(self, size, dtype, seed):
        x = np.random.default_rng(seed).random((size, size))
        return {"x": fortran_array(x.astype(numpy_dtype(dtype)))}

    def script(self, module, example_inputs):
        return torch.jit.script(module)

    def expected(self, module, arrays, size):
        y = 2 * np.ascontiguousarray(arrays["x"])
        y[0, 1] = -y[0, 1]
        return {"y": y}

    def check(self, outputs, expected, arrays):
        x = np.asarray(arrays["x"])
        got = np.array(outputs["y"], dtype=np.float64)  # a copy: never touch the caller's output
        if got.shape != x.shape:
            return float("inf")
        got[0, 1] = -got[0, 1]
        return max_relative_error(got / 2, x)

    def memory_estimate(self, size, dtype):
        # N x N in and out, and the zeros_like(x) the model fills
        return estimate(size * size, size * size, dtype, working_elements=size * size)


WORKLOAD = StrideWorkload()
