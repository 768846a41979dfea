"""The front ends: independent siblings over the same pipeline.

cli/ (the `couplescope` command and its headless printer), tui/ (the Textual app),
api (couplescope.run for Python callers). Each turns its input into a RunRequest
(couplescope.core.request) and runs it through couplescope.core.pipeline; none imports
another. format is their shared way of writing numbers.
"""
