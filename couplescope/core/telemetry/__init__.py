"""Watching a worker from outside: CPU/GPU samples of its process tree, and diagnostics.

sampler (what a sample holds, and the thread that takes them), gpu (NVML, nvitop-style:
"n/a" instead of an exception), diagnostics (plain-words warnings naming the setting to
change), listener (the session listener that ties them to a run).
"""
