# FindHalide: Halide from its PyPI wheel, for find_package(Halide MODULE).
#
# The wheel ships HalideConfig.cmake, but it requires CMake 3.28 and Debian
# 12 has 3.25; this module reads the same wheel: include/Halide.h (its
# version), lib64/libHalide.so and the autoscheduler plugins. Give the
# wheel's directory (site-packages/halide) as Halide_ROOT_DIR.
#
# Defines Halide_FOUND, Halide_VERSION, Halide_PLUGIN_DIR and the imported
# target Halide::Halide (GLOBAL: the code-generation library that links it
# is linked from every directory).
find_path(Halide_INCLUDE_DIR Halide.h HINTS ${Halide_ROOT_DIR}/include
  NO_DEFAULT_PATH)
find_library(Halide_LIBRARY NAMES Halide HINTS ${Halide_ROOT_DIR}/lib64
  ${Halide_ROOT_DIR}/lib NO_DEFAULT_PATH)
if(Halide_INCLUDE_DIR AND EXISTS "${Halide_INCLUDE_DIR}/Halide.h")
  file(STRINGS "${Halide_INCLUDE_DIR}/Halide.h" version_lines
    REGEX "^#define HALIDE_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define HALIDE_VERSION_${part} ([0-9]+).*" "\\1"
      Halide_VERSION_${part} "${version_lines}")
  endforeach()
  set(Halide_VERSION
    "${Halide_VERSION_MAJOR}.${Halide_VERSION_MINOR}.${Halide_VERSION_PATCH}")
endif()
if(Halide_LIBRARY)
  get_filename_component(Halide_PLUGIN_DIR "${Halide_LIBRARY}" DIRECTORY)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Halide
  REQUIRED_VARS Halide_LIBRARY Halide_INCLUDE_DIR
  VERSION_VAR Halide_VERSION)

if(Halide_FOUND AND NOT TARGET Halide::Halide)
  add_library(Halide::Halide SHARED IMPORTED GLOBAL)
  # As the wheel's own config declares it (Halide-shared-targets.cmake).
  set_target_properties(Halide::Halide PROPERTIES
    IMPORTED_LOCATION "${Halide_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Halide_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "HALIDE_ENABLE_RTTI;HALIDE_WITH_EXCEPTIONS"
    INTERFACE_COMPILE_FEATURES cxx_std_17)
endif()
