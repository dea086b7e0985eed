//===- DistinctResults.cpp - A copy per repeated result -------------------===//
//
// Every output of a kernel is a buffer of its own; a value returned twice
// gets a linalg.copy per repeat, before bufferization. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDISTINCTRESULTS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct AttnDistinctResultsPass
    : mlir::attn::impl::AttnDistinctResultsBase<AttnDistinctResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      OpBuilder b(ret);
      llvm::SmallPtrSet<Value, 8> seen;
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (seen.insert(value).second || !type || !type.hasStaticShape())
          continue;
        Value empty = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                              type.getElementType());
        operand.set(
            linalg::CopyOp::create(b, ret.getLoc(), value, empty).getResult(0));
      }
    });
  }
};

} // namespace
