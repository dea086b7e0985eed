//===- AttnDialect.h - The attn dialect -------------------------*- C++ -*-===//

#ifndef ATTN_IR_ATTNDIALECT_H
#define ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "attn/IR/AttnOpsDialect.h.inc"

#endif // ATTN_IR_ATTNDIALECT_H
