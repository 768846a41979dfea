# The forpy host's Fortran driver, built by couplescope with the user's forpy_mod.F90
# (couplescope/backends/hosts/driver/build.py runs it; nothing here is edited by hand).
# forpy is one source file compiled into the program that uses it; the program embeds the
# Python named by Python3_EXECUTABLE (the interpreter that runs couplescope), linked as
# forpy's README links it (python3-config --ldflags --embed: FindPython3's Development.Embed).
cmake_minimum_required(VERSION 3.18...3.31)
project(couplescope_driver LANGUAGES Fortran)

find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Embed)
add_executable(couplescope_driver forpy_mod.F90 couplescope_shared.f90 couplescope_forpy.f90 driver.f90)
target_link_libraries(couplescope_driver PRIVATE Python3::Python)

# What the results record of this build: the compiler, its flags, forpy and the Python.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _type)
file(WRITE "${CMAKE_BINARY_DIR}/couplescope-build.txt"
  "compiler=${CMAKE_Fortran_COMPILER}\n"
  "compiler_id=${CMAKE_Fortran_COMPILER_ID}\n"
  "compiler_version=${CMAKE_Fortran_COMPILER_VERSION}\n"
  "flags=${CMAKE_Fortran_FLAGS} ${CMAKE_Fortran_FLAGS_${_type}}\n"
  "build_type=${CMAKE_BUILD_TYPE}\n"
  "python=${Python3_EXECUTABLE}\n"
  "python_version=${Python3_VERSION}\n"
  "python_library=${Python3_LIBRARIES}\n")
