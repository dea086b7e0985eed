# attnc_add_kernel(<target> SPEC <spec.attn> [BLOCK <name>] [MCPU <cpu>]
#                  [TRIPLE <triple>] [TARGET cpu|nvptx] [OPT 0|1|2|3]
#                  [BACKEND mlir|halide] [HALIDE_SCHEDULE <schedule>]
#                  [ATTENTION <lowering>] [PARALLEL] [FLAGS <flag>...])
#
# An argument it does not know (a misspelled keyword: PARALEL, MCUP) is an
# error, not a kernel built without it. ATTENTION and HALIDE_SCHEDULE pass
# --attention= and --halide-schedule=; FLAGS passes any other attnc flags
# as they are (FLAGS --mattr=+avx512bf16 -fno-...).
#
# Compiles one block of a .attn spec at build time with attnc and makes
# <target> a static library holding the kernel's object; linking it gives
# the block's C function (docs/spec.md §5), and `#include "<target>.h"` its header.
# BLOCK may be omitted when the spec has a single block. MCPU and OPT are
# passed only when given, so attnc's defaults apply: the host CPU and -O2.
# MCPU may be a comma-separated list, best first
# (x86-64-v4,x86-64-v3,x86-64): one object, a variant per CPU, picked at
# run time from what the machine has. TRIPLE cross-compiles
# (aarch64-linux-gnu, ...): for a project built with that triple's
# toolchain (MCPU then names a CPU of it; default: generic).
#
# TARGET nvptx compiles GPU code (MCPU then names the compute capability,
# sm_90a by default): the object exports NAME (host pointers) and NAME_cuda
# (device pointers, a CUstream) and needs libc and libdl only; it opens the
# CUDA driver at its first call (docs/gpu.md).
#
# BACKEND picks the code generator of a CPU kernel (attnc --backend=...):
# mlir, attnc's own pipeline (the default), or halide, Halide with attnc's
# schedules (docs/halide.md; attnc must have been built with Halide, else
# the build step fails saying so). Either object exports the same symbols
# and `attnc --emit=header` writes the same header for both, so a host
# compiled against one backend's header links the other's object. A
# Halide-built object carries Halide's runtime, which calls pthread and
# dlopen: in libc since glibc 2.34 (and in musl); with an older glibc
# <target> links Threads::Threads and ${CMAKE_DL_LIBS} as well.
#
# Without PARALLEL the object needs libc only. With PARALLEL it is compiled
# with `attnc --parallel` and <target> links attnc's small runtime library
# (the `attnc_rt` target in attnc's build, else the installed package's
# attnc::attnc_rt, else ATTNC_RT_LIBRARY): its
# thread pool (ATTNC_NUM_THREADS) and its cache of kernel temporaries.
#
# attnc is the in-tree `attnc` target when there is one, else the installed
# package's (find_package(attnc) includes this file), else ATTNC_EXECUTABLE
# (found on PATH if unset). Without installing, a project that includes
# this file from a build tree sets ATTNC_EXECUTABLE (build/bin/attnc) and,
# for PARALLEL, ATTNC_RT_LIBRARY (build/lib/libattnc_rt.a).
function(attnc_add_kernel target)
  set(options PARALLEL)
  set(values SPEC BLOCK MCPU TRIPLE TARGET OPT BACKEND HALIDE_SCHEDULE
    ATTENTION)
  set(lists FLAGS)
  cmake_parse_arguments(ARG "${options}" "${values}" "${lists}" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    string(REPLACE ";" ", " known "${options};${values};${lists}")
    message(FATAL_ERROR "attnc_add_kernel(${target}): unknown argument(s) "
      "'${ARG_UNPARSED_ARGUMENTS}'; it takes ${known}")
  endif()
  if(ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "attnc_add_kernel(${target}): "
      "${ARG_KEYWORDS_MISSING_VALUES} needs a value")
  endif()
  if(NOT ARG_SPEC)
    message(FATAL_ERROR "attnc_add_kernel(${target}): SPEC is required")
  endif()
  get_filename_component(spec "${ARG_SPEC}" ABSOLUTE)
  if(TARGET attnc)
    set(compiler $<TARGET_FILE:attnc>)
    set(compiler_dependency attnc)
  elseif(TARGET attnc::attnc)
    set(compiler $<TARGET_FILE:attnc::attnc>)
    set(compiler_dependency attnc::attnc)
  else()
    if(NOT ATTNC_EXECUTABLE)
      find_program(ATTNC_EXECUTABLE attnc REQUIRED)
    endif()
    set(compiler ${ATTNC_EXECUTABLE})
    set(compiler_dependency ${ATTNC_EXECUTABLE})
  endif()
  set(flags)
  set(through "")
  if(ARG_BLOCK)
    list(APPEND flags --block ${ARG_BLOCK})
  endif()
  if(ARG_MCPU)
    list(APPEND flags --mcpu=${ARG_MCPU})
  endif()
  if(ARG_TRIPLE)
    list(APPEND flags --triple=${ARG_TRIPLE})
  endif()
  if(ARG_TARGET)
    list(APPEND flags --target=${ARG_TARGET})
  endif()
  if(DEFINED ARG_OPT)
    list(APPEND flags -O${ARG_OPT})
  endif()
  if(ARG_BACKEND)
    if(NOT ARG_BACKEND MATCHES "^(mlir|halide)$")
      message(FATAL_ERROR "attnc_add_kernel(${target}): BACKEND is mlir or "
        "halide, not '${ARG_BACKEND}'")
    endif()
    list(APPEND flags --backend=${ARG_BACKEND})
    set(through " through ${ARG_BACKEND}")
  endif()
  if(ARG_HALIDE_SCHEDULE)
    list(APPEND flags --halide-schedule=${ARG_HALIDE_SCHEDULE})
  endif()
  if(ARG_ATTENTION)
    list(APPEND flags --attention=${ARG_ATTENTION})
  endif()
  list(APPEND flags ${ARG_FLAGS})
  if(ARG_PARALLEL)
    list(APPEND flags --parallel)
    if(TARGET attnc_rt)
      set(runtime attnc_rt)
    elseif(TARGET attnc::attnc_rt)
      set(runtime attnc::attnc_rt)
    elseif(ATTNC_RT_LIBRARY)
      set(runtime ${ATTNC_RT_LIBRARY})
    else()
      message(FATAL_ERROR "attnc_add_kernel(${target} PARALLEL): set "
        "ATTNC_RT_LIBRARY to attnc's libattnc_rt.a (build/lib)")
    endif()
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/attnc_kernels/${target})
  set(object ${dir}/${target}.o)
  set(header ${dir}/${target}.h)
  add_custom_command(
    OUTPUT ${object} ${header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${compiler} ${spec} ${flags} -o ${object}
    COMMAND ${compiler} ${spec} ${flags} --emit=header -o ${header}
    DEPENDS ${spec} ${compiler_dependency}
    COMMENT "attnc: compiling ${ARG_BLOCK} of ${ARG_SPEC}${through}"
    VERBATIM)
  set_source_files_properties(${object} PROPERTIES
    EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${target} STATIC ${object} ${header})
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  if(ARG_PARALLEL)
    find_package(Threads REQUIRED)
    target_link_libraries(${target} INTERFACE ${runtime} Threads::Threads)
  endif()
  if(ARG_BACKEND STREQUAL "halide")
    # Halide's runtime (pthread, dlopen). FindThreads finds pthread in libc
    # where glibc >= 2.34 (or musl) has dlopen there too; else -ldl.
    find_package(Threads REQUIRED)
    target_link_libraries(${target} INTERFACE Threads::Threads)
    if(NOT CMAKE_HAVE_LIBC_PTHREAD)
      target_link_libraries(${target} INTERFACE ${CMAKE_DL_LIBS})
    endif()
  endif()
  if(ARG_TARGET STREQUAL "nvptx")
    # dlopen: in libc since glibc 2.34, in libdl before.
    target_link_libraries(${target} INTERFACE ${CMAKE_DL_LIBS})
  endif()
  target_include_directories(${target} INTERFACE ${dir})
endfunction()
