//===- CNames.h - Names that reach the C interface of a kernel --*- C++ -*-===//
//
// A block's name is an exported C function (and NAME_prepare,
// NAME_prepared); its inputs, params and outputs name the parameters of
// the prototypes in the generated header, which includes <stdint.h> and is
// read by C and C++ compilers. These checks reject the names that would
// break that: keywords, reserved identifiers, the C library's functions (a
// kernel called `free` would replace libc's) and its macros and types.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SEMA_CNAMES_H
#define ATTNC_SEMA_CNAMES_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace attnc {

enum class CNameUse {
  /// An exported function: a block.
  Function,
  /// A parameter of a prototype in the header: an input, param or output.
  Parameter,
};

/// Why `name` cannot be used as `use` in the C interface, or an empty
/// string when it can.
std::string cNameConflict(llvm::StringRef name, CNameUse use);

} // namespace attnc

#endif // ATTNC_SEMA_CNAMES_H
