//===- DropStateResults.cpp - A state is updated in its own buffer --------===//
//
// attn-drop-state-results (semantics in Passes.td): after bufferization a
// function result tied to a state argument (attn.updates) must be that
// argument's buffer. Upstream's drop-equivalent-buffer-results does this
// for private functions only, and silently keeps a result that is a copy;
// a kernel is public, and a copy would lose the caller's update.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/BitVector.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDROPSTATERESULTS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The state argument index result `i` of `func` is tied to, if any.
std::optional<unsigned> tiedArgument(func::FuncOp func, unsigned i) {
  auto index =
      func.getResultAttrOfType<IntegerAttr>(i, AttnDialect::kUpdatesAttr);
  if (!index)
    return std::nullopt;
  return static_cast<unsigned>(index.getInt());
}

bool hasStateResults(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (tiedArgument(func, i))
      return true;
  return false;
}

/// `value` seen through casts, which change no buffer.
Value bufferOf(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return value;
}

enum class Check { Ready, Waiting, Copied };

/// Whether every state result of `func` returns its argument (Ready), one
/// is the result of a call of a function still to be done (Waiting), or
/// one is another buffer (Copied, reported).
Check checkReturns(func::FuncOp func, const DenseSet<Operation *> &pending) {
  Check check = Check::Ready;
  func.walk([&](func::ReturnOp ret) {
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      std::optional<unsigned> arg = tiedArgument(func, i);
      if (!arg)
        continue;
      Value buffer = bufferOf(ret.getOperand(i));
      if (buffer == func.getArgument(*arg))
        continue;
      if (auto call = buffer.getDefiningOp<func::CallOp>()) {
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        if (callee && pending.contains(callee)) {
          check = Check::Waiting;
          continue;
        }
      }
      auto name =
          func.getArgAttrOfType<StringAttr>(*arg, AttnDialect::kNameAttr);
      ret.emitError("state '")
          << (name ? name.getValue() : StringRef("?"))
          << "' would be updated in a copy of its buffer, not in place: "
             "the caller would not see the update (a state may be read by "
             "nothing after the op that updates it)";
      check = Check::Copied;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return check;
}

/// Drops `func`'s state results, and at each call the results replaced by
/// the call's state operands.
void dropStateResults(func::FuncOp func, ModuleOp module) {
  llvm::BitVector dropped(func.getNumResults());
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (tiedArgument(func, i))
      dropped.set(i);
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(func, module))
    for (SymbolTable::SymbolUse use : *uses) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (!call)
        continue;
      OpBuilder b(call);
      SmallVector<Type> types;
      for (unsigned i = 0; i < call.getNumResults(); ++i)
        if (!dropped.test(i))
          types.push_back(call.getResult(i).getType());
      auto kept = func::CallOp::create(b, call.getLoc(), call.getCalleeAttr(),
                                       types, call.getOperands());
      unsigned next = 0;
      for (unsigned i = 0; i < call.getNumResults(); ++i)
        call.getResult(i).replaceAllUsesWith(
            dropped.test(i) ? call.getOperand(*tiedArgument(func, i))
                            : kept.getResult(next++));
      call.erase();
    }
  func.walk([&](func::ReturnOp ret) { ret->eraseOperands(dropped); });
  (void)func.eraseResults(dropped);
}

struct AttnDropStateResultsPass
    : mlir::attn::impl::AttnDropStateResultsBase<AttnDropStateResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DenseSet<Operation *> pending;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && hasStateResults(func))
        pending.insert(func);
    // Callees first: a kernel split by attn-split-prepare returns what its
    // NAME_prepared call returns.
    while (!pending.empty()) {
      func::FuncOp ready;
      for (Operation *op : pending) {
        auto func = cast<func::FuncOp>(op);
        Check check = checkReturns(func, pending);
        if (check == Check::Copied)
          return signalPassFailure();
        if (check == Check::Ready) {
          ready = func;
          break;
        }
      }
      if (!ready) {
        module.emitError("attn-drop-state-results: state results returned "
                         "through a cycle of calls");
        return signalPassFailure();
      }
      pending.erase(ready);
      dropStateResults(ready, module);
    }
  }
};

} // namespace
