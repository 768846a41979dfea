"""What every part of couplescope agrees on, in the standard library only.

events (the event table), spec (RunSpec), contract (how a worker is started and ends),
errors (UsageError). Nothing here imports another couplescope layer, numpy or torch.
"""

__version__ = "0.1.0"
