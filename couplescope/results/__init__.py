"""Events in, numbers out: the results document and the statistics behind it.

builder (ResultsBuilder: results.json from events), stats (median, IQR, warnings),
ranks (figures across the ranks of a multi-process variant), telemetry (the telemetry
timeline and summary). Pure: no torch, no I/O, no other layer but the protocol.
"""
