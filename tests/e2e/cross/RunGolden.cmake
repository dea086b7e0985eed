# One cross-compiled golden case (cmake -P, from ctest): inputs written on
# the host, the kernel run under the emulator, its outputs checked on the
# host. -D IO, CASE, PROGRAM, EMULATOR, DIR.
file(REMOVE_RECURSE ${DIR})
foreach(step
    "${IO};write;${CASE};${DIR}"
    "${EMULATOR};${PROGRAM};${DIR}"
    "${IO};check;${CASE};${DIR}")
  execute_process(COMMAND ${step} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    list(JOIN step " " command)
    message(FATAL_ERROR "${command}: ${status}")
  endif()
endforeach()
