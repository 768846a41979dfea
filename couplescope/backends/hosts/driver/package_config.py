"""How a library host finds the user's install: as CMake's find_package finds its package config.

A library that installs a CMake package config (FTorch's FTorchConfig.cmake,
pytorch-fortran's pytorch_fort_proxy-config.cmake) is found by its users' CMake from
<Package>_DIR or a prefix in CMAKE_PREFIX_PATH. A library host looks the same way, first
in its own option (--ftorch-dir PREFIX, --pytorch-fortran-dir PREFIX), and hands CMake the
folder it found, so the driver is built against the install the user named. Cheap: files
and environment variables only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class PackageConfig:
    """One CMake package a library host builds against, and where its users name it."""

    name: str          # the CMake package name (find_package's first argument)
    file: str          # its config file: FTorchConfig.cmake, pytorch_fort_proxy-config.cmake
    field: str = ""    # the RunSpec field naming its prefix (ftorch_dir), if the host has one
    option: str = ""   # that field's flag (--ftorch-dir)

    @property
    def env(self) -> str:
        """The environment variable find_package reads for it (<Package>_DIR)."""
        return f"{self.name}_DIR"

    @property
    def subfolders(self) -> tuple[str, ...]:
        """Where find_package looks for the config file under a prefix (its
        <prefix>/(lib*|share)/cmake/<name>* and <prefix>/(lib*|share)/<name>*), the
        prefix itself first (a folder holding the file)."""
        return ("", *(f"{lib}/cmake/{self.name}" for lib in ("lib", "lib64", "share")),
                *(f"{lib}/{self.name}" for lib in ("lib", "lib64", "share")), "cmake", "lib/cmake", "lib64/cmake")

    def find(self, spec=None) -> tuple[str | None, str]:
        """(the folder holding the config file or None, where it was looked for): from the
        host's option, else <Package>_DIR, else each CMAKE_PREFIX_PATH entry."""
        given = getattr(spec, self.field, None) if spec is not None and self.field else None
        if given:
            return self.look_in([given]), f"{self.option} {given}"
        if os.environ.get(self.env):
            return self.look_in([os.environ[self.env]]), f"{self.env}={os.environ[self.env]}"
        if os.environ.get("CMAKE_PREFIX_PATH"):
            return self.look_in(os.environ["CMAKE_PREFIX_PATH"].split(os.pathsep)), "CMAKE_PREFIX_PATH"
        return None, ""

    def look_in(self, roots) -> str | None:
        """The first folder under `roots` (prefixes, or folders holding the file) that holds it."""
        for root in roots:
            if not root:
                continue
            root = os.path.abspath(os.path.expanduser(root))
            for sub in self.subfolders:
                folder = os.path.join(root, sub) if sub else root
                if os.path.isfile(os.path.join(folder, self.file)):
                    return os.path.realpath(folder)
        return None
