//===- CNames.h - Names that reach the C interface of a kernel --*- C++ -*-===//
//
// A block's name is an exported C function (and NAME_prepare,
// NAME_prepared); its inputs, params, outputs and dims name the parameters
// and macros of the generated header, which includes <stdint.h> and is read
// by C and C++ compilers. These checks reject the names that would break
// that: what is not a C identifier, keywords, reserved identifiers, the C
// library's functions (a kernel called `free` would replace libc's) and its
// macros and types. The DSL's front end and the attn dialect's verifier of
// hand-written IR both apply them: one rule for both doors.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_CNAMES_H
#define ATTN_TARGET_CNAMES_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::attn::abi {

enum class CNameUse {
  /// An exported function: a block.
  Function,
  /// A parameter of a prototype in the header: an input, param, state or
  /// output.
  Parameter,
  /// The end of a macro's name after the block's prefix (NAME_D): a dim.
  /// Any C identifier.
  MacroSuffix,
};

/// Why `name` cannot be used as `use` in the C interface, or an empty
/// string when it can.
std::string cNameConflict(llvm::StringRef name, CNameUse use);

/// `name` as a message may quote it: non-printable bytes (a newline, a NUL)
/// escaped as \HH, so that a hostile name cannot forge lines of output.
std::string printableName(llvm::StringRef name);

} // namespace mlir::attn::abi

#endif // ATTN_TARGET_CNAMES_H
