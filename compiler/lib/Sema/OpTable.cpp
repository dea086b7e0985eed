//===- OpTable.cpp - The ops of the .attn language and their parameters ---===//

#include "attnc/Sema/OpTable.h"

#include <string>

using namespace attnc;

namespace {

constexpr ParamInfo tensor(llvm::StringRef name, bool required,
                           bool positional) {
  return {name, ParamKind::Tensor, required, positional};
}
constexpr ParamInfo integer(llvm::StringRef name, bool required,
                            int64_t init = 0) {
  return {name, ParamKind::Int, required, /*positional=*/false, init};
}
constexpr ParamInfo number(llvm::StringRef name, bool required, bool positional,
                           double init = 0) {
  return {name, ParamKind::Float, required, positional, 0, init};
}
constexpr ParamInfo flag(llvm::StringRef name) {
  return {name, ParamKind::Bool, false, false, 0, 0, false};
}
constexpr ParamInfo dtype(llvm::StringRef name) {
  return {name, ParamKind::Dtype, true, false};
}

// Tensors are positional-or-keyword, attributes keyword-only (but scale's
// factor), as OpTable.h says.
#define ATTN_TENSOR(name, Getter) tensor(#name, true, true),
#define ATTN_OPTIONAL_TENSOR(name, Getter) tensor(#name, false, true),
#define ATTN_KEYWORD_TENSOR(name, Getter) tensor(#name, false, false),
#define ATTN_POSITIONAL_FLOAT(name, Getter) number(#name, true, true),
#define ATTN_INT(name, Getter) integer(#name, true),
#define ATTN_INT_DEFAULT(name, Getter, value) integer(#name, false, value),
#define ATTN_FLOAT(name, Getter) number(#name, true, false),
#define ATTN_FLOAT_DEFAULT(name, Getter, value)                                \
  number(#name, false, false, value),
#define ATTN_FLAG(name, Getter) flag(#name),
#define ATTN_DTYPE(name, Getter) dtype(#name),
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  const ParamInfo k##Kind##Params[] = {PARAMS};
#include "attn/IR/AttnOps.def"

const OpInfo kOps[] = {
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  {name, OpKind::Kind, k##Kind##Params},
#include "attn/IR/AttnOps.def"
};

} // namespace

std::optional<unsigned> OpInfo::indexOf(llvm::StringRef param) const {
  for (unsigned i = 0, e = params.size(); i != e; ++i)
    if (params[i].name == param)
      return i;
  return std::nullopt;
}

unsigned OpInfo::numPositional() const {
  unsigned n = 0;
  for (const ParamInfo &p : params)
    n += p.positional;
  return n;
}

std::string OpInfo::signature() const {
  std::string text = name.str() + "(";
  bool first = true, inOptional = false;
  for (const ParamInfo &p : params) {
    std::string piece = p.name.str();
    if (!p.positional)
      piece += "=...";
    if (!p.required) {
      text += "[";
      inOptional = true;
    }
    if (!first)
      text += ", ";
    text += piece;
    if (inOptional) {
      text += "]";
      inOptional = false;
    }
    first = false;
  }
  return text + ")";
}

const OpInfo *attnc::lookupOp(llvm::StringRef name) {
  for (const OpInfo &op : kOps)
    if (op.name == name)
      return &op;
  return nullptr;
}

llvm::ArrayRef<OpInfo> attnc::allOps() { return kOps; }

llvm::StringRef attnc::describeParamKind(ParamKind kind) {
  switch (kind) {
  case ParamKind::Tensor:
    return "a tensor";
  case ParamKind::Int:
    return "an integer";
  case ParamKind::Float:
    return "a number";
  case ParamKind::Bool:
    return "true or false";
  case ParamKind::Dtype:
    return "a float type (f32, bf16 or f16)";
  }
  return "a value";
}
