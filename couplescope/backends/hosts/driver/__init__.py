"""The library hosts' drivers: the user's own library called from a Fortran program of ours.

A library host (ftorch: the user's FTorch; forpy: the user's forpy) makes a variant's
calls from a Fortran driver compiled with the user's compiler against their library, in a
process of its own (their FTorch links the libtorch it was built with, which need not be
the worker's torch; forpy embeds a Python of its own). Here:

  driver_program     what every generated program shares: its frame (configuration, the
                     shared file's arrays, the commands, batches) and its configuration
  ftorch_program     the FTorch driver's Fortran source, for the variant's call signature
  forpy_program      the forpy driver's, likewise
  fortran/           couplescope_shared.f90 (the shared file and the commands, between
                     calls only), couplescope_forpy.f90 (the forpy driver's Python around
                     the calls), and each host's CMakeLists (<host>.cmake)
  build              the build with the user's compiler, cached by compiler, flags,
                     library install and source
  shared_file        the file both processes map: host arrays, snapshots, timings
  process            the driver as a child of the worker: commands and answers
  library_coupling   the worker's Coupling: build, share, start, call, batch, read back
  ftorch_coupling    what is FTorch's in it (signature, configuration, load failures)
  forpy_coupling     what is forpy's (signature, the module's config, state, errors);
                     forpy_side is its Python in the driver, forpy_install finds forpy
"""
