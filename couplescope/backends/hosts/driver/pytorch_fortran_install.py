"""Where the user's pytorch-fortran is, and the libtorch it links: found as its users find them.

pytorch-fortran (alexeedm/pytorch-fortran) installs two libraries, each with a CMake
package config under its prefix: pytorch_proxy (its C++ proxy over libtorch, in
lib/pytorch_proxy/) and pytorch_fort_proxy (the Fortran module torch_ftn, in
lib/pytorch_fort_proxy/, its .mod files in include/mod_files). Its examples'
CMakeLists find both with find_package, from a prefix. The pytorch-fortran host looks
for pytorch_fort_proxy-config.cmake as find_package does (--pytorch-fortran-dir PREFIX,
else pytorch_fort_proxy_DIR, else CMAKE_PREFIX_PATH:
couplescope.backends.hosts.driver.package_config), then for pytorch_proxy's in the same
prefix (else pytorch_proxy_DIR, else CMAKE_PREFIX_PATH), and hands CMake both folders.
pytorch-fortran installs no version; the libtorch it runs on is the one its proxy
library resolves (`ldd`). Cheap: files, environment variables and one ldd.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

from couplescope.backends.hosts.driver.build import missing_compiler
from couplescope.backends.hosts.driver.package_config import PackageConfig

FORTRAN_PACKAGE = PackageConfig("pytorch_fort_proxy", "pytorch_fort_proxy-config.cmake",
                                field="pytorch_fortran_dir", option="--pytorch-fortran-dir")
PROXY_PACKAGE = PackageConfig("pytorch_proxy", "pytorch_proxy-config.cmake")
NOT_FOUND = "pytorch-fortran not found: pass --pytorch-fortran-dir PREFIX or set pytorch_fort_proxy_DIR"


def prefix_of(config_dir: str) -> str:
    """The install prefix of a config folder (PREFIX/lib/pytorch_fort_proxy -> PREFIX)."""
    parent = os.path.dirname(config_dir)
    if os.path.basename(parent) == "cmake":   # PREFIX/lib/cmake/<name>
        parent = os.path.dirname(parent)
    return os.path.dirname(parent)


def find_configs(spec=None) -> tuple[str | None, str | None, str]:
    """(pytorch_fort_proxy's config folder or None, pytorch_proxy's or None, where they were
    looked for). pytorch_proxy is looked for in pytorch_fort_proxy's prefix first (one
    install holds both), then where find_package would look for it."""
    fortran, looked = FORTRAN_PACKAGE.find(spec)
    if fortran is None:
        return None, None, looked
    proxy = PROXY_PACKAGE.look_in([prefix_of(fortran)]) or PROXY_PACKAGE.find()[0]
    return fortran, proxy, looked


def why_not_found(spec=None) -> str | None:
    """One line naming what is missing of pytorch-fortran's install, or None."""
    fortran, proxy, looked = find_configs(spec)
    if fortran is None:
        return NOT_FOUND + (f" (no {FORTRAN_PACKAGE.file} under {looked})" if looked else "")
    if proxy is None:
        return (f"pytorch-fortran's {PROXY_PACKAGE.file} (its C++ proxy library) is not under "
                f"{prefix_of(fortran)}, beside {FORTRAN_PACKAGE.file}; set {PROXY_PACKAGE.env}")
    return None


def install_files(fortran_config: str, proxy_config: str) -> list[str]:
    """The files that identify an install: both packages' config files, their libraries and
    the torch_ftn module file (a rebuilt pytorch-fortran is a new build key)."""
    files = []
    for config in (fortran_config, proxy_config):
        files += sorted(glob.glob(os.path.join(config, "*.cmake")))
        prefix = prefix_of(config)
        for lib in ("lib", "lib64"):
            files += sorted(glob.glob(os.path.join(prefix, lib, "libpytorch_*proxy*")))
    files += sorted(glob.glob(os.path.join(prefix_of(fortran_config), "include", "mod_files", "*.mod")))
    return sorted(set(files))


def proxy_library(proxy_config: str) -> str | None:
    """pytorch-fortran's C++ proxy library (libpytorch_proxy.so) of an install, or None."""
    prefix = prefix_of(proxy_config)
    for lib in ("lib", "lib64"):
        found = sorted(glob.glob(os.path.join(prefix, lib, "libpytorch_proxy.*")))
        if found:
            return found[0]
    return None


def linked_libtorch(library: str | None) -> tuple[str, str]:
    """(the folder of the libtorch `library` resolves, its version) as the dynamic loader
    finds it (`ldd`), or ("", ""): the version from the torch wheel's version.py beside
    the libraries, or a libtorch distribution's build-version file."""
    if not library or shutil.which("ldd") is None:
        return "", ""
    try:
        out = subprocess.run(["ldd", library], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return "", ""
    match = re.search(r"libtorch_cpu\.so\S* => (\S+)", out)
    if not match:
        return "", ""
    folder = os.path.dirname(os.path.realpath(match.group(1)))
    return folder, torch_version_at(folder)


def torch_version_at(lib_folder: str) -> str:
    """The version of the torch whose libraries are in `lib_folder`, or ""."""
    root = os.path.dirname(lib_folder)
    try:
        with open(os.path.join(root, "version.py")) as f:   # a torch wheel: torch/lib/../version.py
            match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", f.read(), re.M)
            if match:
                return match.group(1)
    except OSError:
        pass
    try:
        with open(os.path.join(root, "build-version")) as f:   # a libtorch zip
            return f.read().strip()
    except OSError:
        return ""


def missing_tools(spec=None) -> str | None:
    return missing_compiler(spec) or (None if shutil.which("cmake") else
                                      "cmake not found (pytorch-fortran's package config is read by CMake)")
