//===- KernelSignature.h - Kernel arguments, as hosts see them --*- C++ -*-===//
//
// What a host needs to call a compiled kernel: its buffers in ABI order
// (inputs and params in declaration order, then outputs), each with name,
// role, dtype and shape; the block's named dims; and which inputs are
// embedding ids (checked before a kernel runs). Read off the attn-level
// function, emitted as the C header, stored as JSON beside cached objects.
// Part of the public (installed) API: includes LLVM Support headers and the
// element-type table and ABI headers (attn/Target) only.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_KERNELSIGNATURE_H
#define ATTNC_CODEGEN_KERNELSIGNATURE_H

#include "attn/Target/ElementType.h"
#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnc {

using ArgumentRole = mlir::attn::abi::ArgumentRole;
using ElementType = mlir::attn::ElementType;

/// `input`, `param`, `output`.
llvm::StringRef roleName(ArgumentRole role);
/// `f32`, ... (attn/Target/ElementType.h).
llvm::StringRef elementTypeName(ElementType type);
/// Bytes per element.
size_t elementSize(ElementType type);

struct KernelArgument {
  std::string name;
  ArgumentRole role = ArgumentRole::Input;
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;

  int64_t numElements() const;
  /// `f32[2, 4, 100]`
  std::string typeString() const;
};

/// An input that feeds an embedding: every id must be in [0, vocabSize).
struct EmbeddingIds {
  unsigned argument = 0;
  int64_t vocabSize = 0;
};

/// An i32 input whose meaningful values are [0, keys]: attention lengths
/// (keys: the keys attended), or a KV cache's positions (keys: L - T, the
/// last position where the T new rows still fit).
struct ValidLens {
  unsigned argument = 0;
  int64_t keys = 0;
};

/// An i32[B] argument of positions (docs/spec.md §2 v3): a KV cache's
/// cache_pos, or positional_encoding's offset. The kernel needs
/// 0 <= pos[b] and pos[b] + tokens <= rows, else it writes nothing and
/// returns ATTNC_STATUS_CACHE_POSITION; the runtime checks it first and
/// names the entry.
struct Positions {
  unsigned argument = 0;
  /// The rows the positions index: the cache's L, or max_len.
  int64_t rows = 0;
  /// The tokens each call adds after pos[b] (T).
  int64_t tokens = 0;
  /// The cache's argument (its K cache), or none: positional_encoding.
  std::optional<unsigned> cache;
};

struct KernelSignature {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> dims;
  std::vector<KernelArgument> arguments;
  std::vector<EmbeddingIds> embeddingIds;
  std::vector<ValidLens> validLens;
  std::vector<Positions> positions;
  /// Floats of the buffer NAME_prepare fills from the params and
  /// NAME_prepared reads (weights transposed once; see attn-split-prepare).
  int64_t packedElements = 0;

  /// Each argument's role, in ABI order (what abi::parametersOf takes).
  std::vector<ArgumentRole> roles() const;
  /// Each argument's name, in ABI order (what the header's names take).
  std::vector<std::string> argumentNames() const;

  std::string toJSON() const;
  static llvm::Expected<KernelSignature> fromJSON(llvm::StringRef text);
};

} // namespace attnc

#endif // ATTNC_CODEGEN_KERNELSIGNATURE_H
