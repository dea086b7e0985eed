# attnc_find_halide(): the Halide backend's dependency, Halide 21 from PyPI
# (python/requirements.txt), installed by scripts/setup.sh into the .venv
# that Python_EXECUTABLE names. Sets ATTNC_HAVE_HALIDE (a cache entry: the
# tests read it too) and, when found, the imported target Halide::Halide.
#
# find_package(Halide) runs inside this function, so the variables it sets
# stay here and do not reach the find_package(MLIR) scope (mixing the two
# once switched LLVM_DIR to Halide's LLVM). Without Halide the backend is
# left out and said so; --backend=halide then says it is not in this build.
option(ATTNC_HALIDE "Build the Halide backend (needs Halide 21)" ON)

function(attnc_find_halide)
  set(ATTNC_HAVE_HALIDE OFF CACHE INTERNAL "")
  if(NOT ATTNC_HALIDE)
    message(STATUS "Halide backend: off (ATTNC_HALIDE=OFF)")
    return()
  endif()
  set(Halide_ROOT_DIR)
  if(Python_EXECUTABLE)
    # Where pip put the wheel, without importing it (which loads
    # libHalide.so).
    execute_process(COMMAND ${Python_EXECUTABLE} -c
      "import importlib.util as u; s = u.find_spec('halide'); print(s.submodule_search_locations[0] if s else '')"
      OUTPUT_VARIABLE package OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE result ERROR_QUIET)
    if(result EQUAL 0 AND package)
      set(Halide_ROOT_DIR "${package}")
    endif()
  endif()
  # cmake/FindHalide.cmake: the wheel's own HalideConfig.cmake needs CMake
  # 3.28, Debian 12 has 3.25.
  find_package(Halide 21 MODULE QUIET)
  if(NOT Halide_FOUND)
    message(WARNING "Halide backend: left out (Halide 21 not found; "
      "scripts/setup.sh installs it from PyPI into .venv)")
    return()
  endif()
  # The autoscheduler plugins, loaded by path at run time.
  set(ATTNC_HALIDE_PLUGIN_DIR "${Halide_PLUGIN_DIR}" CACHE INTERNAL "")
  message(STATUS "Halide backend: Halide ${Halide_VERSION} from ${Halide_ROOT_DIR}")
  set(ATTNC_HAVE_HALIDE ON CACHE INTERNAL "")
  set(ATTNC_HALIDE_VERSION ${Halide_VERSION} CACHE INTERNAL "")
endfunction()
