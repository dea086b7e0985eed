//===- AttnTypes.h - Element types as MLIR types ----------------*- C++ -*-===//
//
// The MLIR side of the element-type table (attn/Target/ElementType.h): the
// builtin type of each row and back. Lowerings take element types from
// their operands; this is for the places that start from the table (the
// DSL's declarations, kernel signatures).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ATTNTYPES_H
#define ATTN_IR_ATTNTYPES_H

#include "attn/Target/ElementType.h"

#include "mlir/IR/Types.h"

#include <optional>

namespace mlir {
class FloatType;
class MLIRContext;
} // namespace mlir

namespace mlir::attn {

/// f32 -> `f32`, bf16 -> `bf16`, f16 -> `f16`, i32 -> `i32` (signless).
Type mlirTypeOf(ElementType type, MLIRContext *context);

/// The type float ops compute in (kComputeType), as an MLIR type.
FloatType computeType(MLIRContext *context);

/// The table's row of `type`, or nothing for a type kernels do not take.
std::optional<ElementType> elementTypeOf(Type type);

} // namespace mlir::attn

#endif // ATTN_IR_ATTNTYPES_H
