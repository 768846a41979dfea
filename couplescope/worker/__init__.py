"""The child process: `python -m couplescope.worker SPEC_JSON` measures one variant.

main (the entry point, the event channel, exit codes), engine (the measured loop,
the same for one process and for MPI ranks), profiling (the profiled window),
trace_summary (what a trace says), environment (what run_started reports). The parent
never imports this package: the contract between them is couplescope.protocol.
"""
