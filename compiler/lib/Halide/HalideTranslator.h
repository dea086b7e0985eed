//===- HalideTranslator.h - The attn ops as Halide Funcs --------*- C++ -*-===//
//
// The translator of HalideGen.cpp (the kernels, most ops) and
// HalideAttention.cpp (attention and multi-head attention). Internal to the
// Halide backend.
//
// Halide indexes a Func innermost dimension first; a Tensor here is indexed
// row-major, as the attn ops are written, and reverses the indices.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LIB_HALIDE_HALIDETRANSLATOR_H
#define ATTNC_LIB_HALIDE_HALIDETRANSLATOR_H

#include "HalideGen.h"

#include "attn/IR/AttnOps.h"
#include "attn/Target/KernelStatus.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnc::halide {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;

/// What a call with a KV cache writes into a state (docs/spec.md §2 v3): the
/// new rows, written by the kernel's wrapper after the pipeline (Halide
/// leaves a buffer that is both an input and an output undefined).
struct CacheWrite {
  /// rows(w, t, b): the T new rows of entry b, in the cache's element type.
  Func rows;
  /// at(b): the first row of entry b they go to (pos[b]).
  Func at;
  /// [B, T, W].
  std::vector<int64_t> rowsShape;
};

/// A tensor value: a Func read row-major.
struct Tensor {
  Func func;
  std::vector<int64_t> shape;
  /// Where known (a bf16 tensor widened, by a cast or a rounding point): a
  /// Func of the same indices whose bf16 values widen to `func`'s exactly,
  /// which a GEMM reads as vdpbf16ps's operands.
  Func bf16 = Func();
  /// A KV cache after a call's write: the rows written (`func` is then the
  /// whole updated cache, for reads).
  std::optional<CacheWrite> cacheWrite = std::nullopt;

  int rank() const { return static_cast<int>(shape.size()); }
  /// The element at row-major indices `index`.
  Expr operator()(const std::vector<Expr> &index) const {
    return func(std::vector<Expr>(index.rbegin(), index.rend()));
  }
  /// The same element as bf16 (`bf16` defined).
  Expr bf16At(const std::vector<Expr> &index) const {
    return bf16(std::vector<Expr>(index.rbegin(), index.rend()));
  }
};

inline std::vector<int64_t> shapeOf(mlir::Value value) {
  auto type = llvm::cast<mlir::ShapedType>(value.getType());
  return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
}

inline std::vector<Var> makeVars(int rank) {
  std::vector<Var> vars;
  for (int i = 0; i < rank; ++i)
    vars.emplace_back("i" + std::to_string(i));
  return vars;
}

inline std::vector<Expr> asExprs(const std::vector<Var> &vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

/// Halide's argument order of row-major `vars`.
inline std::vector<Var> reversedVars(const std::vector<Var> &vars) {
  return std::vector<Var>(vars.rbegin(), vars.rend());
}

/// Whether x is NaN, from its bits. Halide emits float math with LLVM's
/// nnan and ninf flags, from which LLVM may prove a computed value not NaN
/// and fold Halide::is_nan (an fcmp) of it to false: LLVM 22 at -O3 does
/// for attention scores. It does not fold this integer compare.
inline Expr isNan(const Expr &x) {
  Expr magnitude =
      Halide::reinterpret(Halide::UInt(32), x) & Expr(uint32_t(0x7fffffff));
  return magnitude > Expr(uint32_t(0x7f800000));
}

/// `x` rounded to `to` (bf16/f16) through f32, to nearest even by Halide's
/// conversions. Its f32 -> bf16 rounds a NaN's payload like a number
/// (0x7f800001 becomes inf, 0x7fffa74e wraps to -0): NaN becomes torch's
/// 0x7fc0 first.
inline Expr roundedTo(Halide::Type to, const Expr &x) {
  Expr wide = Halide::cast(Halide::Float(32), x);
  Expr rounded = Halide::cast(to, wide);
  if (!to.is_bfloat())
    return rounded;
  Expr quietNan =
      Halide::reinterpret(to, Halide::cast(Halide::UInt(16), 0x7fc0));
  return Halide::select(isNan(wide), quietNan, rounded);
}

/// exp(x - max) of a softmax row, given x - max. Halide's exp(NaN) is 0,
/// which dropped a NaN score; torch's makes the row's sum, and so every
/// weight of the row, NaN. (x = max = +-inf gives NaN here too, as in
/// torch; a masked score is -1e6 by then, D2L's replacement.)
inline Expr softmaxExp(const Expr &shifted) {
  return Halide::select(isNan(shifted), shifted, Halide::exp(shifted));
}

/// The Funcs of one kernel, built op by op.
class Translator {
public:
  /// `clampReads`: every read of an argument or a constant table is
  /// clamped to its bounds (see buildKernelPipeline).
  /// `bf16Pairs`: GEMMs of two bf16 operands sum k's pairs
  /// (buildKernelPipeline).
  Translator(KernelPipeline &pipeline, bool clampReads, bool bf16Pairs)
      : pipeline(pipeline), clampReads(clampReads), bf16Pairs(bf16Pairs) {}

  /// `table` (a constant the kernel embeds) as a Func, its reads clamped
  /// when clampReads.
  Func constant(const Halide::Buffer<float> &table) const;

  /// Translates `func` applied to `arguments`; returns its results.
  llvm::Expected<std::vector<Tensor>> translate(mlir::func::FuncOp func,
                                                std::vector<Tensor> arguments);

  /// The status Func: how many of the embeddings translated were given an
  /// id out of range.
  Func statusFunc() {
    Func status(fresh("status"));
    Expr count = Expr(0);
    for (const Expr &bad : badIds)
      count = count + bad;
    Expr positions = Expr(0);
    for (const Expr &bad : badPositions)
      positions = positions + bad;
    // As attn-lower-to-linalg's: a bad cache position first.
    status() = Halide::select(
        positions != 0, Expr(int32_t(ATTNC_STATUS_CACHE_POSITION)), count);
    return status;
  }

  /// A Func holding `tensor` itself (an output must be a Func of its own),
  /// in its buffer's storage type (storedAs: bf16/f16 as their bits).
  Tensor copyOf(const Tensor &tensor, const std::string &name) {
    std::vector<Var> vars = makeVars(tensor.rank());
    return define(name, tensor.shape, vars, storedAs(tensor(asExprs(vars))),
                  Schedule::Pointwise);
  }

private:
  enum class Schedule { Inline, Pointwise };

  std::string fresh(const std::string &base) {
    return base + "_" + std::to_string(counter++);
  }

  /// A tensor of `shape` whose element at `vars` is `value`; `schedule`
  /// says whether attnc's schedule computes it on its own or inlines it
  /// (index maps, cheap arithmetic read once).
  Tensor define(const std::string &name, std::vector<int64_t> shape,
                const std::vector<Var> &vars, Expr value, Schedule schedule) {
    Func func(fresh(name));
    func(reversedVars(vars)) = value;
    if (schedule == Schedule::Pointwise)
      addStage(func, [func, vars](const ScheduleTarget &target) mutable {
        schedulePointwise(func, reversedVars(vars), target);
      });
    return Tensor{func, std::move(shape)};
  }

  void addStage(Func func, std::function<void(const ScheduleTarget &)> how) {
    pipeline.stages.push_back(Stage{func, std::move(how)});
  }

  llvm::Error unsupported(mlir::Operation *op) {
    std::string where;
    llvm::raw_string_ostream os(where);
    os << op->getLoc();
    return llvm::createStringError(
        "the Halide backend has no translation of '" +
        op->getName().getStringRef().str() + "' (at " + where + ")");
  }

  /// Whether a GEMM of `a` and `b` over `depth` sums k's bf16 pairs
  /// (bf16Pairs, both operands bf16 values, k even).
  bool sumsBf16Pairs(const Tensor &a, const Tensor &b, int64_t depth) const {
    return bf16Pairs && a.bf16.defined() && b.bf16.defined() && depth % 2 == 0;
  }

  // The ops, in AttnOps.td's order.
  Tensor linear(const Tensor &x, const Tensor &w, const Tensor *b);
  Tensor matmul(const Tensor &a, const Tensor &b, bool transposeB);
  Tensor elementwise(const std::string &name, std::vector<int64_t> shape,
                     const std::vector<const Tensor *> &operands,
                     const std::function<Expr(const std::vector<Expr> &)> &f);
  /// `x` (f32) rounded to `type` and widened back: a rounding point inside
  /// a composite op (mlir::attn::innerRoundingOf); `x` without a type.
  Tensor roundedThrough(const Tensor &x, mlir::FloatType type);
  Tensor splitHeads(const Tensor &x, int64_t heads);
  Tensor mergeHeads(const Tensor &x, int64_t heads);
  Tensor softmax(const Tensor &x, const Tensor *validLens);
  std::pair<Tensor, Tensor> attention(mlir::attn::AttentionOp op,
                                      const Tensor &q, const Tensor &k,
                                      const Tensor &v, const Tensor *validLens);
  /// multihead_attention's results: the output, the weights (with
  /// return_weights) and the updated caches (with a cache).
  struct MhaResults {
    Tensor out, weights, cacheK, cacheV;
  };
  MhaResults
  multiheadAttention(mlir::attn::MultiheadAttentionOp op,
                     const std::function<const Tensor *(mlir::Value)> &get);
  /// The updated cache `cache` [B, L, W] of a call writing `rows` [B, T, W]
  /// (values of the cache's type) at rows pos(b) .. pos(b) + T - 1.
  Tensor updatedCache(const Tensor &cache, const Tensor &rows,
                      const Tensor &pos);
  Tensor positionalEncoding(const Tensor &x, const Tensor *offset,
                            int64_t maxLen);
  Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                   float eps);
  Tensor rmsNorm(const Tensor &x, const Tensor &gamma, float eps);
  Tensor embedding(const Tensor &ids, const Tensor &table);

  /// The attention core over split heads, the index maps of `q`, `k`, `v`
  /// and `lens` given: `q(c, i, batch)` is feature c of query row i of the
  /// batch entry `batch` (one or more indices), and so on. Returns the
  /// output [batch..., Tq, dv] (as `out(c, i, batch)`) and the weights.
  struct AttentionCore {
    std::function<Expr(Expr, Expr, const std::vector<Expr> &)> q, k, v;
    std::function<Expr(Expr, const std::vector<Expr> &)> lens;
    /// With a KV cache: query row i is at position i + rowOffset(batch)
    /// (pos[b]), and a key it does not see weighs exactly 0 (as in
    /// attn.decode_attention) instead of D2L's -1e6 replacement.
    std::function<Expr(const std::vector<Expr> &)> rowOffset;
    std::vector<int64_t> batch;
    int64_t queries = 0, keys = 0, headDim = 0, valueDim = 0;
    bool causal = false;
    int64_t window = 0;
    /// The weights are an output too (return_weights).
    bool weightsNeeded = false;
    /// products(bf16) (mlir::attn::attentionProductsOf): q, k, v and the
    /// weights are rounded to it before the products; null: f32.
    mlir::FloatType products;
  };
  /// Funcs of (c, i, batch...) and (j, i, batch...) in Halide order.
  std::pair<Func, Func> attentionCore(const AttentionCore &core);

  KernelPipeline &pipeline;
  bool clampReads;
  bool bf16Pairs;
  std::vector<Expr> badIds;
  /// Per call with a cache or an offset: how many entries' positions are
  /// out of range.
  std::vector<Expr> badPositions;
  /// Adds to badPositions how many of `pos`'s `entries` positions lie
  /// outside [0, last].
  void countBadPositions(const Tensor &pos, int64_t entries, int64_t last) {
    RDom e(0, static_cast<int>(entries), "entry");
    Expr first = pos({e.x});
    badPositions.push_back(Halide::sum(
        Halide::select(first < 0 || first > static_cast<int>(last), 1, 0)));
  }
  int counter = 0;
};

} // namespace attnc::halide

#endif // ATTNC_LIB_HALIDE_HALIDETRANSLATOR_H
