//===- AttnDialect.cpp - The attn dialect ---------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/IR/AttnOpsDialect.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/IR/AttnOps.cpp.inc"
      >();
}
