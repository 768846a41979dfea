"""Where the user's FTorch is, and what builds against it: found as its users find it.

FTorch installs a CMake package config (FTorchConfig.cmake); find_package finds it from
FTorch_DIR or a prefix in CMAKE_PREFIX_PATH. The ftorch host looks the same way, first in
--ftorch-dir (couplescope.backends.hosts.driver.package_config), and hands CMake the
folder it found, so the driver is built against the install the user named. Cheap: files
and environment variables only.
"""

from __future__ import annotations

import glob
import os
import shutil

from couplescope.backends.hosts.driver.build import fortran_compiler, missing_compiler
from couplescope.backends.hosts.driver.package_config import PackageConfig

__all__ = ["CONFIG_NAME", "NOT_FOUND", "find_config", "install_files", "library_version", "fortran_compiler",
           "missing_tools"]

CONFIG_NAME = "FTorchConfig.cmake"
PACKAGE = PackageConfig("FTorch", CONFIG_NAME, field="ftorch_dir", option="--ftorch-dir")
NOT_FOUND = "FTorch not found: pass --ftorch-dir PREFIX or set FTorch_DIR"


def find_config(spec=None) -> tuple[str | None, str]:
    """(the directory holding FTorchConfig.cmake or None, where it was looked for): from
    --ftorch-dir, else FTorch_DIR, else each CMAKE_PREFIX_PATH entry, as find_package looks
    in a prefix (lib/cmake/FTorch, lib64/cmake/FTorch, share/cmake/FTorch, or the folder)."""
    return PACKAGE.find(spec)


def install_files(config_dir: str) -> list[str]:
    """The files that identify an FTorch install: its package config files and the
    library files of its prefix (a rebuilt FTorch is a new build key)."""
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(config_dir)))
    files = sorted(glob.glob(os.path.join(config_dir, "*.cmake")))
    for lib in ("lib", "lib64"):
        files += sorted(glob.glob(os.path.join(prefix, lib, "libftorch*")))
    return files


def library_version(config_dir: str) -> str:
    """FTorch's version as its install says it (pkg-config's ftorch.pc; its CMake config
    carries none), or ""."""
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(config_dir)))
    for lib in ("lib", "lib64", "share"):
        try:
            with open(os.path.join(prefix, lib, "pkgconfig", "ftorch.pc")) as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            continue
    return ""


def missing_tools(spec=None) -> str | None:
    return missing_compiler(spec) or (None if shutil.which("cmake") else
                                      "cmake not found (FTorch's package config is read by CMake)")
