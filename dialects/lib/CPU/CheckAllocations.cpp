//===- CheckAllocations.cpp - A failed malloc is a status -----------------===//
//
// attn-check-allocations (semantics in Passes.td). memref.alloc becomes a
// call of malloc, whose NULL the lowered code would write through: a kernel
// whose scratch cannot be allocated (a score buffer of a TiB is within the
// size limits) crashed its host. Each allocation's pointer is tested:
//
// - in the body of the entry itself, a null one frees what the entry
//   allocated before and returns ATTNC_STATUS_OUT_OF_MEMORY at once;
// - inside a loop (a GEMM's packed panel, a thread's scratch), where no
//   branch can leave, a null one skips the rest of that loop body (which
//   alone uses the buffer) and marks the entry failed; the entry returns
//   ATTNC_STATUS_OUT_OF_MEMORY once its loops are done. A parallel loop's
//   threads mark it with an atomic store.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/Target/KernelStatus.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCHECKALLOCATIONS
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// Whether `alloc` is freed by an op that comes before `point` in their
/// block (a dealloc anywhere inside an earlier op counts: on the error path
/// a buffer freed under a condition is then left, never freed twice).
bool freedBefore(memref::AllocOp alloc, Operation *point) {
  for (Operation *user : alloc->getUsers()) {
    if (!isa<memref::DeallocOp>(user))
      continue;
    Operation *top = point->getBlock()->findAncestorOpInBlock(*user);
    if (top && top->isBeforeInBlock(point))
      return true;
  }
  return false;
}

/// `pointer == 0` for the buffer `alloc`, built after it. LLVM folds
/// `malloc(n) == null` to false when the buffer does not escape (it may
/// assume that an allocation it could remove succeeds), so the pointer is
/// compared after an empty inline asm, which LLVM cannot see through.
Value isNull(OpBuilder &b, memref::AllocOp alloc) {
  Location loc = alloc.getLoc();
  b.setInsertionPointAfter(alloc);
  Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, alloc);
  Value bits = arith::IndexCastOp::create(b, loc, b.getI64Type(), pointer);
  Value opaque =
      LLVM::InlineAsmOp::create(b, loc, b.getI64Type(), ValueRange{bits},
                                /*asm_string=*/"", /*constraints=*/"=r,0",
                                /*has_side_effects=*/false,
                                /*is_align_stack=*/false,
                                LLVM::tailcallkind::TailCallKind::None,
                                LLVM::AsmDialectAttr(), ArrayAttr())
          .getResult(0);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, opaque, zero);
}

/// The status a call of another function of the kernel ABI returns (its
/// last result, an i32), if it is one: NAME calls NAME_prepare and
/// NAME_prepared, a block the blocks it calls.
std::optional<Value> calleeStatus(func::CallOp call) {
  if (call.getNumResults() == 0 ||
      !call.getResults().back().getType().isSignlessInteger(32))
    return std::nullopt;
  return call.getResults().back();
}

/// Whether `point` failed, built after it: an allocation's null pointer, or
/// a call's out-of-memory status.
Value failedAt(OpBuilder &b, Operation *point) {
  if (auto alloc = dyn_cast<memref::AllocOp>(point))
    return isNull(b, alloc);
  Location loc = point->getLoc();
  b.setInsertionPointAfter(point);
  Value outOfMemory =
      arith::ConstantIntOp::create(b, loc, ATTNC_STATUS_OUT_OF_MEMORY, 32);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               *calleeStatus(cast<func::CallOp>(point)),
                               outOfMemory);
}

/// A value of `type` for results no one will read (a failed iteration's).
FailureOr<Value> placeholder(OpBuilder &b, Location loc, Type type) {
  Type element = getElementTypeOrSelf(type);
  if ((type != element && !isa<VectorType>(type)) ||
      !isa<IntegerType, IndexType, FloatType>(element))
    return failure();
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(type)).getResult();
}

struct AttnCheckAllocationsPass
    : attn::impl::AttnCheckAllocationsBase<AttnCheckAllocationsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Allocations, and calls whose callee may fail (its out of memory is
    // the caller's), in the body or in loops.
    SmallVector<Operation *> inBody;
    SmallVector<memref::AllocOp> inLoops;
    SmallVector<func::CallOp> callsInLoops;
    func.walk([&](Operation *op) {
      auto call = dyn_cast<func::CallOp>(op);
      if (!isa<memref::AllocOp>(op) && !(call && calleeStatus(call)))
        return;
      if (op->getParentOp() == func)
        inBody.push_back(op);
      else if (call)
        callsInLoops.push_back(call);
      else
        inLoops.push_back(cast<memref::AllocOp>(op));
    });
    if (inBody.empty() && inLoops.empty() && callsInLoops.empty())
      return;
    if (func.getNumResults() != 1 ||
        !func.getResultTypes()[0].isSignlessInteger(32)) {
      func.emitError("allocates buffers or calls a kernel but does not return "
                     "only an i32 status: a failed allocation could not be "
                     "reported");
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("has several blocks: attn-check-allocations runs on "
                     "structured loops, before they become branches");
      return signalPassFailure();
    }
    if (!callsInLoops.empty()) {
      callsInLoops.front().emitError(
          "calls a function that returns a status inside a loop: "
          "attn-check-allocations cannot report its failure");
      return signalPassFailure();
    }
    if (!inLoops.empty() && failed(guardInLoops(func, inLoops)))
      return signalPassFailure();
    returnOnFailure(func, inBody);
  }

  /// Allocations inside loops: the rest of their block runs only when the
  /// buffer is there; otherwise the entry's failure mark is set, and each
  /// return of the entry reports it.
  LogicalResult guardInLoops(func::FuncOp func,
                             ArrayRef<memref::AllocOp> allocs) {
    OpBuilder b(func.getContext());
    Location loc = func.getLoc();
    b.setInsertionPointToStart(&func.getBody().front());
    auto markType = MemRefType::get({}, b.getI32Type());
    Value mark = memref::AllocaOp::create(b, loc, markType);
    Value ok = arith::ConstantIntOp::create(b, loc, ATTNC_STATUS_OK, 32);
    memref::StoreOp::create(b, loc, ok, mark);

    for (memref::AllocOp alloc : allocs) {
      Block *block = alloc->getBlock();
      Operation *terminator = block->getTerminator();
      for (Operation *user : alloc->getUsers())
        if (block->findAncestorOpInBlock(*user) == terminator)
          return alloc.emitError(
              "leaves its loop body: attn-check-allocations cannot skip "
              "that body when the allocation fails");
      Value null = isNull(b, alloc);
      // The ops after the test, and what of theirs the terminator reads.
      SmallVector<Operation *> rest;
      for (Operation *op = null.getDefiningOp()->getNextNode();
           op != terminator; op = op->getNextNode())
        rest.push_back(op);
      // (Its operands, or ops in its regions: scf.reduce's.)
      llvm::SetVector<Value> yielded;
      SmallVector<OpOperand *> readByTerminator;
      for (Operation *op : rest)
        for (OpResult result : op->getResults())
          for (OpOperand &use : result.getUses())
            if (block->findAncestorOpInBlock(*use.getOwner()) == terminator) {
              yielded.insert(result);
              readByTerminator.push_back(&use);
            }

      b.setInsertionPointAfterValue(null);
      auto guard =
          scf::IfOp::create(b, alloc.getLoc(), TypeRange(yielded.getArrayRef()),
                            arith::XOrIOp::create(b, alloc.getLoc(), null,
                                                  arith::ConstantIntOp::create(
                                                      b, alloc.getLoc(), 1, 1)),
                            /*withElseRegion=*/true);
      Block *then = guard.thenBlock();
      if (then->mightHaveTerminator())
        then->getTerminator()->erase();
      for (Operation *op : rest)
        op->moveBefore(then, then->end());
      b.setInsertionPointToEnd(then);
      scf::YieldOp::create(b, alloc.getLoc(), yielded.getArrayRef());

      Block *otherwise = guard.elseBlock();
      if (otherwise->mightHaveTerminator())
        otherwise->getTerminator()->erase();
      b.setInsertionPointToEnd(otherwise);
      Value failedStatus = arith::ConstantIntOp::create(
          b, alloc.getLoc(), ATTNC_STATUS_OUT_OF_MEMORY, 32);
      // Threads of a parallel loop may all fail: one atomic store each.
      memref::AtomicRMWOp::create(b, alloc.getLoc(),
                                  arith::AtomicRMWKind::assign, failedStatus,
                                  mark, ValueRange{});
      SmallVector<Value> placeholders;
      for (Value value : yielded) {
        FailureOr<Value> any = placeholder(b, alloc.getLoc(), value.getType());
        if (failed(any))
          return alloc.emitError("is in a loop body whose results include a ")
                 << value.getType()
                 << ": attn-check-allocations cannot skip that body when the "
                    "allocation fails";
        placeholders.push_back(*any);
      }
      scf::YieldOp::create(b, alloc.getLoc(), placeholders);
      for (OpOperand *use : readByTerminator)
        use->set(
            guard.getResult(llvm::find(yielded, use->get()) - yielded.begin()));
    }

    // The entry's one return reports a failure marked in a loop.
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    b.setInsertionPoint(ret);
    Value marked = memref::LoadOp::create(b, loc, mark);
    Value failedInLoop = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, marked,
        arith::ConstantIntOp::create(b, loc, ATTNC_STATUS_OK, 32));
    Value status = arith::SelectOp::create(b, loc, failedInLoop, marked,
                                           ret.getOperand(0));
    ret->setOperand(0, status);
    return success();
  }

  /// The failure points in the entry's body (allocations, calls that
  /// return a status): a failed one frees the buffers allocated before it
  /// and not yet freed, and returns the out-of-memory status.
  void returnOnFailure(func::FuncOp func, SmallVector<Operation *> points) {
    // What each failure must free, found while the body is one block.
    SmallVector<memref::AllocOp> allocs;
    for (Operation *point : points)
      if (auto alloc = dyn_cast<memref::AllocOp>(point))
        allocs.push_back(alloc);
    SmallVector<SmallVector<memref::AllocOp>> held(points.size());
    for (auto [i, point] : llvm::enumerate(points))
      for (memref::AllocOp alloc : allocs)
        if (alloc->isBeforeInBlock(point) && !freedBefore(alloc, point))
          held[i].push_back(alloc);

    // Splitting after each point leaves the next in the rest of the body.
    OpBuilder b(func.getContext());
    for (auto [index, toFree] : llvm::enumerate(held)) {
      Operation *point = points[index];
      Location loc = point->getLoc();
      Value failed = failedAt(b, point);
      Block *before = point->getBlock();
      Block *rest = before->splitBlock(failed.getDefiningOp()->getNextNode());

      Block *outOfMemory = b.createBlock(rest);
      for (memref::AllocOp earlier : toFree)
        memref::DeallocOp::create(b, loc, earlier);
      Value status =
          arith::ConstantIntOp::create(b, loc, ATTNC_STATUS_OUT_OF_MEMORY, 32);
      func::ReturnOp::create(b, loc, status);

      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, failed, outOfMemory, ValueRange{}, rest,
                               ValueRange{});
    }
  }
};

} // namespace
