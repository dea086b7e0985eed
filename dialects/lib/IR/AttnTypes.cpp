//===- AttnTypes.cpp - Element types as MLIR types ------------------------===//

#include "attn/IR/AttnTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::attn;

FloatType mlir::attn::computeType(MLIRContext *context) {
  return cast<FloatType>(mlirTypeOf(kComputeType, context));
}

Type mlir::attn::mlirTypeOf(ElementType type, MLIRContext *context) {
  Builder b(context);
  switch (type) {
  case ElementType::F32:
    return b.getF32Type();
  case ElementType::BF16:
    return b.getBF16Type();
  case ElementType::F16:
    return b.getF16Type();
  case ElementType::I32:
    return b.getI32Type();
  }
  llvm_unreachable("an ElementType without an MLIR type");
}

std::optional<ElementType> mlir::attn::elementTypeOf(Type type) {
  for (const ElementTypeInfo &info : elementTypes())
    if (mlirTypeOf(info.type, type.getContext()) == type)
      return info.type;
  return std::nullopt;
}
