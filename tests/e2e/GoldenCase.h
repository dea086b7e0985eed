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

struct GoldenCase {
  std::string name;
  std::string specPath;
  std::string specText;
  KernelSignature signature;
  /// Per argument in ABI order: raw little-endian bytes (outputs: the
  /// expected values).
  std::vector<std::vector<char>> values;
  /// Tolerance of docs/spec.md §7: 1e-4 absolute, 2e-4 when a model dim is >=
  /// 768; the case folder's tolerance.txt, when there is one and it is tighter.
  double tolerance = 1e-4;

  /// Fresh output buffers (NaN-filled) in ABI order; null for inputs.
  std::vector<std::vector<float>> makeOutputs() const;
  /// Pointers to each argument: inputs from `values`, outputs from `outputs`.
  std::vector<void *> pointers(std::vector<std::vector<float>> &outputs);
  /// Max |output - expected| over every output (NaN if any is NaN).
  double maxError(const std::vector<std::vector<float>> &outputs) const;
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
