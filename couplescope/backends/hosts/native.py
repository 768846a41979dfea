"""The native host: C++ against libtorch makes the calls, as FTorch and forpy make them.

A replica, call for call, of what a Fortran code pays through FTorch (direct TorchScript)
or forpy (embedded Python), compiled on first use against the installed torch and cached
(couplescope.backends.native: the build, its key and its cache). docs/hosts.md says what
is inside each timed call and how it compares with the real libraries.
"""

from __future__ import annotations

from couplescope.backends.hosts.base import Host


class NativeHost(Host):
    name = "native"
    summary = "C++ against libtorch, as a Fortran code through FTorch or forpy"
    requires = "a C++ compiler, the Python headers, ninja and torch's C++ headers"
    default_candidate = True
    label_part = ""   # the default host: a variant's name does not say it
    calls = {
        ("torchscript", "infer"): "couplescope.backends.torchscript:NativeTorchScriptCoupling",
        ("torchscript", "train"): "couplescope.backends.native.train_host:NativeTraining",
        ("bridge", "infer"): "couplescope.backends.bridge_coupling:NativeBridgeCoupling",
        ("bridge", "train"): "couplescope.backends.bridge_training:NativeBridgeTraining",
        ("aoti", "infer"): "couplescope.backends.aoti:NativeAotiCoupling",
    }

    def unavailable(self, spec=None) -> str | None:
        from couplescope.backends import native

        return native.unavailable()

    def needs_build(self, spec) -> bool:
        return True

    def build_key(self, spec) -> str:
        from couplescope.backends import native

        return native.build_key()

    def build_dir(self, key: str) -> str:
        from couplescope.backends import native

        return native.build_dir(key)

    def ensure_built(self, spec, say, key: str) -> tuple[str, float | None]:
        from couplescope.backends import native

        return native.ensure_built(say, key=key)

    def cache_state(self) -> str:
        from couplescope.backends import native

        directory = native.build_dir()
        if native.built_module(directory):
            return f"built, cached in {directory}"
        return f"compiled on first use ({native.BUILD_TIME}) into {directory}"

    def worker_env(self, built: str) -> dict:
        from couplescope.protocol.contract import NATIVE_MODULE_ENV

        return {NATIVE_MODULE_ENV: built}


HOST = NativeHost()
