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
