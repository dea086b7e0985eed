//===- ForwardCallSlices.cpp - Calls read and write slices in place -------===//
//
// attn-forward-call-slices: a call that bufferization gave a copy of a slice
// of a 1-D buffer (a callee's region of its caller's packed params) takes the
// buffer itself, through a declaration that records the slice's offset.
// attn-resolve-offset-calls: in the LLVM dialect, such calls become calls of
// the real callee with advanced pointers. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

#include <map>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFORWARDCALLSLICES
#define GEN_PASS_DEF_ATTNRESOLVEOFFSETCALLS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The packed-params argument of a `_prepared` part (attn-split-prepare):
/// read only, like the params.
bool isPackedArgument(func::FuncOp func, unsigned index) {
  if (index >= func.getNumArguments())
    return false;
  auto name = func.getArgAttrOfType<StringAttr>(index, AttnDialect::kNameAttr);
  return name && name.getValue() == "packed" &&
         !func.getArgAttr(index, AttnDialect::kRoleAttr);
}

bool isPart(func::FuncOp func, StringRef part) {
  auto attr = func->getAttrOfType<StringAttr>(AttnDialect::kKernelPartAttr);
  return attr && attr.getValue() == part;
}

/// `view` as a static slice [offset, offset + size) of a 1-D identity
/// memref: its source, and the offset in elements.
std::optional<std::pair<Value, int64_t>> staticSlice(Value view) {
  auto subview = view.getDefiningOp<memref::SubViewOp>();
  if (!subview)
    return std::nullopt;
  MemRefType source = subview.getSourceType();
  if (source.getRank() != 1 || !source.getLayout().isIdentity() ||
      !source.hasStaticShape() || !subview.hasUnitStride() ||
      subview.getStaticOffsets().size() != 1 ||
      ShapedType::isDynamic(subview.getStaticOffsets()[0]) ||
      ShapedType::isDynamic(subview.getStaticSizes()[0]))
    return std::nullopt;
  return std::make_pair(subview.getSource(), subview.getStaticOffsets()[0]);
}

/// A plain buffer: a static identity memref.alloc.
memref::AllocOp plainAlloc(Value value) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity())
    return nullptr;
  return alloc;
}

/// The one func.call that uses `buffer` besides `copy`, and the operand.
std::optional<std::pair<func::CallOp, unsigned>>
soleCallUse(Value buffer, memref::CopyOp copy) {
  std::optional<std::pair<func::CallOp, unsigned>> found;
  for (OpOperand &use : buffer.getUses()) {
    if (use.getOwner() == copy)
      continue;
    auto call = dyn_cast<func::CallOp>(use.getOwner());
    if (!call || found || call->getBlock() != copy->getBlock())
      return std::nullopt;
    found = std::make_pair(call, use.getOperandNumber());
  }
  return found;
}

/// Whether `value` is `base` or a view of it.
bool reaches(Value value, Value base) {
  while (value) {
    if (value == base)
      return true;
    auto view = value.getDefiningOp<ViewLikeOpInterface>();
    if (!view)
      return false;
    value = view.getViewSource();
  }
  return false;
}

/// One operand of a call moved to a whole buffer.
struct Forward {
  unsigned operand;
  Value base;
  int64_t bytes;
  memref::CopyOp copy;
  memref::AllocOp alloc;
};

struct AttnForwardCallSlicesPass
    : mlir::attn::impl::AttnForwardCallSlicesBase<AttnForwardCallSlicesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    declarations.clear();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (!func.isExternal())
        forwardIn(func, symbols);
  }

  /// What `copy` lets a call read or write in place, if anything.
  std::optional<std::pair<func::CallOp, Forward>>
  match(memref::CopyOp copy, func::FuncOp func, SymbolTable &symbols) {
    // Read: packed slice -> buffer -> a callee's packed argument.
    if (auto slice = staticSlice(copy.getSource())) {
      memref::AllocOp alloc = plainAlloc(copy.getTarget());
      auto base = dyn_cast<BlockArgument>(slice->first);
      if (!alloc || !base || base.getOwner() != &func.getBody().front() ||
          !isPackedArgument(func, base.getArgNumber()))
        return std::nullopt;
      auto use = soleCallUse(alloc, copy);
      if (!use || !copy->isBeforeInBlock(use->first))
        return std::nullopt;
      auto callee = symbols.lookup<func::FuncOp>(use->first.getCallee());
      if (!callee || !isPackedArgument(callee, use->second))
        return std::nullopt;
      int64_t bytes =
          slice->second * alloc.getType().getElementTypeBitWidth() / 8;
      return std::make_pair(use->first,
                            Forward{use->second, base, bytes, copy, alloc});
    }
    // Write: a `_prepare` part's output -> buffer -> slice, right after.
    if (auto slice = staticSlice(copy.getTarget())) {
      memref::AllocOp alloc = plainAlloc(copy.getSource());
      if (!alloc)
        return std::nullopt;
      auto use = soleCallUse(alloc, copy);
      if (!use)
        return std::nullopt;
      func::CallOp call = use->first;
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || !isPart(callee, "prepare") ||
          use->second + 1 != callee.getNumArguments() ||
          !call->isBeforeInBlock(copy))
        return std::nullopt;
      // Nothing between the call and the copy may touch the buffer, and no
      // other operand of the call may reach it.
      Value base = slice->first;
      for (Operation *op = call->getNextNode(); op != copy;
           op = op->getNextNode())
        if (op != copy.getTarget().getDefiningOp() && !isMemoryEffectFree(op))
          return std::nullopt;
      for (auto [i, operand] : llvm::enumerate(call.getOperands()))
        if (i != use->second && reaches(operand, base))
          return std::nullopt;
      int64_t bytes =
          slice->second * alloc.getType().getElementTypeBitWidth() / 8;
      return std::make_pair(call,
                            Forward{use->second, base, bytes, copy, alloc});
    }
    return std::nullopt;
  }

  void forwardIn(func::FuncOp func, SymbolTable &symbols) {
    // Every forwarding of a call, in call order.
    llvm::MapVector<Operation *, SmallVector<Forward>> forwards;
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      if (auto found = match(copy, func, symbols))
        forwards[found->first].push_back(found->second);

    for (auto &[op, list] : forwards) {
      auto call = cast<func::CallOp>(op);
      SmallVector<Value> operands(call.getOperands());
      SmallVector<int64_t> bytes(operands.size(), 0);
      for (const Forward &forward : list) {
        operands[forward.operand] = forward.base;
        bytes[forward.operand] = forward.bytes;
      }
      func::FuncOp declaration =
          declarationFor(call, ValueRange(operands).getTypes(), bytes, symbols);
      OpBuilder b(call);
      auto replacement =
          func::CallOp::create(b, call.getLoc(), declaration, operands);
      call.replaceAllUsesWith(replacement.getResults());
      call.erase();
      for (Forward &forward : list) {
        Operation *view = forward.copy.getSource() == forward.alloc.getResult()
                              ? forward.copy.getTarget().getDefiningOp()
                              : forward.copy.getSource().getDefiningOp();
        forward.copy.erase();
        if (forward.alloc->use_empty())
          forward.alloc.erase();
        if (view && view->use_empty())
          view->erase();
      }
    }
  }

  /// `@CALLEE.at.I(types) -> results`, declared once per callee, operand
  /// types and offsets.
  func::FuncOp declarationFor(func::CallOp call, TypeRange types,
                              ArrayRef<int64_t> bytes, SymbolTable &symbols) {
    std::string key = call.getCallee().str();
    for (Type type : types)
      key += " " + std::to_string(
                       reinterpret_cast<uintptr_t>(type.getAsOpaquePointer()));
    for (int64_t offset : bytes)
      key += " " + std::to_string(offset);
    auto it = declarations.find(key);
    if (it != declarations.end())
      return it->second;
    ModuleOp module = getOperation();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto type = FunctionType::get(&getContext(), types, call.getResultTypes());
    std::string name;
    for (unsigned i = 0;; ++i) {
      name = (call.getCallee() + ".at." + Twine(i)).str();
      if (!symbols.lookup(name))
        break;
    }
    auto declaration = func::FuncOp::create(b, call.getLoc(), name, type);
    declaration.setPrivate();
    declaration->setAttr(AttnDialect::kOffsetCallOfAttr, call.getCalleeAttr());
    declaration->setAttr(AttnDialect::kOffsetCallBytesAttr,
                         b.getDenseI64ArrayAttr(bytes));
    symbols.insert(declaration);
    declarations[key] = declaration;
    return declaration;
  }

  /// By callee, operand types and offsets.
  std::map<std::string, func::FuncOp> declarations;
};

struct AttnResolveOffsetCallsPass
    : mlir::attn::impl::AttnResolveOffsetCallsBase<AttnResolveOffsetCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> declarations;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func->hasAttr(AttnDialect::kOffsetCallOfAttr))
        declarations.push_back(func);
    for (LLVM::LLVMFuncOp declaration : declarations) {
      auto target = symbols.lookup<LLVM::LLVMFuncOp>(
          declaration
              ->getAttrOfType<FlatSymbolRefAttr>(AttnDialect::kOffsetCallOfAttr)
              .getValue());
      auto bytes = declaration->getAttrOfType<DenseI64ArrayAttr>(
          AttnDialect::kOffsetCallBytesAttr);
      if (!target || !bytes) {
        declaration.emitOpError("names no function to call, or no offsets");
        return signalPassFailure();
      }
      SmallVector<LLVM::CallOp> calls;
      module.walk([&](LLVM::CallOp call) {
        if (call.getCallee() == declaration.getSymName())
          calls.push_back(call);
      });
      for (LLVM::CallOp call : calls) {
        OpBuilder b(call);
        SmallVector<Value> operands(call.getArgOperands());
        if (operands.size() != static_cast<size_t>(bytes.size())) {
          call.emitOpError("has not one operand per offset of its callee");
          return signalPassFailure();
        }
        for (auto [operand, offset] : llvm::zip(operands, bytes.asArrayRef()))
          if (offset != 0) {
            Value index = LLVM::ConstantOp::create(
                b, call.getLoc(), b.getI64Type(), b.getI64IntegerAttr(offset));
            operand = LLVM::GEPOp::create(
                b, call.getLoc(), operand.getType(), b.getI8Type(), operand,
                ArrayRef<LLVM::GEPArg>{index}, LLVM::GEPNoWrapFlags::inbounds);
          }
        auto replacement =
            LLVM::CallOp::create(b, call.getLoc(), target, operands);
        call.replaceAllUsesWith(replacement.getResults());
        call.erase();
      }
      declaration.erase();
    }
    // Private functions are the module's own.
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (!func.isExternal() && func.isPrivate())
        func.setLinkage(LLVM::Linkage::Internal);
  }
};

} // namespace
