"""The workload catalogue: one module per model, each exposing `WORKLOAD`.

This folder sits at the top of the repository and installs as `couplescope.models`.
See couplescope/workloads/base.py for the contract and REFERENCE-WORKLOADS for the specs.
"""
