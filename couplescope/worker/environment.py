"""What a worker reports about where it runs (run_started's environment)."""

from __future__ import annotations

import os


def environment() -> dict:
    import platform
    import socket
    import time

    import numpy as np
    import torch

    from couplescope.protocol import __version__

    cpu_model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:
        allowed = os.cpu_count()
    return {"couplescope": __version__, "torch": torch.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "cpu_model": cpu_model, "cores": os.cpu_count(), "cores_allowed": allowed,
            "hostname": socket.gethostname(), "pid": os.getpid(),
            "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cuda_available": torch.cuda.is_available(), **cpu_clock()}


def cpu_clock() -> dict:
    """The CPU frequency governor and clock where the OS shows them ("n/a" where it does
    not: a virtual machine often has no cpufreq): a governor other than performance lets
    the clock move between the variants of a comparison (couplescope.results.noise)."""
    governor = mhz = "n/a"
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") as f:
            governor = f.read().strip() or "n/a"
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            clocks = [float(line.split(":", 1)[1]) for line in f if line.startswith("cpu MHz")]
        if clocks:
            mhz = round(sum(clocks) / len(clocks), 1)
    except (OSError, ValueError):
        pass
    return {"cpu_governor": governor, "cpu_mhz": mhz}
