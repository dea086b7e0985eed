//===- GoldenCase.h - A tests/data/goldens case, ready to run ---*- C++ -*-===//
//
// Loads a golden made by the D2L PyTorch code (tests/data/make_goldens.py):
// the spec, the kernel signature, every input/param (from NAME.npy or the
// weight formula of formula_params.txt) and the expected outputs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_E2E_GOLDENCASE_H
#define ATTNC_TESTS_E2E_GOLDENCASE_H

#include "attnc/Codegen/KernelSignature.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace attnc::test {

/// Buffers of bytes, one per kernel argument in ABI order.
using Buffers = std::vector<std::vector<char>>;

struct GoldenCase {
  std::string name;
  std::string specPath;
  std::string specText;
  KernelSignature signature;
  /// Per argument in ABI order: an input's or param's raw little-endian
  /// bytes, in its element type; empty for an output.
  Buffers values;
  /// Per argument: an output's expected values (PyTorch's f32 result, or
  /// for a bf16/f16 output the float64 reference); empty for the others.
  std::vector<std::vector<double>> expected;
  /// Per argument: the largest |error| an output may have, and where that
  /// bound comes from. f32: docs/spec.md §7's tolerance, 1e-4 absolute,
  /// 2e-4 when a model dim is >= 768, or the case's tolerance.txt when it is
  /// tighter. bf16/f16: §7's low-precision bar, PyTorch's own error in that
  /// type (torch_OUT.npy) or one ulp of the type at the reference's largest
  /// magnitude, whichever is larger.
  std::vector<double> bounds;
  std::vector<std::string> boundReasons;

  /// Fresh output buffers in ABI order, every byte 0xff (a NaN in f32,
  /// bf16 and f16); empty for inputs.
  Buffers makeOutputs() const;
  /// Pointers to each argument: inputs from `values`, outputs from `outputs`.
  std::vector<void *> pointers(Buffers &outputs);
  /// Max |output - expected| of the output at `index` (NaN if a value is).
  double errorOf(size_t index, const Buffers &outputs) const;
  /// Empty when every output is within its bound, NaN-free; otherwise a
  /// line for each output that is not.
  std::string mismatches(const Buffers &outputs) const;
  /// A line per output: its error, its bound and why.
  std::string report(const Buffers &outputs) const;
};

/// Every case folder under tests/data/goldens.
std::vector<std::string> goldenCaseNames();

llvm::Expected<GoldenCase> loadGoldenCase(const std::string &name);

/// memcmp, but defined for empty (possibly null) buffers too.
inline int bytesDiffer(const void *a, const void *b, size_t size) {
  return size == 0 ? 0 : std::memcmp(a, b, size);
}

} // namespace attnc::test

#endif // ATTNC_TESTS_E2E_GOLDENCASE_H
