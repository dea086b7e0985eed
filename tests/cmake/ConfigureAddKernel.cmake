# cmake -DARGS=... -DEXPECT=<regex> [-DFAILS=ON] [-DCOMMAND=<regex>]
#       -DATTNC_SOURCE_DIR=... -DATTNC_EXECUTABLE=... -DWORK=<dir>
#       -P ConfigureAddKernel.cmake
# Configures tests/cmake/add_kernel with attnc_add_kernel(k SPEC ... ARGS):
# the configure must fail (FAILS) or succeed with output matching EXPECT,
# and on success the build's attnc command must match COMMAND.
file(REMOVE_RECURSE ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${ATTNC_SOURCE_DIR}/tests/cmake/add_kernel
    -B ${WORK} -G Ninja -DATTNC_SOURCE_DIR=${ATTNC_SOURCE_DIR}
    -DATTNC_EXECUTABLE=${ATTNC_EXECUTABLE} "-DARGS=${ARGS}"
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(FAILS AND result EQUAL 0)
  message(FATAL_ERROR "configure succeeded; expected it to fail:\n${all}")
elseif(NOT FAILS AND NOT result EQUAL 0)
  message(FATAL_ERROR "configure failed:\n${all}")
endif()
string(REGEX REPLACE "\n *" " " flat "${all}")
if(NOT flat MATCHES "${EXPECT}")
  message(FATAL_ERROR "expected /${EXPECT}/ in:\n${all}")
endif()
if(COMMAND)
  file(READ ${WORK}/build.ninja ninja)
  if(NOT ninja MATCHES "${COMMAND}")
    message(FATAL_ERROR "expected /${COMMAND}/ in the build's commands")
  endif()
endif()
