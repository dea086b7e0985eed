//===- OpTable.h - The .attn ops and their parameters -----------*- C++ -*-===//
//
// One entry per DSL op (docs/spec.md §2), made from attn/IR/AttnOps.def: its
// parameters in signature order, what kind of value each takes, which are
// required, which may be given positionally, and the defaults. Sema binds
// call arguments with this table and hands them to the op's shape rule
// (attn/IR/AttnShapeRules.h).
//
// Binding follows Python: positional arguments fill the positional
// parameters in order, then `name=value` keywords fill any parameter by
// name. Tensor operands are positional-or-keyword (`attention(q, k, v, vl)`
// and `attention(q, k, v, valid_lens=vl)` are the same call); attributes
// (`heads`, `causal`, `eps`, ...) are keyword-only, except `scale`'s factor.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SEMA_OPTABLE_H
#define ATTNC_SEMA_OPTABLE_H

#include "attn/IR/AttnShapeRules.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace attnc {

/// The ops of attn/IR/AttnOps.def, the one list of them.
using OpKind = mlir::attn::rules::OpKind;

/// What a parameter accepts.
enum class ParamKind {
  Tensor, // a tensor expression (name or call)
  Int,    // an integer literal or a dim name
  Float,  // a number literal or a dim name, stored as f32
  Bool,   // true or false
  Dtype,  // a float element type: f32, bf16 or f16
};

struct ParamInfo {
  llvm::StringRef name;
  ParamKind kind;
  bool required;
  bool positional;
  /// Defaults of optional attributes.
  int64_t defaultInt = 0;
  double defaultFloat = 0;
  bool defaultBool = false;
};

struct OpInfo {
  llvm::StringRef name;
  OpKind kind;
  llvm::ArrayRef<ParamInfo> params;

  /// The index of parameter `name` in `params`, if there is one.
  std::optional<unsigned> indexOf(llvm::StringRef param) const;
  unsigned numPositional() const;
  /// `linear(x, w[, b])`-style signature for messages.
  std::string signature() const;
};

/// The op called `name`, or null.
const OpInfo *lookupOp(llvm::StringRef name);
/// Every op, in SPEC order.
llvm::ArrayRef<OpInfo> allOps();

llvm::StringRef describeParamKind(ParamKind kind);

} // namespace attnc

#endif // ATTNC_SEMA_OPTABLE_H
