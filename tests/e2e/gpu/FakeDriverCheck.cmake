# One scenario of the GPU object on the fake CUDA driver (cmake -P, from
# ctest). -D PROGRAM, DRIVER, LOG, ARGS (,-list), ENV (,-list of NAME=VALUE),
# EXPECT (regexes the output must match, ,-list), LOG_EXPECT (regexes the
# driver's log must match), LOG_REJECT (regexes it must not match),
# and, with COUNT_LAUNCHES, ATTNC and SPEC: each call must log one launch per
# kernel of the spec's PTX.
# ctest passes the lists with commas: a semicolon would split the argument.
foreach(list ARGS ENV EXPECT LOG_EXPECT LOG_REJECT)
  string(REPLACE "," ";" ${list} "${${list}}")
endforeach()
file(REMOVE ${LOG})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ATTNC_CUDA_DRIVER=${DRIVER}
          FAKE_CUDA_LOG=${LOG} ${ENV} ${PROGRAM} ${ARGS}
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
set(log "")
if(EXISTS ${LOG})
  file(READ ${LOG} log)
endif()
set(report "output:\n${output}${errors}\ndriver log:\n${log}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} exited ${status}\n${report}")
endif()
foreach(pattern ${EXPECT})
  if(NOT output MATCHES "${pattern}")
    message(FATAL_ERROR "the output does not match '${pattern}'\n${report}")
  endif()
endforeach()
foreach(pattern ${LOG_EXPECT})
  if(NOT log MATCHES "${pattern}")
    message(FATAL_ERROR "the driver log does not match '${pattern}'\n${report}")
  endif()
endforeach()
foreach(pattern ${LOG_REJECT})
  if(log MATCHES "${pattern}")
    message(FATAL_ERROR "the driver log matches '${pattern}'\n${report}")
  endif()
endforeach()
if(COUNT_LAUNCHES)
  execute_process(COMMAND ${ATTNC} ${SPEC} --target=nvptx --emit=ptx
    OUTPUT_VARIABLE ptx RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "attnc --emit=ptx failed for ${SPEC}")
  endif()
  string(REGEX MATCHALL "\\.entry " entries "${ptx}")
  list(LENGTH entries LAUNCHES)
  string(REGEX MATCHALL "launch [^\n]*" launches "${log}")
  list(LENGTH launches count)
  list(LENGTH ARGS calls)
  math(EXPR expected "${LAUNCHES} * (${calls} - 1)")
  if(NOT count EQUAL expected)
    message(FATAL_ERROR "${count} launches logged, ${expected} expected "
      "(${LAUNCHES} per call)\n${report}")
  endif()
endif()
