# One spec's GPU code through the CUDA toolkit's assembler (cmake -P, from
# ctest): attnc --target=nvptx --emit=ptx, then `ptxas -arch=CHIP -v`, which
# must assemble it with no register spills in any kernel.
# -D ATTNC, PTXAS, SPEC, CHIP, OUT [BLOCK].
set(block_flag)
if(BLOCK)
  set(block_flag --block ${BLOCK})
endif()
execute_process(
  COMMAND ${ATTNC} ${SPEC} ${block_flag} --target=nvptx --mcpu=${CHIP}
          --emit=ptx -o ${OUT}.ptx
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "attnc --emit=ptx failed (${status}) for ${SPEC}")
endif()
execute_process(
  COMMAND ${PTXAS} -arch=${CHIP} -v ${OUT}.ptx -o ${OUT}.cubin
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE log)
string(APPEND log "${output}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "ptxas failed (${status}) on ${OUT}.ptx:\n${log}")
endif()
string(REGEX MATCHALL "Compiling entry function '[^']*'|[0-9]+ bytes spill stores, [0-9]+ bytes spill loads"
  lines "${log}")
set(kernel "?")
set(kernels 0)
set(spills)
foreach(line ${lines})
  if(line MATCHES "Compiling entry function '([^']*)'")
    set(kernel ${CMAKE_MATCH_1})
    math(EXPR kernels "${kernels} + 1")
  elseif(NOT line MATCHES "^0 bytes spill stores, 0 bytes spill loads")
    list(APPEND spills "${kernel}: ${line}")
  endif()
endforeach()
if(kernels EQUAL 0)
  message(FATAL_ERROR "ptxas -v reported no kernel for ${OUT}.ptx:\n${log}")
endif()
if(spills)
  list(JOIN spills "\n  " text)
  message(FATAL_ERROR "register spills in ${OUT}.ptx:\n  ${text}")
endif()
message(STATUS "${kernels} kernels assembled for ${CHIP}, no spills")
