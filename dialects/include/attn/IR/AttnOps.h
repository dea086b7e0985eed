//===- AttnOps.h - Operations of the attn dialect ---------------*- C++ -*-===//

#ifndef ATTN_IR_ATTNOPS_H
#define ATTN_IR_ATTNOPS_H

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnShapeRules.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::attn {

/// The ops whose return_weights attribute adds the attention_weights
/// result. Its check runs before InferTypeOpAdaptor's, so that a missing,
/// extra or misshapen attention_weights is reported as such rather than as
/// a mismatch of inferred types.
template <typename ConcreteType>
class ReturnWeightsResult
    : public OpTrait::TraitBase<ConcreteType, ReturnWeightsResult> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyReturnWeights(cast<ConcreteType>(op));
  }
};

} // namespace mlir::attn

#define GET_OP_CLASSES
#include "attn/IR/AttnOps.h.inc"

namespace mlir::attn {

/// attention_weights is there exactly with return_weights, with the shape of
/// the shared rules (rules::attentionWeightsShape and its multi-head form).
LogicalResult verifyReturnWeights(AttentionOp op);
LogicalResult verifyReturnWeights(MultiheadAttentionOp op);

} // namespace mlir::attn

#endif // ATTN_IR_ATTNOPS_H
