//===- PrepareCalls.cpp - A called kernel's params prepared by the caller -===//
//
// After attn-split-prepare, a call of another kernel K in a caller C_prepared
// runs K, which prepares K's params on every call. Here C_prepare prepares
// them once, into a region of C's packed buffer, and the call becomes one of
// K_prepared with that slice. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Target/CpuTarget.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPREPARECALLS
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

bool isParamArgument(func::FuncOp func, unsigned index) {
  auto role = func.getArgAttrOfType<StringAttr>(index, AttnDialect::kRoleAttr);
  return role && role.getValue() == abi::nameOf(abi::ArgumentRole::Param);
}

/// A kernel attn-split-prepare split, with its two parts.
struct SplitKernel {
  func::FuncOp kernel, prepare, prepared;

  int64_t packedElements() {
    return kernel->getAttrOfType<IntegerAttr>(AttnDialect::kPackedElementsAttr)
        .getInt();
  }
};

/// One call of a split kernel in a caller's `_prepared`, and where its
/// prepared params go.
struct Site {
  func::CallOp call;
  SplitKernel *callee;
  /// The caller's `_prepare` arguments to prepare the callee's params from.
  SmallVector<unsigned> prepareArguments;
  int64_t offset = 0;
};

struct AttnPrepareCallsPass
    : mlir::attn::impl::AttnPrepareCallsBase<AttnPrepareCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    kernels.clear();
    SymbolTable symbols(module);
    FailureOr<CpuSchedule> schedule = cpuScheduleOf(module);
    if (failed(schedule))
      return signalPassFailure();
    alignment = schedule->packedAlignmentFloats;

    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(AttnDialect::kPackedElementsAttr))
        continue;
      auto prepare = symbols.lookup<func::FuncOp>(
          abi::entrySymbol(kernel.getSymName(), abi::Entry::Prepare));
      auto prepared = symbols.lookup<func::FuncOp>(
          abi::entrySymbol(kernel.getSymName(), abi::Entry::Prepared));
      if (!prepare || !prepared || prepare.isExternal() ||
          prepared.isExternal())
        continue;
      kernels[kernel.getSymName()] = {kernel, prepare, prepared};
      // The parts of a kernel that is only called are not exported either.
      if (kernel.isPrivate()) {
        prepare.setPrivate();
        prepared.setPrivate();
      }
    }

    // Callees first: a caller's packed size includes its callees'.
    llvm::SetVector<SplitKernel *> order;
    llvm::DenseSet<SplitKernel *> visiting;
    for (auto &[name, kernel] : kernels)
      if (failed(visit(kernel, order, visiting)))
        return signalPassFailure();
    for (SplitKernel *kernel : order)
      if (failed(prepareCalls(*kernel)))
        return signalPassFailure();
  }

  /// The split kernels called by `kernel`'s `_prepared`.
  SmallVector<SplitKernel *> calleesOf(SplitKernel &kernel) {
    SmallVector<SplitKernel *> callees;
    kernel.prepared.walk([&](func::CallOp call) {
      auto it = kernels.find(call.getCallee());
      if (it != kernels.end())
        callees.push_back(&it->second);
    });
    return callees;
  }

  LogicalResult visit(SplitKernel &kernel,
                      llvm::SetVector<SplitKernel *> &order,
                      llvm::DenseSet<SplitKernel *> &visiting) {
    if (order.contains(&kernel))
      return success();
    if (!visiting.insert(&kernel).second)
      return kernel.kernel.emitOpError("calls itself, directly or through "
                                       "other kernels; kernels cannot be "
                                       "recursive");
    for (SplitKernel *callee : calleesOf(kernel))
      if (failed(visit(*callee, order, visiting)))
        return failure();
    visiting.erase(&kernel);
    order.insert(&kernel);
    return success();
  }

  /// The calls of `caller.prepared` whose params can be prepared by
  /// `caller.prepare`, each with its region of the packed buffer.
  SmallVector<Site> findSites(SplitKernel &caller, int64_t &size) {
    func::FuncOp prepared = caller.prepared;
    unsigned ownArguments = caller.kernel.getNumArguments();
    // The caller's `_prepare` takes its params, in order.
    DenseMap<unsigned, unsigned> prepareIndex;
    for (unsigned i = 0, n = 0; i < ownArguments; ++i)
      if (isParamArgument(caller.kernel, i))
        prepareIndex[i] = n++;
    std::map<std::pair<SplitKernel *, SmallVector<unsigned>>, int64_t> shared;
    SmallVector<Site> sites;
    for (auto call : prepared.getBody().front().getOps<func::CallOp>()) {
      auto it = kernels.find(call.getCallee());
      if (it == kernels.end() || it->second.packedElements() == 0)
        continue;
      Site site{call, &it->second, {}, 0};
      func::FuncOp callee = site.callee->kernel;
      bool fromParams = true;
      for (unsigned i = 0, e = call.getNumOperands(); i < e && fromParams;
           ++i) {
        if (!isParamArgument(callee, i))
          continue;
        auto arg = dyn_cast<BlockArgument>(call.getOperand(i));
        fromParams = arg && arg.getOwner()->getParentOp() == prepared &&
                     prepareIndex.count(arg.getArgNumber());
        if (fromParams)
          site.prepareArguments.push_back(
              prepareIndex.lookup(arg.getArgNumber()));
      }
      if (!fromParams)
        continue;
      auto [at, inserted] =
          shared.try_emplace({site.callee, site.prepareArguments}, 0);
      if (inserted) {
        at->second = llvm::alignTo(size, alignment);
        size = at->second + site.callee->packedElements();
      }
      site.offset = at->second;
      sites.push_back(std::move(site));
    }
    return sites;
  }

  LogicalResult prepareCalls(SplitKernel &caller) {
    int64_t size = caller.packedElements();
    SmallVector<Site> sites = findSites(caller, size);
    if (sites.empty())
      return success();
    MLIRContext *context = &getContext();
    auto packedType = RankedTensorType::get({size}, Float32Type::get(context));
    OpBuilder b(context);

    // `_prepare`: the packed buffer grows (its insert_slice chain back to
    // the tensor.empty) and takes each region's prepared params.
    auto ret =
        cast<func::ReturnOp>(caller.prepare.getBody().front().getTerminator());
    Value buffer = ret.getOperand(0);
    for (Value at = buffer;;) {
      at.setType(packedType);
      if (auto insert = at.getDefiningOp<tensor::InsertSliceOp>()) {
        at = insert.getDest();
        continue;
      }
      if (!at.getDefiningOp<tensor::EmptyOp>())
        return caller.prepare.emitOpError(
            "does not build its packed buffer from a tensor.empty; was it "
            "made by attn-split-prepare?");
      break;
    }
    b.setInsertionPoint(ret);
    llvm::DenseSet<int64_t> filled;
    for (Site &site : sites) {
      if (!filled.insert(site.offset).second)
        continue;
      SmallVector<Value> params;
      for (unsigned index : site.prepareArguments)
        params.push_back(caller.prepare.getArgument(index));
      auto call = func::CallOp::create(b, site.call.getLoc(),
                                       site.callee->prepare, params);
      int64_t elements = site.callee->packedElements();
      buffer = tensor::InsertSliceOp::create(
          b, site.call.getLoc(), call.getResult(0), buffer,
          ArrayRef<OpFoldResult>{b.getIndexAttr(site.offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(elements)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    }
    ret.setOperand(0, buffer);
    caller.prepare.setType(FunctionType::get(
        context, caller.prepare.getArgumentTypes(), ret.getOperandTypes()));

    // `_prepared`: its packed argument (the last) grows; each call reads
    // its region.
    func::FuncOp prepared = caller.prepared;
    BlockArgument packed = prepared.getArgument(prepared.getNumArguments() - 1);
    packed.setType(packedType);
    prepared.setType(FunctionType::get(
        context, prepared.getBody().front().getArgumentTypes(),
        prepared.getResultTypes()));
    for (Site &site : sites) {
      b.setInsertionPoint(site.call);
      int64_t elements = site.callee->packedElements();
      Value slice = tensor::ExtractSliceOp::create(
          b, site.call.getLoc(), packed,
          ArrayRef<OpFoldResult>{b.getIndexAttr(site.offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(elements)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      SmallVector<Value> operands(site.call.getOperands());
      operands.push_back(slice);
      auto call = func::CallOp::create(b, site.call.getLoc(),
                                       site.callee->prepared, operands);
      site.call.replaceAllUsesWith(call.getResults());
      site.call.erase();
    }

    // The kernel's call of `_prepare` returns the bigger buffer.
    caller.kernel.walk([&](func::CallOp call) {
      if (call.getCallee() == caller.prepare.getSymName())
        call.getResult(0).setType(packedType);
    });
    caller.kernel->setAttr(AttnDialect::kPackedElementsAttr,
                           b.getI64IntegerAttr(size));
    return success();
  }

  int64_t alignment = 16;
  llvm::MapVector<StringRef, SplitKernel> kernels;
};

} // namespace
