"""Compile the native host into a cache directory: `python -m couplescope.backends.native.build DIR NAME`.

Run as a subprocess by couplescope.backends.native.ensure_built (which holds the lock and
keeps this process's output as DIR/build.log). torch.utils.cpp_extension does the work
with ninja, compiling against the installed torch's headers and libraries; success is
recorded last, by writing DIR/built, so a build killed half-way is never mistaken for a
finished one.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    directory, name = argv
    from torch.utils.cpp_extension import load

    from couplescope.backends.native import DONE, SOURCES, UNITY

    work = os.path.join(directory, "work")
    os.makedirs(work, exist_ok=True)
    # one translation unit including every source (native.UNITY says why); its text names
    # the installed sources, which the build key hashes
    unity = os.path.join(work, UNITY)
    with open(unity, "w") as f:
        f.writelines(f'#include "{source}"\n' for source in SOURCES)
    module = load(name=name, sources=[unity], build_directory=work,
                  extra_cflags=["-O2", "-DNDEBUG"], verbose=True, with_cuda=False)
    path = module.__file__
    tmp = os.path.join(directory, f".{DONE}.tmp")
    with open(tmp, "w") as f:
        f.write(path + "\n")
    os.replace(tmp, os.path.join(directory, DONE))
    print(f"native host built: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
