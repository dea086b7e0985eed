# Whether this build can link libFuzzer harnesses (compiler/tools/attnc-fuzz,
# compiler/tools/attnc-driver-fuzz): the one place that decides it.
#
#   attnc_fuzzer_supported(<name> <result-var>)
#
# sets <result-var> to ON or OFF (saying why not, naming <name>) and
# ATTNC_FUZZ_FLAGS to the compile and link flags of the instrumented code.

function(attnc_fuzzer_supported name result)
  set(${result} OFF PARENT_SCOPE)
  set(flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  set(ATTNC_FUZZ_FLAGS ${flags} PARENT_SCOPE)

  # Needs clang's -fsanitize=fuzzer.
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(STATUS "${name}: not built (needs clang, have ${CMAKE_CXX_COMPILER_ID})")
    return()
  endif()

  # A sanitizer build (the `sanitize` preset) links the shared ASan runtime
  # into everything; the fuzzer's own static one would clash with it.
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=")
    message(STATUS "${name}: not built in a sanitizer build (it brings "
      "its own; the default build runs it)")
    return()
  endif()

  # The sanitizer and libFuzzer runtimes come from a separate package
  # (libclang-rt-22-dev, only recommended by clang-22): without them every
  # -fsanitize link fails, so try one link at configure time and leave the
  # fuzzer out with a message instead of breaking the build. The result is
  # cached, so the second harness does not link again.
  include(CheckCXXSourceCompiles)
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${flags}")
  set(CMAKE_REQUIRED_LINK_OPTIONS ${flags})
  check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }
]] ATTNC_HAVE_FUZZER_RUNTIME)
  if(NOT ATTNC_HAVE_FUZZER_RUNTIME)
    # Not cached: the next configure tries again (after the package arrives).
    unset(ATTNC_HAVE_FUZZER_RUNTIME CACHE)
    message(WARNING "${name}: not built: clang's libFuzzer/ASan/UBSan "
      "runtimes do not link (on Debian: apt-get install libclang-rt-22-dev; "
      "scripts/setup.sh installs it)")
    return()
  endif()
  set(${result} ON PARENT_SCOPE)
endfunction()

# A fuzzer's dictionary, written into the build at `out`: the hand-written
# words of `in` (the language's or MLIR's), then the op set's
# (attnc-fuzz-dict `kind`, dsl or ir, from AttnOps.def), so that a new op
# reaches the fuzzers without an edit of theirs. Builds with the target
# `target`.
#
#   attnc_fuzz_dictionary(<target> <in> <out> <kind>)
function(attnc_fuzz_dictionary target in out kind)
  if(NOT TARGET attnc-fuzz-dict)
    add_executable(attnc-fuzz-dict
      ${ATTNC_SOURCE_DIR}/compiler/tools/attnc-fuzz/attnc-fuzz-dict.cpp)
    target_include_directories(attnc-fuzz-dict PRIVATE
      ${ATTNC_SOURCE_DIR}/dialects/include)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND sh -c "{ cat \"$1\" && \"$0\" \"$2\"; } > \"$3\""
      $<TARGET_FILE:attnc-fuzz-dict> ${in} ${kind} ${out}
    DEPENDS attnc-fuzz-dict ${in}
      ${ATTNC_SOURCE_DIR}/dialects/include/attn/IR/AttnOps.def
    COMMENT "Writing the fuzzer dictionary ${out}"
    VERBATIM)
  add_custom_target(${target}-dictionary ALL DEPENDS ${out})
  add_dependencies(${target} ${target}-dictionary)
endfunction()
