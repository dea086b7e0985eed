//===- ForwardCallOutputs.cpp - A call writes the caller's output ---------===//
//
// NAME returns what NAME_prepared returns (see attn-split-prepare); once
// results are out-params, NAME would allocate a buffer for the call and copy
// it into its own output. Here the call gets NAME's output buffer instead.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFORWARDCALLOUTPUTS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The function argument `copy` writes, when it is a plain output: an entry
/// block argument of the same type as the copied buffer, used by nothing
/// else.
BlockArgument outputArgument(memref::CopyOp copy, func::FuncOp func) {
  auto arg = dyn_cast<BlockArgument>(copy.getTarget());
  if (!arg || arg.getOwner() != &func.getBody().front() || !arg.hasOneUse() ||
      arg.getType() != copy.getSource().getType())
    return nullptr;
  return arg;
}

struct AttnForwardCallOutputsPass
    : mlir::attn::impl::AttnForwardCallOutputsBase<AttnForwardCallOutputsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      BlockArgument output = outputArgument(copy, func);
      if (!alloc || !output || alloc->getBlock() != copy->getBlock())
        continue;
      // The buffer is written by one call, before the copy, and that is all.
      func::CallOp call;
      bool plain = true;
      for (Operation *user : alloc->getUsers()) {
        if (user == copy)
          continue;
        auto asCall = dyn_cast<func::CallOp>(user);
        if (!asCall || call || asCall->getBlock() != copy->getBlock() ||
            !asCall->isBeforeInBlock(copy))
          plain = false;
        call = asCall;
      }
      if (!plain || !call)
        continue;
      alloc.getResult().replaceAllUsesExcept(output, copy);
      copy.erase();
      alloc.erase();
    }
  }
};

} // namespace
