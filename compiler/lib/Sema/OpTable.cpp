//===- OpTable.cpp - The ops of the .attn language and their parameters ---===//

#include "attnc/Sema/OpTable.h"

#include "attn/IR/AttnShapeRules.h"

#include <string>

using namespace attnc;
using mlir::attn::rules::kDefaultEps;
using mlir::attn::rules::kDefaultMaxLen;

namespace {

constexpr ParamInfo tensor(llvm::StringRef name) {
  return {name, ParamKind::Tensor, /*required=*/true, /*positional=*/true};
}
constexpr ParamInfo optionalTensor(llvm::StringRef name) {
  return {name, ParamKind::Tensor, /*required=*/false, /*positional=*/true};
}
constexpr ParamInfo intKeyword(llvm::StringRef name) {
  return {name, ParamKind::Int, /*required=*/true, /*positional=*/false};
}
constexpr ParamInfo boolKeyword(llvm::StringRef name, bool init) {
  return {name, ParamKind::Bool, false, false, 0, 0, init};
}

const ParamInfo kLinear[] = {tensor("x"), tensor("w"), optionalTensor("b")};
const ParamInfo kMatmul[] = {tensor("a"), tensor("b"),
                             boolKeyword("transpose_b", false)};
const ParamInfo kScale[] = {tensor("x"),
                            {"factor", ParamKind::Float, true, true}};
const ParamInfo kAdd[] = {tensor("a"), tensor("b")};
const ParamInfo kUnary[] = {tensor("x")};
const ParamInfo kHeads[] = {tensor("x"), intKeyword("heads")};
const ParamInfo kMaskedSoftmax[] = {tensor("x"), tensor("valid_lens")};
// return_weights=true adds a second result, the attention weights.
const ParamInfo kAttention[] = {tensor("q"),
                                tensor("k"),
                                tensor("v"),
                                optionalTensor("valid_lens"),
                                boolKeyword("causal", false),
                                boolKeyword("return_weights", false)};
const ParamInfo kMultiheadAttention[] = {tensor("q"),
                                         tensor("k"),
                                         tensor("v"),
                                         tensor("w_q"),
                                         tensor("w_k"),
                                         tensor("w_v"),
                                         tensor("w_o"),
                                         optionalTensor("valid_lens"),
                                         intKeyword("heads"),
                                         boolKeyword("causal", false),
                                         boolKeyword("return_weights", false)};
const ParamInfo kPositionalEncoding[] = {
    tensor("x"), {"max_len", ParamKind::Int, false, false, kDefaultMaxLen}};
const ParamInfo kLayerNorm[] = {
    tensor("x"),
    tensor("gamma"),
    tensor("beta"),
    {"eps", ParamKind::Float, false, false, 0, kDefaultEps}};
const ParamInfo kAddNorm[] = {
    tensor("x"),
    tensor("y"),
    tensor("gamma"),
    tensor("beta"),
    {"eps", ParamKind::Float, false, false, 0, kDefaultEps}};
const ParamInfo kFfn[] = {tensor("x"), tensor("w1"), tensor("b1"), tensor("w2"),
                          tensor("b2")};
const ParamInfo kEmbedding[] = {tensor("ids"), tensor("table")};
const ParamInfo kDropout[] = {tensor("x"),
                              {"p", ParamKind::Float, true, false}};
// approximate=true is torch's approximate='tanh'.
const ParamInfo kGelu[] = {tensor("x"), boolKeyword("approximate", false)};

const OpInfo kOps[] = {
    {"linear", OpKind::Linear, kLinear},
    {"matmul", OpKind::Matmul, kMatmul},
    {"scale", OpKind::Scale, kScale},
    {"add", OpKind::Add, kAdd},
    {"relu", OpKind::Relu, kUnary},
    {"split_heads", OpKind::SplitHeads, kHeads},
    {"merge_heads", OpKind::MergeHeads, kHeads},
    {"softmax", OpKind::Softmax, kUnary},
    {"masked_softmax", OpKind::MaskedSoftmax, kMaskedSoftmax},
    {"attention", OpKind::Attention, kAttention},
    {"multihead_attention", OpKind::MultiheadAttention, kMultiheadAttention},
    {"positional_encoding", OpKind::PositionalEncoding, kPositionalEncoding},
    {"layer_norm", OpKind::LayerNorm, kLayerNorm},
    {"add_norm", OpKind::AddNorm, kAddNorm},
    {"ffn", OpKind::Ffn, kFfn},
    {"embedding", OpKind::Embedding, kEmbedding},
    {"dropout", OpKind::Dropout, kDropout},
    {"gelu", OpKind::Gelu, kGelu},
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
  }
  return "a value";
}
