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
//   pass(end):  m = -inf, l = 0, acc = 0
//               for j < end:  s = (j < len) ? q · k[j] * scale : -1e6
//                             m' = max(m, s); c = exp(m - m'); p = exp(s - m')
//                             l = l c + p; acc = acc c + p v[j]; m = m'
//   pass(len); when len <= 0 or m <= -1e6 + 104: pass(Tk)
//   out[i] = acc / l
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
  Value q, k, v, lens, out;
  bool causal;
  float scale;
  int64_t heads, batches, queries, keys, dk, dv;
  /// The output row of a head is split into `slices` threads of
  /// `sliceWidth` columns, so that a thread's registers hold its query row
  /// and at most kMaxSliceWidth accumulators.
  int64_t slices = 1, sliceWidth;

  Lowering(FusedAttentionOp op, OpBuilder &b)
      : op(op), b(b), loc(op.getLoc()), q(op.getQ()), k(op.getK()),
        v(op.getV()), lens(op.getValidLens()), out(op.getInit()),
        causal(op.getCausal()), scale(op.getScale().convertToFloat()),
        heads(op.getHeads()) {
    auto qType = cast<MemRefType>(q.getType());
    auto vType = cast<MemRefType>(v.getType());
    batches = qType.getDimSize(0);
    queries = qType.getDimSize(1);
    keys = cast<MemRefType>(k.getType()).getDimSize(1);
    dk = qType.getDimSize(2) / heads;
    dv = vType.getDimSize(2) / heads;
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

  /// One online-softmax pass over keys [0, end) (those at or past `len`
  /// scored -1e6): (m, l, acc).
  SmallVector<Value> pass(Value end, Value len, Value batch, Value qRow,
                          Value kColumn, Value vColumn) {
    auto accType = VectorType::get({sliceWidth}, b.getF32Type());
    auto keyType = VectorType::get({dk}, b.getF32Type());
    SmallVector<Value> init = {f32(-std::numeric_limits<float>::infinity()),
                               f32(0.0f), splat(0.0f, sliceWidth)};
    auto loop = scf::ForOp::create(
        b, loc, index(0), end, index(1), init,
        [&](OpBuilder &nb, Location nl, Value j, ValueRange state) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value kRow = vector::LoadOp::create(b, loc, keyType, k,
                                              ValueRange{batch, j, kColumn});
          Value products = arith::MulFOp::create(b, loc, qRow, kRow);
          Value dot = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD, products, Value(),
              arith::FastMathFlags::reassoc);
          Value scaled = arith::MulFOp::create(b, loc, dot, f32(scale));
          Value visible =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, len);
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
    Value kColumn = arith::MulIOp::create(b, loc, head, index(dk));
    Value vColumn = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, head, index(dv)),
        arith::MulIOp::create(b, loc, slice, index(sliceWidth)));
    // Read before anything is written: `out` may be `q`'s buffer.
    Value qRow =
        vector::LoadOp::create(b, loc, VectorType::get({dk}, b.getF32Type()), q,
                               ValueRange{batch, row, kColumn});
    Value len = lengthOf(batch, row);
    SmallVector<Value> first = pass(len, len, batch, qRow, kColumn, vColumn);
    Value empty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, len, index(0));
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
          pass(index(keys), len, batch, qRow, kColumn, vColumn);
      scf::YieldOp::create(b, loc, ValueRange{all[1], all[2]});
      b.setInsertionPointToStart(exact.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{first[1], first[2]});
    }
    auto accType = VectorType::get({sliceWidth}, b.getF32Type());
    Value result = arith::DivFOp::create(
        b, loc, exact.getResult(1),
        vector::BroadcastOp::create(b, loc, accType, exact.getResult(0)));
    vector::StoreOp::create(b, loc, result, out,
                            ValueRange{batch, row, vColumn});
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
