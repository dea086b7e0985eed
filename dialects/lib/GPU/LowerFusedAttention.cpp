//===- LowerFusedAttention.cpp - Flash attention, one GPU thread per row --===//
//
// Lowers attn.fused_attention (on memrefs) to one parallel loop over
// (batch x heads, query row), which attn-gpu-map-loops makes one thread
// each; neighbouring threads take neighbouring rows of one batch entry and
// head, so that the keys and values every thread reads are the same
// addresses at the same time (one load serves the warp). Each thread keeps
// its query row, its output row and the online softmax state in registers
// (vectors of the head width) and never materializes a score row:
//
//   len = valid_len (1-D or 2-D; min(., i + 1) when causal), clamped to Tk
//   lo = max(0, i + 1 - window) with a causal window, else 0
//   pass(from, end):  m = -inf, l = 0, acc = 0
//               for from <= j < end:
//                             s = (lo <= j < len) ? q · k[j] * scale : -1e6
//                             m' = max(m, s); c = exp(m - m'); p = exp(s - m')
//                             l = l c + p; acc = acc c + p v[j]; m = m'
//   pass(lo, len); when len <= lo or m <= -1e6 + 104: pass(0, Tk)
//   out[i] = acc / l
//
// With kv_heads(G), query head h reads k and v of kv head h / (H / G) where
// they are (no copy per query head). With rope, the thread rotates its
// query row once, and each key row's rotation is folded into its dot
// product with it (Hugging Face Llama's rotate_half, the tables of
// attn/IR/Rope.h; see rotatedDot).
//
// Skipping the keys at and past len is exact while exp(-1e6 - m)
// underflows; otherwise (every visible score below -1e6 + 104, or no
// visible key: D2L's uniform row) the second pass over every key with D2L's
// replacement gives what D2L computes.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/MaskedSoftmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPULOWERFUSEDATTENTION
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Accumulators (output columns) one thread keeps in registers at most.
constexpr int64_t kMaxSliceWidth = 64;

struct Lowering {
  FusedAttentionOp op;
  OpBuilder &b;
  Location loc;
  Value q, k, v, lens, out, ropeCos, ropeSin;
  bool causal;
  float scale;
  int64_t heads, kvHeads, batches, queries, keys, dk, dv;
  /// The causal window, when it hides keys (window < Tq).
  std::optional<int64_t> window;
  /// The output row of a head is split into `slices` threads of
  /// `sliceWidth` columns, so that a thread's registers hold its query row
  /// and at most kMaxSliceWidth accumulators.
  int64_t slices = 1, sliceWidth;

  Lowering(FusedAttentionOp op, OpBuilder &b)
      : op(op), b(b), loc(op.getLoc()), q(op.getQ()), k(op.getK()),
        v(op.getV()), lens(op.getValidLens()), out(op.getInit()),
        ropeCos(op.getRopeCos()), ropeSin(op.getRopeSin()),
        causal(op.getCausal()), scale(op.getScale().convertToFloat()),
        heads(op.getHeads()), kvHeads(op.getNumKvHeads()) {
    auto qType = cast<MemRefType>(q.getType());
    auto vType = cast<MemRefType>(v.getType());
    batches = qType.getDimSize(0);
    queries = qType.getDimSize(1);
    keys = cast<MemRefType>(k.getType()).getDimSize(1);
    dk = qType.getDimSize(2) / heads;
    dv = vType.getDimSize(2) / kvHeads;
    if (std::optional<uint64_t> w = op.getWindow())
      if (static_cast<int64_t>(*w) < queries)
        window = static_cast<int64_t>(*w);
    while (dv / slices > kMaxSliceWidth && dv % (2 * slices) == 0)
      slices *= 2;
    sliceWidth = dv / slices;
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value splat(float value, int64_t lanes) {
    auto type = VectorType::get({lanes}, b.getF32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }

  /// The visible keys of row `row` of batch entry `batch`: may be <= 0.
  Value lengthOf(Value batch, Value row) {
    Value len = index(keys);
    if (lens) {
      bool twoD = cast<MemRefType>(lens.getType()).getRank() == 2;
      Value raw =
          twoD ? memref::LoadOp::create(b, loc, lens, ValueRange{batch, row})
               : memref::LoadOp::create(b, loc, lens, ValueRange{batch});
      len = arith::MinSIOp::create(
          b, loc, arith::IndexCastOp::create(b, loc, b.getIndexType(), raw),
          index(keys));
    }
    if (causal)
      len = arith::MinSIOp::create(
          b, loc, len, arith::AddIOp::create(b, loc, row, index(1)));
    return len;
  }

  /// The first visible key of `row`: max(0, row + 1 - window), or null
  /// without a window.
  Value lowerOf(Value row) {
    if (!window)
      return Value();
    Value lo = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, row, index(1)), index(*window));
    return arith::MaxSIOp::create(b, loc, lo, index(0));
  }

  /// `x` (a row of q, vector<dk>) rotated by rope at position `t`:
  /// x * [cos, cos] + rotate_half(x) * [-sin, sin] with rotate_half(x) =
  /// [x2, x1] (the sign on sin makes it Hugging Face's [-x2, x1]).
  Value rotate(Value x, Value t) {
    int64_t half = dk / 2;
    auto halfType = VectorType::get({half}, b.getF32Type());
    SmallVector<int64_t> swap, twice, concat;
    for (int64_t j = 0; j < dk; ++j) {
      swap.push_back((j + half) % dk);
      twice.push_back(j % half);
      concat.push_back(j);
    }
    Value cosHalf = vector::LoadOp::create(b, loc, halfType, ropeCos,
                                           ValueRange{t, index(0)});
    Value sinHalf = vector::LoadOp::create(b, loc, halfType, ropeSin,
                                           ValueRange{t, index(0)});
    Value cos = vector::ShuffleOp::create(b, loc, cosHalf, cosHalf, twice);
    Value sin = vector::ShuffleOp::create(
        b, loc, arith::NegFOp::create(b, loc, sinHalf), sinHalf, concat);
    Value rotated = vector::ShuffleOp::create(b, loc, x, x, swap);
    return arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x, cos),
                                 arith::MulFOp::create(b, loc, rotated, sin));
  }

  /// q' · k' for the rotated query row q' (its halves q1', q2') and key
  /// row j rotated at position j, k' = [k1 cos - k2 sin, k2 cos + k1 sin]
  /// (halves of d/2), without forming k': the sum of cos * (q1' k1 + q2' k2)
  /// + sin * (q2' k1 - q1' k2), in chunks of a few lanes, so that a thread
  /// holds no more than its query row and a chunk of the key row at a time
  /// (head dim 128 stays within the registers).
  Value rotatedDot(Value q1, Value q2, Value j, Value batch, Value kColumn) {
    int64_t half = dk / 2;
    int64_t lanes = std::min<int64_t>(half, 8);
    while (half % lanes != 0)
      lanes /= 2;
    auto chunkType = VectorType::get({lanes}, b.getF32Type());
    auto mul = [&](Value x, Value y) {
      return arith::MulFOp::create(b, loc, x, y).getResult();
    };
    Value dot;
    for (int64_t c0 = 0; c0 < half; c0 += lanes) {
      // Lanes [c0, c0 + lanes) of a half (a shuffle: vector.extract_strided_
      // slice has no NVVM lowering here).
      SmallVector<int64_t> lanesOf;
      for (int64_t c = c0; c < c0 + lanes; ++c)
        lanesOf.push_back(c);
      auto slice = [&](Value x) -> Value {
        return vector::ShuffleOp::create(b, loc, x, x, lanesOf);
      };
      Value column = arith::AddIOp::create(b, loc, kColumn, index(c0));
      Value k1 = vector::LoadOp::create(b, loc, chunkType, k,
                                        ValueRange{batch, j, column});
      Value k2 = vector::LoadOp::create(
          b, loc, chunkType, k,
          ValueRange{batch, j,
                     arith::AddIOp::create(b, loc, column, index(half))});
      Value cos = vector::LoadOp::create(b, loc, chunkType, ropeCos,
                                         ValueRange{j, index(c0)});
      Value sin = vector::LoadOp::create(b, loc, chunkType, ropeSin,
                                         ValueRange{j, index(c0)});
      Value a1 = slice(q1), a2 = slice(q2);
      Value same = arith::AddFOp::create(b, loc, mul(a1, k1), mul(a2, k2));
      Value cross = arith::SubFOp::create(b, loc, mul(a2, k1), mul(a1, k2));
      Value products =
          arith::AddFOp::create(b, loc, mul(same, cos), mul(cross, sin));
      Value partial = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD, products, Value(),
          arith::FastMathFlags::reassoc);
      dot = dot ? arith::AddFOp::create(b, loc, dot, partial).getResult()
                : partial;
    }
    return dot;
  }

  /// One online-softmax pass over keys [from, end) (those outside
  /// [lo, len) scored -1e6; lo null: 0): (m, l, acc). `query` is the query
  /// row, or with rope the two halves of the rotated one.
  SmallVector<Value> pass(Value from, Value end, Value lo, Value len,
                          Value batch, ValueRange query, Value kColumn,
                          Value vColumn) {
    auto accType = VectorType::get({sliceWidth}, b.getF32Type());
    auto keyType = VectorType::get({dk}, b.getF32Type());
    SmallVector<Value> init = {f32(-std::numeric_limits<float>::infinity()),
                               f32(0.0f), splat(0.0f, sliceWidth)};
    auto loop = scf::ForOp::create(
        b, loc, from, end, index(1), init,
        [&](OpBuilder &nb, Location nl, Value j, ValueRange state) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value dot;
          if (ropeCos) {
            dot = rotatedDot(query[0], query[1], j, batch, kColumn);
          } else {
            Value kRow = vector::LoadOp::create(b, loc, keyType, k,
                                                ValueRange{batch, j, kColumn});
            Value products = arith::MulFOp::create(b, loc, query[0], kRow);
            dot = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD, products, Value(),
                arith::FastMathFlags::reassoc);
          }
          Value scaled = arith::MulFOp::create(b, loc, dot, f32(scale));
          Value visible =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, len);
          if (lo)
            visible = arith::AndIOp::create(
                b, loc, visible,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j,
                                      lo));
          Value s = arith::SelectOp::create(b, loc, visible, scaled,
                                            f32(kMaskedScore));
          Value m = state[0];
          Value newMax = arith::MaximumFOp::create(b, loc, m, s);
          Value correction = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, m, newMax));
          Value p = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, s, newMax));
          Value l = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, state[1], correction), p);
          Value vRow = vector::LoadOp::create(b, loc, accType, v,
                                              ValueRange{batch, j, vColumn});
          Value scaledAcc = arith::MulFOp::create(
              b, loc, state[2],
              vector::BroadcastOp::create(b, loc, accType, correction));
          Value acc = vector::FMAOp::create(
              b, loc, vector::BroadcastOp::create(b, loc, accType, p), vRow,
              scaledAcc);
          scf::YieldOp::create(b, loc, ValueRange{newMax, l, acc});
        });
    return SmallVector<Value>(loop.getResults());
  }

  void build() {
    int64_t entries = batches * heads;
    // The slices of a row innermost: neighbouring threads read the same
    // keys and neighbouring columns of the values.
    auto loop = scf::ParallelOp::create(
        b, loc, ValueRange{index(0), index(0), index(0)},
        ValueRange{index(entries), index(queries), index(slices)},
        ValueRange{index(1), index(1), index(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value n = loop.getInductionVars()[0];
    Value row = loop.getInductionVars()[1];
    Value slice = loop.getInductionVars()[2];
    Value batch = arith::DivUIOp::create(b, loc, n, index(heads));
    Value head = arith::RemUIOp::create(b, loc, n, index(heads));
    // Query head h reads kv head h / (H / G).
    Value kvHead =
        kvHeads == heads
            ? head
            : arith::DivUIOp::create(b, loc, head, index(heads / kvHeads));
    Value qColumn = arith::MulIOp::create(b, loc, head, index(dk));
    Value kColumn = kvHeads == heads
                        ? qColumn
                        : arith::MulIOp::create(b, loc, kvHead, index(dk));
    Value vColumn = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, kvHead, index(dv)),
        arith::MulIOp::create(b, loc, slice, index(sliceWidth)));
    Value outColumn =
        kvHeads == heads
            ? vColumn
            : arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, head, index(dv)),
                  arith::MulIOp::create(b, loc, slice, index(sliceWidth)));
    // Read before anything is written: `out` may be `q`'s buffer.
    Value qRow =
        vector::LoadOp::create(b, loc, VectorType::get({dk}, b.getF32Type()), q,
                               ValueRange{batch, row, qColumn});
    // With rope, its rotated halves (only: the row is not kept beside them).
    SmallVector<Value, 2> query = {qRow};
    if (ropeCos) {
      Value rotated = rotate(qRow, row);
      SmallVector<int64_t> low, high;
      for (int64_t c = 0; c < dk / 2; ++c) {
        low.push_back(c);
        high.push_back(c + dk / 2);
      }
      query = {vector::ShuffleOp::create(b, loc, rotated, rotated, low),
               vector::ShuffleOp::create(b, loc, rotated, rotated, high)};
    }
    Value len = lengthOf(batch, row);
    Value lo = lowerOf(row);
    SmallVector<Value> first =
        pass(lo ? lo : index(0), len, lo, len, batch, query, kColumn, vColumn);
    Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, len,
                                        lo ? lo : index(0));
    Value underflows =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, first[0],
                              f32(kMaskedScore + kExpUnderflow));
    Value again = arith::OrIOp::create(b, loc, empty, underflows);
    auto exact = scf::IfOp::create(
        b, loc, TypeRange{first[1].getType(), first[2].getType()}, again,
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(exact.thenBlock());
      SmallVector<Value> all =
          pass(index(0), index(keys), lo, len, batch, query, kColumn, vColumn);
      scf::YieldOp::create(b, loc, ValueRange{all[1], all[2]});
      b.setInsertionPointToStart(exact.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{first[1], first[2]});
    }
    auto accType = VectorType::get({sliceWidth}, b.getF32Type());
    Value result = arith::DivFOp::create(
        b, loc, exact.getResult(1),
        vector::BroadcastOp::create(b, loc, accType, exact.getResult(0)));
    vector::StoreOp::create(b, loc, result, out,
                            ValueRange{batch, row, outColumn});
  }
};

struct AttnGpuLowerFusedAttentionPass
    : mlir::attn::impl::AttnGpuLowerFusedAttentionBase<
          AttnGpuLowerFusedAttentionPass> {
  void runOnOperation() override {
    SmallVector<FusedAttentionOp> ops;
    getOperation().walk([&](FusedAttentionOp op) { ops.push_back(op); });
    for (FusedAttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before attn-gpu-lower-fused-"
                       "attention");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Lowering(op, b).build();
      op.erase();
    }
  }
};

} // namespace
