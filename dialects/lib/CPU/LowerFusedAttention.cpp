//===- LowerFusedAttention.cpp - Flash-style attention on buffers ---------===//
//
// attn-lower-fused-attention: each attn.fused_attention (on memrefs, after
// bufferization) becomes the loop nest FlashEmitter.h describes, each
// attn.decode_attention DecodeEmitter.h's.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/IR/AttnOps.h"
#include "attn/Target/CpuTarget.h"

#include "DecodeEmitter.h"
#include "FlashEmitter.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERFUSEDATTENTION
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct AttnLowerFusedAttentionPass
    : mlir::attn::impl::AttnLowerFusedAttentionBase<
          AttnLowerFusedAttentionPass> {
  using AttnLowerFusedAttentionBase::AttnLowerFusedAttentionBase;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<FusedAttentionOp, DecodeAttentionOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    // The target's schedule; row-block, key-block and softmax-blocks
    // override it.
    FailureOr<attn::CpuSchedule> schedule = attn::cpuScheduleOf(getOperation());
    if (failed(schedule))
      return signalPassFailure();
    if (rowBlock)
      schedule->attentionRows = rowBlock;
    if (keyBlock)
      schedule->attentionKeys = keyBlock;
    if (softmaxBlocks)
      schedule->attentionSoftmaxBlocks = softmaxBlocks;
    schedule->overrideParallelWork(parallelWork);
    for (Operation *op : ops) {
      auto fused = dyn_cast<FusedAttentionOp>(op);
      auto decode = dyn_cast<DecodeAttentionOp>(op);
      if (fused ? !fused.hasBufferSemantics() : !decode.hasBufferSemantics()) {
        op->emitOpError("must be bufferized before attn-lower-fused-attention");
        return signalPassFailure();
      }
      OpBuilder builder(op);
      if (fused)
        FlashEmitter(builder, op->getLoc(), fused, *schedule, parallel).emit();
      else
        DecodeEmitter(builder, op->getLoc(), decode, *schedule, parallel)
            .emit();
      op->erase();
    }
  }
};

} // namespace
