//===- Npy.h - NumPy .npy reader and writer ---------------------*- C++ -*-===//
//
// Reading and writing the NumPy `.npy` format (versions 1.0, 2.0 and 3.0) for
// the dtypes attnc exchanges with host programs (NpyDtype: little-endian
// float32, bf16, f16, int32, int64, uint16 and float64), C order only.
//
// Every malformed input is reported as an llvm::Error whose message starts
// with the file name and says what was expected and what was found; no input
// makes the reader crash or read out of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_NPY_H
#define ATTNC_RUNTIME_NPY_H

#include "attn/Target/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// The dtypes .npy I/O reads and writes: the kernels' element types (bf16
/// as ml_dtypes saves it, '<V2'), int64 (for i32 arguments), uint16 (bf16
/// bit patterns) and float64 (NumPy's default float; no kernel argument
/// takes it, the goldens' float64 references are stored in it).
enum class NpyDtype { F32, BF16, F16, I32, I64, U16, F64 };

/// The NumPy descr string of \p dtype: "<f4", "<i4" or "<i8".
llvm::StringRef npyDtypeDescr(NpyDtype dtype);
/// Bytes per element of \p dtype.
size_t npyDtypeSize(NpyDtype dtype);
/// The dtype that holds a kernel argument of element type \p type (its
/// descr in attn/Target/ElementType.h), if .npy I/O supports it.
std::optional<NpyDtype> npyDtypeOf(mlir::attn::ElementType type);

/// A dense, C-order array as stored in a .npy file.
struct NpyArray {
  NpyDtype dtype = NpyDtype::F32;
  /// Empty for a rank-0 (scalar) array.
  std::vector<int64_t> shape;
  /// numElements() * npyDtypeSize(dtype) bytes, little-endian, C order.
  std::vector<char> data;

  /// Product of the shape (1 for a rank-0 array).
  size_t numElements() const;

  /// Builds an array from host values (stored little-endian). The number of
  /// values must equal the product of \p shape.
  static NpyArray fromF32(std::vector<int64_t> shape,
                          llvm::ArrayRef<float> values);
  static NpyArray fromI32(std::vector<int64_t> shape,
                          llvm::ArrayRef<int32_t> values);
  static NpyArray fromI64(std::vector<int64_t> shape,
                          llvm::ArrayRef<int64_t> values);
  static NpyArray fromF64(std::vector<int64_t> shape,
                          llvm::ArrayRef<double> values);

  /// A 16-bit dtype's array (BF16, F16, U16) from its bit patterns.
  static NpyArray fromBits16(NpyDtype dtype, std::vector<int64_t> shape,
                             llvm::ArrayRef<uint16_t> bits);
  /// A 16-bit dtype's bit patterns.
  std::vector<uint16_t> toBits16() const;
  /// A float array's values as f32 (F32, BF16, F16; exact).
  std::vector<float> toFloats() const;
  /// The elements as host values. The dtype must match.
  std::vector<float> toF32() const;
  std::vector<int32_t> toI32() const;
  std::vector<int64_t> toI64() const;
  std::vector<double> toF64() const;
};

/// Formats a shape the way NumPy prints it: "()", "(3,)", "(2, 4)".
std::string formatNpyShape(llvm::ArrayRef<int64_t> shape);

/// Parses the bytes of a .npy file. \p nameForErrors (usually the path)
/// prefixes every error message.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef bytes,
                                  llvm::StringRef nameForErrors);

/// Reads and parses the .npy file at \p path: a file, a device or a pipe
/// of at most \p maxBytes (a header and its data); one that does not start
/// as a .npy is rejected from its first bytes.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path,
                                 uint64_t maxBytes = UINT64_MAX);

/// Serializes \p array as a .npy file (version 1.0 unless the header needs
/// 2.0; data aligned to 64 bytes).
llvm::Expected<std::string> serializeNpy(const NpyArray &array);

/// Writes \p array to \p path atomically (a temporary file in the same
/// directory, then a rename).
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);

/// Converts an I64 array to I32 when every value fits in int32 (an I32 array
/// is returned unchanged). An error names \p name, the index of the first
/// value that does not fit, and the value.
llvm::Expected<NpyArray> narrowToI32(const NpyArray &array,
                                     llvm::StringRef name);

} // namespace attnc

#endif // ATTNC_RUNTIME_NPY_H
