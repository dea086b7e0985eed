# One precompiled header for the project's C++ targets: the LLVM, MLIR and
# standard headers most sources include. A source of the passes is a few
# hundred lines over some hundred thousand lines of MLIR headers, so parsing
# those headers is most of its compile time (docs/toolchain.md, "Build
# time"); read from one precompiled header built once per build tree, it is
# a fraction of it.
#
#   attnc_use_pch(<target>)
#
# (attnc_target_setup calls it) makes <target> reuse the precompiled header
# of AttncPch (CMake's REUSE_FROM) if its sources are all C++ and it links
# libMLIR.so (below). Every target of one build tree is compiled with the
# same language and code-generation flags (the presets set them globally);
# the definitions and include paths a target adds do not matter to clang.
# The fuzzers (compiled with other sanitizer flags) and the samples (built
# as a user would build them) say NO_PCH.
#
# Only headers that do not change with the project's sources are listed
# (LLVM's, MLIR's, the standard library's): a project header here would
# rebuild every source whenever it changed. A source still includes what it
# uses; `-DATTNC_PCH=OFF` builds without the header, which checks that.

option(ATTNC_PCH "Compile the C++ targets with one precompiled header of the MLIR/LLVM headers" ON)

set(ATTNC_PCH_HEADERS
  <algorithm> <cmath> <cstdint> <cstring> <functional> <limits> <map>
  <memory> <mutex> <optional> <set> <string> <utility> <vector>
  <llvm/ADT/ArrayRef.h>
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/STLExtras.h>
  <llvm/ADT/SmallVector.h>
  <llvm/ADT/StringExtras.h>
  <llvm/ADT/StringMap.h>
  <llvm/ADT/StringRef.h>
  <llvm/IR/IRBuilder.h>
  <llvm/IR/Module.h>
  <llvm/Support/Error.h>
  <llvm/Support/FileSystem.h>
  <llvm/Support/MemoryBuffer.h>
  <llvm/Support/raw_ostream.h>
  <llvm/Target/TargetMachine.h>
  <mlir/Dialect/AMX/AMXDialect.h>
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Bufferization/IR/Bufferization.h>
  <mlir/Dialect/ControlFlow/IR/ControlFlowOps.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/NVGPU/IR/NVGPUDialect.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  <mlir/Dialect/X86Vector/X86VectorDialect.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/IRMapping.h>
  <mlir/IR/MLIRContext.h>
  <mlir/IR/PatternMatch.h>
  <mlir/IR/TypeUtilities.h>
  <mlir/IR/Verifier.h>
  <mlir/Pass/Pass.h>
  <mlir/Pass/PassManager.h>
  <mlir/Transforms/DialectConversion.h>
  <mlir/Transforms/GreedyPatternRewriteDriver.h>
)

if(ATTNC_PCH)
  add_library(AttncPch OBJECT ${CMAKE_CURRENT_LIST_DIR}/AttncPch.cpp)
  target_compile_options(AttncPch PRIVATE ${ATTNC_WARNING_FLAGS})
  target_precompile_headers(AttncPch PRIVATE ${ATTNC_PCH_HEADERS})
endif()

# attnc_use_pch(<target>): registers <target>; attnc_apply_pch, deferred to
# the end of the top-level configure (when every target exists), gives it the
# header if all its sources are C++ and it links libMLIR.so, directly or
# through a project library. A target without MLIR must not see MLIR's
# headers: some of its inline functions are always emitted
# (LLVM_DUMP_METHOD), and the linker would then want libMLIR.so.
function(attnc_use_pch target)
  if(ATTNC_PCH)
    set_property(GLOBAL APPEND PROPERTY ATTNC_PCH_CANDIDATES ${target})
  endif()
endfunction()

# Whether <target> links MLIR: the result in <result-var>.
function(attnc_links_mlir target result)
  set(${result} OFF PARENT_SCOPE)
  set(pending ${target})
  set(seen)
  while(pending)
    list(POP_FRONT pending current)
    if(current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    if(current STREQUAL "MLIR")
      set(${result} ON PARENT_SCOPE)
      return()
    endif()
    if(NOT TARGET ${current})
      continue()
    endif()
    get_target_property(imported ${current} IMPORTED)
    set(libraries)
    foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      if(NOT imported OR property STREQUAL "INTERFACE_LINK_LIBRARIES")
        get_target_property(some ${current} ${property})
        if(some)
          list(APPEND libraries ${some})
        endif()
      endif()
    endforeach()
    foreach(library ${libraries})
      # $<LINK_LIBRARY:WHOLE_ARCHIVE,a,b> and other generator expressions:
      # the target names in them.
      string(REGEX REPLACE "^\\$<[A-Z_]+:([A-Z_]+,)?" "" library "${library}")
      string(REGEX REPLACE ">$" "" library "${library}")
      string(REPLACE "," ";" library "${library}")
      list(APPEND pending ${library})
    endforeach()
  endwhile()
endfunction()

function(attnc_apply_pch)
  get_property(candidates GLOBAL PROPERTY ATTNC_PCH_CANDIDATES)
  foreach(target ${candidates})
    get_target_property(sources ${target} SOURCES)
    set(cxx_only ON)
    foreach(source ${sources})
      if(NOT source MATCHES "\\.cpp$")
        set(cxx_only OFF)
      endif()
    endforeach()
    attnc_links_mlir(${target} links_mlir)
    if(cxx_only AND links_mlir)
      target_precompile_headers(${target} REUSE_FROM AttncPch)
    endif()
  endforeach()
endfunction()

if(ATTNC_PCH)
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL attnc_apply_pch)
endif()
