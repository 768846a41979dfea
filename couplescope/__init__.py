"""couplescope: measure what coupling a simulation code to a PyTorch model costs."""

__version__ = "0.1.0"
