"""couplescope: measure what coupling a simulation code to a PyTorch model costs.

The library API (importing it does not import torch or textual):
    couplescope.RunSpec      a frozen description of one variant
    couplescope.run(specs)   measure them in worker processes; returns the results document
    couplescope.load_preset(name, **overrides) -> list[RunSpec]
    couplescope.UsageError   raised for bad input
"""

__version__ = "0.1.0"

from couplescope.api import load_preset, run  # noqa: E402
from couplescope.errors import UsageError  # noqa: E402
from couplescope.spec import RunSpec  # noqa: E402

__all__ = ["RunSpec", "run", "load_preset", "UsageError", "__version__"]
