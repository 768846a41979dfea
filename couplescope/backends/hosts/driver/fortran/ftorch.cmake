# A library host's Fortran driver, built by couplescope against the user's installed library
# (couplescope/backends/hosts/driver/build.py runs it; nothing here is edited by hand).
# DRIVER_LIBRARY names the CMake package the driver links (FTorch): found through its package
# config, as its users find it (find_package; <Name>_DIR or CMAKE_PREFIX_PATH).
cmake_minimum_required(VERSION 3.15...3.31)
project(couplescope_driver LANGUAGES Fortran)

find_package(FTorch REQUIRED)
add_executable(couplescope_driver couplescope_shared.f90 driver.f90)
target_link_libraries(couplescope_driver PRIVATE FTorch::ftorch)

# What the results record of this build: the compiler, its flags, the library and its libtorch.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _type)
get_target_property(_ftorch_location FTorch::ftorch LOCATION)
file(WRITE "${CMAKE_BINARY_DIR}/couplescope-build.txt"
  "compiler=${CMAKE_Fortran_COMPILER}\n"
  "compiler_id=${CMAKE_Fortran_COMPILER_ID}\n"
  "compiler_version=${CMAKE_Fortran_COMPILER_VERSION}\n"
  "flags=${CMAKE_Fortran_FLAGS} ${CMAKE_Fortran_FLAGS_${_type}}\n"
  "build_type=${CMAKE_BUILD_TYPE}\n"
  "library_dir=${FTorch_DIR}\n"
  "library_version=${FTorch_VERSION}\n"
  "library_file=${_ftorch_location}\n"
  "torch_dir=${Torch_DIR}\n"
  "torch_version=${Torch_VERSION}\n")
