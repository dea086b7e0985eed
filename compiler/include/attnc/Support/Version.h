//===- Version.h - attnc's version and its git commit -----------*- C++ -*-===//
//
// Defined in Version.cpp from a header the build regenerates when the
// commit changes (cmake/GenerateVersion.cmake): only that file recompiles.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SUPPORT_VERSION_H
#define ATTNC_SUPPORT_VERSION_H

namespace attnc {

/// `0.1.0`: the project's version (CMakeLists.txt).
const char *version();
/// The git commit the build is from (12 hex digits, `-dirty` when tracked
/// files had changed), or `unknown` outside a git checkout.
const char *gitCommit();

} // namespace attnc

#endif // ATTNC_SUPPORT_VERSION_H
