//===- ElementType.cpp - The element types of kernel buffers --------------===//

#include "attn/Target/ElementType.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir::attn;

namespace {

// DLPack's and Halide's type codes (dlpack.h, HalideRuntime.h).
constexpr uint8_t kDLInt = 0, kDLFloat = 2, kDLBfloat = 4;
constexpr uint8_t kHalideInt = 0, kHalideFloat = 2, kHalideBfloat = 4;

// bf16 has no NumPy dtype of its own: ml_dtypes saves it as raw 2-byte
// records.
constexpr ElementTypeInfo kTable[] = {
    {ElementType::F32, "f32", 4, "float", "<f4", kDLFloat, kHalideFloat,
     /*isFloat=*/true, /*isSupported=*/true},
    {ElementType::BF16, "bf16", 2, "attnc_bf16", "<V2", kDLBfloat,
     kHalideBfloat, /*isFloat=*/true, /*isSupported=*/true},
    {ElementType::F16, "f16", 2, "attnc_f16", "<f2", kDLFloat, kHalideFloat,
     /*isFloat=*/true, /*isSupported=*/true},
    {ElementType::I32, "i32", 4, "int32_t", "<i4", kDLInt, kHalideInt,
     /*isFloat=*/false, /*isSupported=*/true},
};

} // namespace

llvm::ArrayRef<ElementTypeInfo> mlir::attn::elementTypes() { return kTable; }

const ElementTypeInfo &mlir::attn::describe(ElementType type) {
  for (const ElementTypeInfo &info : kTable)
    if (info.type == type)
      return info;
  llvm_unreachable("an ElementType without a row in the table");
}

std::optional<ElementType> mlir::attn::elementTypeNamed(llvm::StringRef name) {
  for (const ElementTypeInfo &info : kTable)
    if (info.name == name)
      return info.type;
  return std::nullopt;
}
