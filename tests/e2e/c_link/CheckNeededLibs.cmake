# cmake -DBINARY=<file> [-DREADELF=<readelf>] -P CheckNeededLibs.cmake
#
# Fails unless every shared library BINARY needs (its DT_NEEDED entries) is
# libc or the dynamic loader: a kernel object called from C must not pull in
# a C++ runtime, libm, LLVM or MLIR.

if(NOT BINARY OR NOT EXISTS "${BINARY}")
  message(FATAL_ERROR "CheckNeededLibs: BINARY '${BINARY}' does not exist")
endif()
if(NOT READELF)
  find_program(READELF NAMES readelf llvm-readelf REQUIRED)
endif()

execute_process(COMMAND ${READELF} -d ${BINARY}
  OUTPUT_VARIABLE dynamic
  ERROR_VARIABLE errors
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "CheckNeededLibs: ${READELF} -d failed: ${errors}")
endif()

string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]*\\]" entries "${dynamic}")
set(needed)
foreach(entry ${entries})
  string(REGEX REPLACE ".*\\[([^]]*)\\].*" "\\1" library "${entry}")
  list(APPEND needed ${library})
endforeach()
if(NOT needed)
  message(FATAL_ERROR "CheckNeededLibs: no NEEDED entries in ${BINARY}:\n"
    "${dynamic}")
endif()
message(STATUS "${BINARY} needs: ${needed}")

set(unexpected)
foreach(library ${needed})
  if(NOT library MATCHES "^(libc\\.so\\.[0-9]+|ld-linux[-a-z0-9_.]*\\.so\\.[0-9]+)$")
    list(APPEND unexpected ${library})
  endif()
endforeach()
if(unexpected)
  message(FATAL_ERROR "CheckNeededLibs: ${BINARY} needs ${unexpected}; "
    "a kernel called from C must need nothing but libc")
endif()
