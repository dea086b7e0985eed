//===- SharedLibrary.cpp - libattnc.so ------------------------------------===//
//
// libattnc.so is the runtime's static libraries linked whole into one
// shared library (runtime/CMakeLists.txt); a shared library needs one
// source of its own, and this is it. The public API is attnc/attnc.h (C)
// and attnc/Runtime/Runtime.h (C++).
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"
