//===- ElementType.h - The element types of kernel buffers ------*- C++ -*-===//
//
// The one table of the element types a kernel's tensors may have: for each,
// its DSL spelling, size, C spelling in generated headers, NumPy `.npy`
// descr, DLPack and Halide type codes, and whether it is a float. The DSL
// front end, the kernel signature and header, the runtime's argument
// checks, `.npy` I/O, the Python module and the Halide backend read it;
// the mapping to MLIR types is attn/IR/AttnTypes.h. LLVM Support only.
//
// `isSupported` says which types specs may use (all four today).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_ELEMENTTYPE_H
#define ATTN_TARGET_ELEMENTTYPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir::attn {

enum class ElementType : uint8_t { F32, BF16, F16, I32 };

/// The type every float op computes in, whatever its operands' type
/// (docs/spec.md §2, v3): a bf16 or f16 op widens where it reads and rounds
/// where it writes; softmax's statistics and accumulators are this type.
constexpr ElementType kComputeType = ElementType::F32;

struct ElementTypeInfo {
  ElementType type;
  /// The DSL's and the signatures' spelling: `f32`.
  llvm::StringLiteral name;
  unsigned bytes;
  /// The element's C type in generated headers (`attnc_bf16` is a typedef
  /// the header declares).
  llvm::StringLiteral cType;
  /// The `.npy` descr attnc writes (little-endian).
  llvm::StringLiteral npyDescr;
  /// DLPack's DLDataTypeCode (kDLInt 0, kDLFloat 2, kDLBfloat 4).
  uint8_t dlpackCode;
  /// Halide's halide_type_code_t (int 0, float 2, bfloat 4).
  uint8_t halideCode;
  bool isFloat;
  /// Whether specs may use it yet.
  bool isSupported;
};

/// Every row, in ElementType's order.
llvm::ArrayRef<ElementTypeInfo> elementTypes();

const ElementTypeInfo &describe(ElementType type);

/// The type spelled `name` (`f32`, `bf16`, `f16`, `i32`), if any.
std::optional<ElementType> elementTypeNamed(llvm::StringRef name);

inline llvm::StringRef nameOf(ElementType type) { return describe(type).name; }
inline unsigned bytesOf(ElementType type) { return describe(type).bytes; }
inline bool isFloat(ElementType type) { return describe(type).isFloat; }

} // namespace mlir::attn

#endif // ATTN_TARGET_ELEMENTTYPE_H
