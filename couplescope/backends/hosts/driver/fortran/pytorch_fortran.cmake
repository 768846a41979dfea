# The pytorch-fortran host's Fortran driver, built by couplescope against the user's installed
# pytorch-fortran (couplescope/backends/hosts/driver/build.py runs it; nothing here is edited by hand).
# Its two packages are found through their package configs, as its examples' CMakeLists find
# them (find_package; <Name>_DIR or CMAKE_PREFIX_PATH): pytorch_proxy, its C++ proxy over
# libtorch, and pytorch_fort_proxy, its Fortran module torch_ftn.
cmake_minimum_required(VERSION 3.15...3.31)
project(couplescope_driver LANGUAGES Fortran)

find_package(pytorch_proxy REQUIRED)
find_package(pytorch_fort_proxy REQUIRED)
add_executable(couplescope_driver couplescope_shared.f90 driver.f90)
target_link_libraries(couplescope_driver PRIVATE pytorch_fort_proxy pytorch_proxy)

# What the results record of this build: the compiler, its flags and the library.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _type)
get_target_property(_fortran_location pytorch_fort_proxy LOCATION)
get_target_property(_proxy_location pytorch_proxy LOCATION)
file(WRITE "${CMAKE_BINARY_DIR}/couplescope-build.txt"
  "compiler=${CMAKE_Fortran_COMPILER}\n"
  "compiler_id=${CMAKE_Fortran_COMPILER_ID}\n"
  "compiler_version=${CMAKE_Fortran_COMPILER_VERSION}\n"
  "flags=${CMAKE_Fortran_FLAGS} ${CMAKE_Fortran_FLAGS_${_type}}\n"
  "build_type=${CMAKE_BUILD_TYPE}\n"
  "library_dir=${pytorch_fort_proxy_DIR}\n"
  "library_file=${_fortran_location}\n"
  "proxy_dir=${pytorch_proxy_DIR}\n"
  "proxy_file=${_proxy_location}\n")
