"""Readers of processes, the system and the GPUs, shared by the parent's telemetry
(couplescope.core.telemetry) and the node sampler a multi-node job runs on each node
(couplescope.probes.node). Imports nothing of couplescope but the protocol."""
