//===- AttnShapeRules.h - Shape and dtype rules of the attn ops -*- C++ -*-===//
//
// The one place where the operand/attribute rules of every attn op live, and
// where each op's result shape is derived. Both the dialect (verifiers and
// result-type inference) and the DSL front end (semantic checks reported at
// source locations) call these functions, so IR written by hand and a `.attn`
// spec are held to exactly the same rules.
//
// The functions depend on LLVM ADT only, not on MLIR types: the front end
// checks its AST before any IR exists.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ATTNSHAPERULES_H
#define ATTN_IR_ATTNSHAPERULES_H

#include "attn/Target/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace mlir::attn::rules {

/// Defaults of optional attributes/keywords (ODS and the DSL both use them).
constexpr int64_t kDefaultMaxLen = 1000;
constexpr float kDefaultEps = 1e-5f;
/// rms_norm's eps (Llama's RMSNorm).
constexpr float kDefaultRmsEps = 1e-6f;

/// multihead_attention's kv_heads and window when they are not given. No
/// DSL literal has this value (integers are at least -(2^63 - 1)), so a
/// given 0 or negative value is reported, never taken for "not given".
constexpr int64_t kNotGiven = std::numeric_limits<int64_t>::min();
/// multihead_attention's rope_base (Llama's theta).
constexpr float kDefaultRopeBase = 10000.0f;

/// The largest tensor (in elements) any op accepts, so that no product of
/// dims that the rules or the code generators form can overflow int64.
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// The highest rank of any tensor, declared or made by an op: the lowering
/// builds affine maps and loop nests whose size grows with the rank squared.
constexpr int64_t kMaxRank = 16;

/// A statically shaped tensor as the rules see it. Its element type is a row
/// of the element-type table (attn/Target/ElementType.h), or none for a type
/// no kernel takes (an MLIR f64 tensor, say), rejected with a message. Which
/// rows the ops accept is the table's `isSupported`; a result takes its
/// element type from its operands.
struct TensorShape {
  std::optional<ElementType> element = ElementType::F32;
  llvm::SmallVector<int64_t, 4> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool operator==(const TensorShape &other) const {
    return element == other.element && dims == other.dims;
  }
};

/// Spells a tensor the way the DSL does: `f32[2, 4, 100]`.
std::string formatShape(const TensorShape &shape);

/// Receives one violated rule: the name of the operand or attribute at fault,
/// as spelled in the DSL and in ODS (`x`, `w_q`, `valid_lens`, `heads`, ...),
/// and a message that names what was expected and what was found.
using RuleError =
    llvm::function_ref<void(llvm::StringRef argument, const llvm::Twine &)>;

/// The inferred result, or nullopt after at least one RuleError call.
using RuleResult = std::optional<TensorShape>;

/// The ops of AttnOps.def.
enum class OpKind {
#define ATTN_OP(Kind, name, Class, rule, PARAMS) Kind,
#include "attn/IR/AttnOps.def"
};

/// One argument of a rule, as its caller read it: the tensor's shape (unset
/// for an omitted optional tensor), or the attribute's value in the field
/// of its kind.
struct RuleValue {
  std::optional<TensorShape> tensor;
  int64_t integer = 0;
  double number = 0;
  bool flag = false;
};

/// Calls the rule of `kind` (AttnOps.def) with `args`, one per parameter of
/// the op in order.
RuleResult applyRule(OpKind kind, llvm::ArrayRef<RuleValue> args,
                     RuleError error);

/// cast: any float tensor to the float type `dtype`, same shape.
RuleResult inferCast(const TensorShape &x, ElementType dtype, RuleError error);
RuleResult inferLinear(const TensorShape &x, const TensorShape &w,
                       const TensorShape *b, RuleError error);
RuleResult inferMatmul(const TensorShape &a, const TensorShape &b,
                       bool transposeB, RuleError error);
/// relu: any float tensor, same shape out.
RuleResult inferElementwiseUnary(const TensorShape &x, RuleError error);
/// gelu: as inferElementwiseUnary, either form.
RuleResult inferGelu(const TensorShape &x, bool approximate, RuleError error);
/// scale: any float tensor and a finite factor.
RuleResult inferScale(const TensorShape &x, double factor, RuleError error);
/// add, mul, sub: two float tensors with NumPy broadcasting (aligned on their
/// trailing axes; a size-1 or missing axis stretches). The result has the
/// larger rank and, per axis, the larger size.
RuleResult inferElementwiseBinary(const TensorShape &lhs,
                                  const TensorShape &rhs, RuleError error);
/// rms_norm: x of rank >= 1, gamma [D] (D the last dim of x), eps > 0.
RuleResult inferRmsNorm(const TensorShape &x, const TensorShape &gamma,
                        double eps, RuleError error);
RuleResult inferSoftmax(const TensorShape &x, RuleError error);
RuleResult inferDropout(const TensorShape &x, double p, RuleError error);
RuleResult inferSplitHeads(const TensorShape &x, int64_t heads,
                           RuleError error);
RuleResult inferMergeHeads(const TensorShape &x, int64_t heads,
                           RuleError error);
RuleResult inferMaskedSoftmax(const TensorShape &x,
                              const TensorShape &validLens, RuleError error);
RuleResult inferAttention(const TensorShape &q, const TensorShape &k,
                          const TensorShape &v, const TensorShape *validLens,
                          bool causal, bool returnWeights, RuleError error);
/// multihead_attention (docs/spec.md §2, v1 and v2): the projections' biases
/// b_q, b_k, b_v, b_o (each optional: one per row of its weight), kv_heads
/// (kNotGiven: one kv head per query head; else it divides heads and w_k,
/// w_v have kv_heads * head_dim rows), the sliding window (kNotGiven: none;
/// else >= 1 and only with causal), rope (an even head dim) and rope_base
/// (positive; another value than the default only with rope).
RuleResult inferMultiheadAttention(
    const TensorShape &q, const TensorShape &k, const TensorShape &v,
    const TensorShape &wQ, const TensorShape &wK, const TensorShape &wV,
    const TensorShape &wO, const TensorShape *validLens, const TensorShape *bQ,
    const TensorShape *bK, const TensorShape *bV, const TensorShape *bO,
    const TensorShape *cacheK, const TensorShape *cacheV,
    const TensorShape *cachePos, int64_t heads, int64_t kvHeads, bool causal,
    int64_t window, bool rope, double ropeBase, bool returnWeights,
    RuleError error);
/// The attention weights that `attention(..., return_weights=true)` also
/// returns (D2L's `attention_weights`, the masked softmax of the scores):
/// [N, Tq, Tk] of q's type, for operands that inferAttention accepted.
TensorShape attentionWeightsShape(const TensorShape &q, const TensorShape &k);
/// The same for `multihead_attention`: [B * heads, Tq, Tk], row
/// b * heads + h for head h of batch entry b (split_heads' order), for
/// operands that inferMultiheadAttention accepted.
TensorShape multiheadAttentionWeightsShape(const TensorShape &q,
                                           const TensorShape &k, int64_t heads);
RuleResult inferPositionalEncoding(const TensorShape &x,
                                   const TensorShape *offset, int64_t maxLen,
                                   RuleError error);
RuleResult inferLayerNorm(const TensorShape &x, const TensorShape &gamma,
                          const TensorShape &beta, double eps, RuleError error);
RuleResult inferAddNorm(const TensorShape &x, const TensorShape &y,
                        const TensorShape &gamma, const TensorShape &beta,
                        double eps, RuleError error);
RuleResult inferFfn(const TensorShape &x, const TensorShape &w1,
                    const TensorShape &b1, const TensorShape &w2,
                    const TensorShape &b2, RuleError error);
RuleResult inferEmbedding(const TensorShape &ids, const TensorShape &table,
                          RuleError error);

} // namespace mlir::attn::rules

#endif // ATTN_IR_ATTNSHAPERULES_H
