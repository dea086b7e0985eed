//===- SplitPrepare.cpp - Hoist the work on params into NAME_prepare ------===//
//
// A kernel NAME becomes NAME_prepare (the work that reads only params, done
// once when they are bound), NAME_prepared (the rest, per call) and NAME,
// which calls the two so that its ABI does not change. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Target/CpuTarget.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNSPLITPREPARE
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

bool isParam(func::FuncOp kernel, unsigned argument) {
  auto role =
      kernel.getArgAttrOfType<StringAttr>(argument, AttnDialect::kRoleAttr);
  return role && role.getValue() == abi::nameOf(abi::ArgumentRole::Param);
}

/// Which ops of a kernel's body run once per params, and what the rest of
/// the kernel reads of their results.
struct PrepareAnalysis {
  /// Ops computable from params and constants alone (reshapes and constants
  /// included).
  DenseSet<Operation *> paramOnly;
  /// The paramOnly linalg ops worth doing once: they read a param-derived
  /// tensor and make no bigger a tensor than they read.
  DenseSet<Operation *> prepared;
  /// Results of `prepared` ops read by the rest of the kernel, in order.
  SmallVector<Value> packed;
  /// Offset of each `packed` value in the packed buffer, and its size.
  SmallVector<int64_t> offsets;
  int64_t packedElements = 0;

  /// Each packed value starts at a multiple of `alignment` floats (the
  /// target's packed-alignment-floats: a cache line).
  /// `hoist` false: nothing is prepared.
  PrepareAnalysis(func::FuncOp kernel, int64_t alignment, bool hoist);
};

/// Whether a linalg op's result is worth preparing: static f32 tensors of
/// rank >= 1, no bigger than its largest param-derived input (a transpose,
/// not a broadcast of a bias over rows).
bool worthPreparing(linalg::LinalgOp op, const DenseSet<Value> &fromParams) {
  int64_t largestInput = 0;
  for (Value input : op.getDpsInputs()) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (type && type.hasStaticShape() && fromParams.contains(input))
      largestInput = std::max(largestInput, type.getNumElements());
  }
  if (largestInput == 0)
    return false;
  for (Type result : op->getResultTypes()) {
    auto type = dyn_cast<RankedTensorType>(result);
    if (!type || !type.hasStaticShape() || type.getRank() == 0 ||
        !type.getElementType().isF32() || type.getNumElements() > largestInput)
      return false;
  }
  return op->getNumResults() > 0;
}

PrepareAnalysis::PrepareAnalysis(func::FuncOp kernel, int64_t alignment,
                                 bool hoist) {
  Block &body = kernel.getBody().front();
  // Values known from params (and constants) alone; `fromParams` those that
  // actually depend on a param.
  DenseSet<Value> known, fromParams;
  for (BlockArgument arg : body.getArguments())
    if (isParam(kernel, arg.getArgNumber())) {
      known.insert(arg);
      fromParams.insert(arg);
    }
  for (Operation &op : body.without_terminator()) {
    if (!isMemoryEffectFree(&op))
      continue;
    SetVector<Value> reads(op.getOperands().begin(), op.getOperands().end());
    getUsedValuesDefinedAbove(op.getRegions(), reads);
    if (!llvm::all_of(reads, [&](Value v) { return known.contains(v); }))
      continue;
    paramOnly.insert(&op);
    bool dependsOnParam =
        llvm::any_of(reads, [&](Value v) { return fromParams.contains(v); });
    for (Value result : op.getResults()) {
      known.insert(result);
      if (dependsOnParam)
        fromParams.insert(result);
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op))
      if (hoist && worthPreparing(linalgOp, fromParams))
        prepared.insert(&op);
  }
  // A prepared result goes into the buffer when anything else reads it.
  for (Operation &op : body) {
    if (!prepared.contains(&op))
      continue;
    for (Value result : op.getResults()) {
      bool readByRest = llvm::any_of(result.getUsers(), [&](Operation *user) {
        return !prepared.contains(body.findAncestorOpInBlock(*user));
      });
      if (!readByRest)
        continue;
      packed.push_back(result);
      offsets.push_back(packedElements);
      int64_t size = cast<RankedTensorType>(result.getType()).getNumElements();
      packedElements += llvm::alignTo(size, alignment);
    }
  }
}

/// Erases the ops of `body` nothing reads, last first.
void eraseDeadOps(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

RankedTensorType packedType(MLIRContext *context, int64_t elements) {
  return RankedTensorType::get({elements}, Float32Type::get(context));
}

/// `value` as 1-D, or a 1-D `slice` back in `type`'s shape.
Value reshape(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from.getRank() == type.getRank())
    return value;
  ReassociationIndices all;
  for (int64_t i = 0, e = std::max(from.getRank(), type.getRank()); i < e; ++i)
    all.push_back(i);
  if (type.getRank() == 1)
    return tensor::CollapseShapeOp::create(b, loc, value,
                                           ArrayRef<ReassociationIndices>{all});
  return tensor::ExpandShapeOp::create(b, loc, type, value,
                                       ArrayRef<ReassociationIndices>{all});
}

/// NAME_prepare(params...) -> (packed, status 0).
func::FuncOp buildPrepare(OpBuilder &b, func::FuncOp kernel,
                          const PrepareAnalysis &analysis) {
  Location loc = kernel.getLoc();
  MLIRContext *context = kernel.getContext();
  Block &body = kernel.getBody().front();
  SmallVector<unsigned> params;
  SmallVector<Type> paramTypes;
  for (BlockArgument arg : body.getArguments())
    if (isParam(kernel, arg.getArgNumber())) {
      params.push_back(arg.getArgNumber());
      paramTypes.push_back(arg.getType());
    }
  auto type = FunctionType::get(
      context, paramTypes,
      {packedType(context, analysis.packedElements), b.getI32Type()});
  auto prepare = func::FuncOp::create(
      b, loc, abi::entrySymbol(kernel.getSymName(), abi::Entry::Prepare), type);
  for (auto [i, argument] : llvm::enumerate(params))
    prepare.setArgAttrs(i, kernel.getArgAttrDict(argument));
  prepare->setAttr(AttnDialect::kKernelPartAttr, b.getStringAttr("prepare"));

  OpBuilder::InsertionGuard guard(b);
  Block *entry = prepare.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [i, argument] : llvm::enumerate(params))
    mapping.map(body.getArgument(argument), entry->getArgument(i));
  for (Operation &op : body.without_terminator())
    if (analysis.paramOnly.contains(&op))
      b.clone(op, mapping);

  Value buffer = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{analysis.packedElements}, b.getF32Type());
  for (auto [value, offset] : llvm::zip(analysis.packed, analysis.offsets)) {
    auto valueType = cast<RankedTensorType>(value.getType());
    Value flat = reshape(b, loc, mapping.lookup(value),
                         packedType(context, valueType.getNumElements()));
    buffer = tensor::InsertSliceOp::create(
        b, loc, flat, buffer, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(valueType.getNumElements())},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  Value ok = arith::ConstantIntOp::create(b, loc, 0, 32);
  func::ReturnOp::create(b, loc, ValueRange{buffer, ok});
  eraseDeadOps(*entry);
  return prepare;
}

/// NAME_prepared(args..., packed) -> NAME's results: a copy of `kernel`
/// whose packed values come out of `packed`.
func::FuncOp buildPrepared(OpBuilder &b, func::FuncOp kernel,
                           const PrepareAnalysis &analysis) {
  IRMapping copies;
  auto prepared = cast<func::FuncOp>(b.clone(*kernel, copies));
  prepared.setSymName(
      abi::entrySymbol(kernel.getSymName(), abi::Entry::Prepared));
  prepared->removeAttr(AttnDialect::kPackedElementsAttr);
  prepared->setAttr(AttnDialect::kKernelPartAttr, b.getStringAttr("prepared"));
  MLIRContext *context = kernel.getContext();
  unsigned packedIndex = prepared.getNumArguments();
  // `packed` is shared by every call: read only, like the params.
  if (failed(prepared.insertArgument(
          packedIndex, packedType(context, analysis.packedElements),
          b.getDictionaryAttr(
              {b.getNamedAttr(AttnDialect::kNameAttr,
                              b.getStringAttr("packed")),
               b.getNamedAttr(
                   bufferization::BufferizationDialect::kWritableAttrName,
                   b.getBoolAttr(false))}),
          kernel.getLoc())))
    return nullptr;

  Block &body = prepared.getBody().front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&body);
  Value packed = body.getArgument(packedIndex);
  for (auto [original, offset] : llvm::zip(analysis.packed, analysis.offsets)) {
    Value value = copies.lookup(original);
    auto type = cast<RankedTensorType>(value.getType());
    Value slice = tensor::ExtractSliceOp::create(
        b, value.getLoc(), packed,
        ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(type.getNumElements())},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    value.replaceAllUsesWith(reshape(b, value.getLoc(), slice, type));
  }
  eraseDeadOps(body);
  return prepared;
}

/// Replaces `kernel`'s body by calls of `prepare` and `prepared`.
void callParts(OpBuilder &b, func::FuncOp kernel, func::FuncOp prepare,
               func::FuncOp prepared) {
  Block &body = kernel.getBody().front();
  SmallVector<Value> params, arguments(body.getArguments());
  for (BlockArgument arg : body.getArguments())
    if (isParam(kernel, arg.getArgNumber()))
      params.push_back(arg);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    op.erase();
  Location loc = kernel.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&body);
  auto prepareCall = func::CallOp::create(b, loc, prepare, params);
  arguments.push_back(prepareCall.getResult(0));
  auto preparedCall = func::CallOp::create(b, loc, prepared, arguments);
  func::ReturnOp::create(b, loc, preparedCall.getResults());
}

struct AttnSplitPreparePass
    : mlir::attn::impl::AttnSplitPrepareBase<AttnSplitPreparePass> {
  using AttnSplitPrepareBase::AttnSplitPrepareBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    // Public kernels, and the private ones of blocks that others call
    // (attn-prepare-calls then prepares each call's params once).
    for (auto kernel : module.getOps<func::FuncOp>())
      if (!kernel.isExternal() &&
          (kernel.isPublic() || kernel->hasAttr(AttnDialect::kDimNamesAttr)) &&
          !kernel->hasAttr(AttnDialect::kKernelPartAttr) &&
          !kernel->hasAttr(AttnDialect::kPackedElementsAttr))
        kernels.push_back(kernel);
    FailureOr<attn::CpuSchedule> schedule = attn::cpuScheduleOf(module);
    if (failed(schedule))
      return signalPassFailure();
    OpBuilder b(&getContext());
    SymbolTable symbols(module);
    for (func::FuncOp kernel : kernels) {
      for (abi::Entry entry : {abi::Entry::Prepare, abi::Entry::Prepared})
        if (std::string name = abi::entrySymbol(kernel.getSymName(), entry);
            symbols.lookup(name)) {
          kernel.emitOpError("cannot be split: a function named '")
              << name << "' exists already";
          return signalPassFailure();
        }
      if (!kernel.getBody().hasOneBlock()) {
        kernel.emitOpError("has more than one block; attn-split-prepare "
                           "expects the straight-line body of a kernel");
        return signalPassFailure();
      }
      PrepareAnalysis analysis(kernel, schedule->packedAlignmentFloats, hoist);
      b.setInsertionPointAfter(kernel);
      func::FuncOp prepare = buildPrepare(b, kernel, analysis);
      func::FuncOp prepared = buildPrepared(b, kernel, analysis);
      if (!prepared) {
        kernel.emitOpError("cannot add the packed argument");
        return signalPassFailure();
      }
      callParts(b, kernel, prepare, prepared);
      kernel->setAttr(AttnDialect::kPackedElementsAttr,
                      b.getI64IntegerAttr(analysis.packedElements));
    }
  }
};

} // namespace
