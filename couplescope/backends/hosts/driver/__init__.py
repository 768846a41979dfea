"""The library hosts' drivers: the user's own library called from a Fortran program of ours.

A library host (ftorch: the user's FTorch) makes a variant's calls from a Fortran driver
compiled with the user's compiler against their installed library, in a process of its
own (their library links the libtorch it was built with, which need not be the worker's
torch). Here:

  ftorch_program     the driver's Fortran source, written for the variant's call signature
  fortran/           couplescope_shared.f90 (the shared file and the commands, between
                     calls only) and the CMakeLists.txt the build uses
  build              the build with the user's compiler, cached by compiler, flags,
                     library install and source
  shared_file        the file both processes map: host arrays, snapshots, timings
  process            the driver as a child of the worker: commands and answers
  library_coupling   the worker's Coupling: build, share, start, call, batch, read back
  ftorch_coupling    what is FTorch's in it (signature, configuration, load failures)
"""
