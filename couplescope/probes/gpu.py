"""GPU telemetry through NVML (the `pynvml` module of nvidia-ml-py), nvitop-style.

Why every query goes through `query`: NVML is the part of telemetry most likely to be
partly there -- no GPU, no driver library, an old driver without a function, a field
the device does not support, a container that may not list processes. Each of those
gives the plain string "n/a" for that one value and the run goes on; nothing here
raises. When NVML cannot start at all, `GpuProbe.reason` says why in one line, which
the telemetry listener reports once (not once per sample).

Units: utilisation in percent, memory in bytes, power in watts, temperature in degrees
Celsius, SM clock in MHz.
"""

from __future__ import annotations

NA = "n/a"


def query(nvml, name: str, *args):
    """`nvml.<name>(*args)`, or "n/a" when the function is missing or NVML refuses."""
    fn = getattr(nvml, name, None) if nvml is not None else None
    if fn is None:
        return NA
    try:
        value = fn(*args)
    except Exception:  # NVMLError_* (NotSupported, FunctionNotFound, GpuIsLost ...), driver quirks
        return NA
    return NA if value is None else value


def _field(value, attr: str, scale: float = 1.0):
    """An attribute of a struct NVML returned, scaled; "n/a" for what is not there."""
    if value == NA:
        return NA
    got = getattr(value, attr, None)
    if not isinstance(got, (int, float)):
        return NA
    return got * scale if scale != 1.0 else got


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


class GpuProbe:
    """Open NVML once; `sample(pids)` reads every device. Never raises.

    `available` is False when NVML could not start (no GPU, no library); then `sample`
    returns "n/a" and `reason` says why.
    """

    def __init__(self) -> None:
        self.nvml = None
        self.handles: list = []
        self.names: list = []
        self.reason: str | None = None
        try:
            import pynvml
        except Exception as exc:  # nvidia-ml-py not installed
            self.reason = f"the pynvml module (nvidia-ml-py) cannot be imported: {exc}"
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, NoPermission ...
            self.reason = str(exc) or type(exc).__name__
            return
        self.nvml = pynvml
        count = query(pynvml, "nvmlDeviceGetCount")
        if count == NA or count < 1:
            self.reason = "NVML is present but reports no GPU"
            self.close()
            return
        for i in range(count):
            handle = query(pynvml, "nvmlDeviceGetHandleByIndex", i)
            self.handles.append(handle)
            self.names.append(_text(query(pynvml, "nvmlDeviceGetName", handle)) if handle != NA else NA)

    @property
    def available(self) -> bool:
        return self.nvml is not None and bool(self.handles)

    def sample(self, pids=()):
        """Per device: utilisation, memory, power, temperature, SM clock, the worker's memory."""
        if not self.available:
            return NA
        nvml, wanted = self.nvml, set(pids)
        devices = []
        for index, handle in enumerate(self.handles):
            if handle == NA:
                devices.append({"index": index, "name": NA})
                continue
            util = query(nvml, "nvmlDeviceGetUtilizationRates", handle)
            mem = query(nvml, "nvmlDeviceGetMemoryInfo", handle)
            power = query(nvml, "nvmlDeviceGetPowerUsage", handle)  # milliwatts
            temp = query(nvml, "nvmlDeviceGetTemperature", handle,
                         getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
            clock = query(nvml, "nvmlDeviceGetClockInfo", handle, getattr(nvml, "NVML_CLOCK_SM", 1))
            devices.append({
                "index": index, "name": self.names[index],
                "utilization": _field(util, "gpu"),
                "memory_utilization": _field(util, "memory"),
                "memory_used": _field(mem, "used"), "memory_total": _field(mem, "total"),
                "power_w": power / 1000.0 if isinstance(power, (int, float)) else NA,
                "temperature_c": temp, "sm_clock_mhz": clock,
                "worker_memory": self._worker_memory(handle, wanted),
            })
        return devices

    def _worker_memory(self, handle, pids: set):
        """Device memory held by the given processes; "n/a" when NVML cannot list them.

        In a container NVML may report host PIDs that match none of ours; then this is 0
        although the worker holds memory (see docs/telemetry.md).
        """
        total, readable = 0, False
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            procs = query(self.nvml, name, handle)
            if procs == NA:
                continue
            readable = True
            for p in procs:
                used = getattr(p, "usedGpuMemory", None)
                if getattr(p, "pid", None) in pids and isinstance(used, int):
                    total += used
        return total if readable else NA

    def close(self) -> None:
        if self.nvml is not None:
            query(self.nvml, "nvmlShutdown")
            self.nvml = None
