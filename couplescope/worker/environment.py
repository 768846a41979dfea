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
            "cuda_available": torch.cuda.is_available()}
