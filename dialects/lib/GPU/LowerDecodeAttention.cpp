//===- LowerDecodeAttention.cpp - A KV cache's attention, split over keys -===//
//
// Lowers attn.decode_attention (on memrefs) to two launches, the keys split
// into chunks as Flash-Decoding does (sizes: attn/Target/GpuTarget.h,
// decodeTile):
//
//   partials: a block per (batch entry b, `warps` rows of it, chunk c of
//   chunkKeys cache rows); a warp per row (query head h, new token t),
//   lane l holding the query columns l, l + 32, ... and the same output
//   columns; p = pos[b]:
//     end = p + t + 1, lo = max(0, end - W) with window(W), else 0
//     m = -inf, s = 0, acc = 0
//     for each cache row j of chunk c in [lo(token 0), p + T):
//       x = q · k[j] * scale (the lanes' partial products added with
//           xor shuffles: every lane has x)
//       when lo <= j < end: m' = max(m, x); s = s e^(m - m') + e^(x - m');
//                           acc = acc e^(m - m') + e^(x - m') v[j]; m = m'
//     partials[b, h, t, c] = (m, s, acc)
//   combine: a warp per row, the lanes on its output columns:
//     M = max over c of m_c; then in chunk order
//     S += s_c e^(m_c - M), O += acc_c e^(m_c - M); out = O / S
//
// The chunks are fixed by the shapes and combined in chunk order: the same
// bits on every run, however the blocks are scheduled. The warps of a
// block are neighbouring rows (the query heads of one kv head, query head
// h reading kv head h / (H / G)), so they read the same cache rows; the
// lanes read neighbouring columns of a row. No row at or past p + T is read
// (such rows may hold anything, NaN included), and a key a row does not see
// weighs exactly 0: no row needs attn.fused_attention's exact pass. An
// entry whose position is out of range (p < 0 or p + T > L) reads nothing
// and its output rows stay as they are.
//
// Every warp of a block walks the same keys (those of the entry's tokens,
// the row's own masked), as a loop holding a `gpu.shuffle` must have the
// same bounds in every thread of a block for attn-gpu-emulate-launches.
//
//===----------------------------------------------------------------------===//

#include "attn/Attention/OnlineSoftmax.h"
#include "attn/GPU/Passes.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPULOWERDECODEATTENTION
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct DecodeLowering {
  DecodeAttentionOp op;
  OpBuilder &b;
  Location loc;
  Value q, k, v, pos, out;
  int64_t heads, kvHeads, batches, tokens, cacheRows, dk, dv;
  std::optional<int64_t> window;
  float scale;
  /// products(bf16): the type q, k, v and the weights are rounded to.
  FloatType products;
  GpuDecodeTile tile;
  int64_t warp;
  /// Rows of an entry (heads x tokens), chunks of the cache, and the
  /// columns of q and out each lane holds.
  int64_t rows, chunks, qPerLane, vPerLane;
  /// The partial results: max and sum [B * rows, chunks], output
  /// [B * rows, chunks, dv].
  Value partMax, partSum, partOut;

  DecodeLowering(DecodeAttentionOp op, OpBuilder &b,
                 const GpuTargetDescription &target)
      : op(op), b(b), loc(op.getLoc()), q(op.getQ()), k(op.getK()),
        v(op.getV()), pos(op.getPos()), out(op.getInit()), heads(op.getHeads()),
        kvHeads(op.getNumKvHeads()), scale(op.getScale().convertToFloat()),
        warp(target.warpSize) {
    auto qType = cast<MemRefType>(q.getType());
    auto kType = cast<MemRefType>(k.getType());
    batches = qType.getDimSize(0);
    tokens = qType.getDimSize(1);
    cacheRows = kType.getDimSize(1);
    dk = qType.getDimSize(2) / heads;
    dv = cast<MemRefType>(v.getType()).getDimSize(2) / kvHeads;
    if (std::optional<uint64_t> w = op.getWindow())
      window = static_cast<int64_t>(*w);
    if (std::optional<Type> type = op.getProducts())
      products = cast<FloatType>(*type);
    rows = heads * tokens;
    tile = decodeTile(target, batches, rows, cacheRows);
    chunks = llvm::divideCeil(cacheRows, tile.chunkKeys);
    qPerLane = llvm::divideCeil(dk, warp);
    vPerLane = llvm::divideCeil(dv, warp);
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, index(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, index(y));
  }
  Value below(Value x, int64_t bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                                 index(bound));
  }
  /// `x` as an operand of a product (productOperand).
  Value rounded(Value x) { return productOperand(b, loc, x, products); }

  /// Element `at` of `memref` as f32 (a cache may be bf16 or f16).
  Value loadF32(Value memref, ValueRange at) {
    Value x = memref::LoadOp::create(b, loc, memref, at);
    if (!x.getType().isF32())
      x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return x;
  }

  /// Column i of a lane's share (lane + 32 i), clamped into a row of
  /// `width` (a column past it reads column 0; its share is dropped).
  Value column(Value lane, int64_t i) { return add(lane, index(i * warp)); }
  Value safeColumn(Value c, int64_t width) {
    if (width % warp == 0)
      return c;
    return arith::SelectOp::create(b, loc, below(c, width), c, index(0));
  }

  /// The entry's position, whether it is in range, and the keys its
  /// tokens see between them: [lo(token 0), p + T) (lo = 0 without a
  /// window); nothing (an empty range) when out of range.
  struct Entry {
    Value pos, valid, begin, end;
  };
  Entry entryOf(Value batch) {
    Entry entry;
    entry.pos = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, pos, ValueRange{batch}));
    Value fits =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                              add(entry.pos, index(tokens)), index(cacheRows));
    entry.valid = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, entry.pos,
                              index(0)),
        fits);
    Value begin = visibleBegin(b, loc, entry.pos, window);
    entry.begin = begin ? begin : index(0);
    entry.end = arith::SelectOp::create(
        b, loc, entry.valid, add(entry.pos, index(tokens)), entry.begin);
    return entry;
  }

  /// The first columns of query head `head`'s q row and of its kv head's
  /// key and value rows.
  struct HeadColumns {
    Value q, k, v;
  };
  HeadColumns headColumns(Value head) {
    Value kvHead = div(head, heads / kvHeads);
    return {mul(head, dk), mul(kvHead, dk), mul(kvHead, dv)};
  }

  /// value(i) stored at at(c) of `memref` for each output column c = lane
  /// + 32 i of the lane's share within the row, where `when` holds.
  void storeLaneColumns(Value lane, Value when, Value memref,
                        function_ref<Value(int64_t)> value,
                        function_ref<SmallVector<Value>(Value)> at) {
    for (int64_t i = 0; i < vPerLane; ++i) {
      OpBuilder::InsertionGuard inner(b);
      Value c = column(lane, i);
      Value here = when;
      if (dv % warp != 0)
        here = arith::AndIOp::create(b, loc, here, below(c, dv));
      auto branch = scf::IfOp::create(b, loc, here, false);
      b.setInsertionPointToStart(branch.thenBlock());
      memref::StoreOp::create(b, loc, value(i), memref, at(c));
    }
  }

  /// Row `row` (h T + t) of entry `batch` in the partial buffers.
  Value flatRow(Value batch, Value row) { return add(mul(batch, rows), row); }

  void build() {
    Type f32Type = b.getF32Type();
    partMax = memref::AllocOp::create(
        b, loc, MemRefType::get({batches * rows, chunks}, f32Type));
    partSum = memref::AllocOp::create(
        b, loc, MemRefType::get({batches * rows, chunks}, f32Type));
    partOut = memref::AllocOp::create(
        b, loc, MemRefType::get({batches * rows, chunks, dv}, f32Type));
    buildPartials();
    buildCombine();
    for (Value buffer : {partMax, partSum, partOut})
      memref::DeallocOp::create(b, loc, buffer);
  }

  gpu::LaunchOp launch(int64_t blocks, int64_t threads) {
    Value one = index(1);
    return gpu::LaunchOp::create(
        b, loc, index(blocks), one, one, index(threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, b.getType<gpu::AsyncTokenType>(),
        /*asyncDependencies=*/ValueRange{});
  }

  void buildPartials() {
    int64_t rowBlocks = llvm::divideCeil(rows, tile.warps);
    gpu::LaunchOp partials =
        launch(batches * rowBlocks * chunks, tile.warps * warp);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&partials.getBody().front());
    Value block = partials.getBlockIds().x;
    Value thread = partials.getThreadIds().x;
    // Uniform in the block: its entry, rows and chunk.
    Value chunk = rem(block, chunks);
    Value batch = div(block, rowBlocks * chunks);
    Value rowBlock = rem(div(block, chunks), rowBlocks);
    Entry entry = entryOf(batch);
    Value chunkBegin = mul(chunk, tile.chunkKeys);
    Value from = arith::MaxSIOp::create(b, loc, entry.begin, chunkBegin);
    Value to = arith::MinSIOp::create(b, loc, entry.end,
                                      add(chunkBegin, index(tile.chunkKeys)));
    to = arith::MaxSIOp::create(b, loc, from, to);

    // This warp's row (a row past the entry's last walks the keys masked
    // and stores nothing) and its lane.
    Value lane = rem(thread, warp);
    Value ownRow = add(mul(rowBlock, tile.warps), div(thread, warp));
    Value live = below(ownRow, rows);
    Value row = arith::SelectOp::create(b, loc, live, ownRow, index(0));
    Value head = div(row, tokens), token = rem(row, tokens);
    HeadColumns columns = headColumns(head);
    // The token's own cache row, p + t, is the last it sees.
    Value ownKey = add(entry.pos, token);
    Value rowBegin = visibleBegin(b, loc, ownKey, window);
    Value rowEnd = add(ownKey, index(1));

    SmallVector<Value> query;
    for (int64_t i = 0; i < qPerLane; ++i)
      query.push_back(rounded(loadF32(
          q, ValueRange{batch, token,
                        add(columns.q, safeColumn(column(lane, i), dk))})));

    float minusInfinity = -std::numeric_limits<float>::infinity();
    SmallVector<Value> init = {f32(minusInfinity), f32(0.0f)};
    init.append(vPerLane, f32(0.0f));
    auto keys = scf::ForOp::create(
        b, loc, from, to, index(1), init,
        [&](OpBuilder &nb, Location, Value j, ValueRange state) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value partial = f32(0.0f);
          for (int64_t i = 0; i < qPerLane; ++i) {
            Value c = column(lane, i);
            Value term = arith::MulFOp::create(
                b, loc, query[i],
                rounded(
                    loadF32(k, ValueRange{batch, j,
                                          add(columns.k, safeColumn(c, dk))})));
            if (dk % warp != 0)
              term = arith::SelectOp::create(b, loc, below(c, dk), term,
                                             f32(0.0f));
            partial = arith::AddFOp::create(b, loc, partial, term);
          }
          for (int64_t offset = warp / 2; offset >= 1; offset /= 2)
            partial = arith::AddFOp::create(
                b, loc, partial,
                gpu::ShuffleOp::create(
                    b, loc, partial, static_cast<int32_t>(offset),
                    static_cast<int32_t>(warp), gpu::ShuffleMode::XOR)
                    .getShuffleResult());
          Value x = arith::MulFOp::create(b, loc, partial, f32(scale));
          Value visible = arith::AndIOp::create(
              b, loc, live, isKeyVisible(b, loc, j, rowBegin, rowEnd));
          // A key the row does not see leaves its state as it was.
          KeyStep key = onlineKeyStep(b, loc, state[0], state[1], x, visible);
          SmallVector<Value> next = {key.max, key.sum};
          // The sum takes the weight as it is; with products(bf16), the
          // product with v its rounding.
          Value product = rounded(key.weight);
          for (int64_t i = 0; i < vPerLane; ++i) {
            Value value = rounded(loadF32(
                v,
                ValueRange{batch, j,
                           add(columns.v, safeColumn(column(lane, i), dv))}));
            next.push_back(
                accumulated(b, loc, rescaled(b, loc, state[2 + i], key.alpha),
                            product, value));
          }
          scf::YieldOp::create(b, loc, next);
        });

    Value at = flatRow(batch, row);
    {
      OpBuilder::InsertionGuard inner(b);
      auto first = scf::IfOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, live,
                                arith::CmpIOp::create(b, loc,
                                                      arith::CmpIPredicate::eq,
                                                      lane, index(0))),
          false);
      b.setInsertionPointToStart(first.thenBlock());
      memref::StoreOp::create(b, loc, keys.getResult(0), partMax,
                              ValueRange{at, chunk});
      memref::StoreOp::create(b, loc, keys.getResult(1), partSum,
                              ValueRange{at, chunk});
    }
    storeLaneColumns(
        lane, live, partOut, [&](int64_t i) { return keys.getResult(2 + i); },
        [&](Value c) -> SmallVector<Value> { return {at, chunk, c}; });
    gpu::TerminatorOp::create(b, loc);
  }

  void buildCombine() {
    int64_t warps = std::min<int64_t>(tile.warps, batches * rows);
    gpu::LaunchOp combine =
        launch(llvm::divideCeil(batches * rows, warps), warps * warp);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&combine.getBody().front());
    Value thread = combine.getThreadIds().x;
    Value lane = rem(thread, warp);
    Value at = add(mul(combine.getBlockIds().x, warps), div(thread, warp));
    Value live = below(at, batches * rows);
    at = arith::SelectOp::create(b, loc, live, at, index(0));
    Value batch = div(at, rows), row = rem(at, rows);
    Value head = div(row, tokens), token = rem(row, tokens);
    Entry entry = entryOf(batch);
    // The chunks the entry's keys are in.
    Value firstChunk = div(entry.begin, tile.chunkKeys);
    Value lastChunk = arith::MaxSIOp::create(
        b, loc, firstChunk,
        div(add(entry.end, index(tile.chunkKeys - 1)), tile.chunkKeys));

    SmallVector<Value> sums = combinePartials(
        b, loc, firstChunk, lastChunk,
        [&](Value c) -> Value {
          return memref::LoadOp::create(b, loc, partMax, ValueRange{at, c});
        },
        [&](Value c) {
          ChunkPartial partial;
          partial.sum =
              memref::LoadOp::create(b, loc, partSum, ValueRange{at, c});
          for (int64_t i = 0; i < vPerLane; ++i)
            partial.out.push_back(memref::LoadOp::create(
                b, loc, partOut,
                ValueRange{at, c, safeColumn(column(lane, i), dv)}));
          return partial;
        },
        SmallVector<Value>(vPerLane, f32(0.0f)));
    storeLaneColumns(
        lane, arith::AndIOp::create(b, loc, live, entry.valid), out,
        [&](int64_t i) -> Value {
          return normalized(b, loc, sums[1 + i], sums[0]);
        },
        [&](Value c) -> SmallVector<Value> {
          return {batch, token, add(mul(head, dv), c)};
        });
    gpu::TerminatorOp::create(b, loc);
  }
};

struct AttnGpuLowerDecodeAttentionPass
    : mlir::attn::impl::AttnGpuLowerDecodeAttentionBase<
          AttnGpuLowerDecodeAttentionPass> {
  using AttnGpuLowerDecodeAttentionBase::AttnGpuLowerDecodeAttentionBase;

  void runOnOperation() override {
    GpuTargetDescription target = describeGpu(chip);
    func::FuncOp func = getOperation();
    SmallVector<DecodeAttentionOp> ops;
    func.walk([&](DecodeAttentionOp op) { ops.push_back(op); });
    for (DecodeAttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before attn-gpu-lower-decode-"
                       "attention");
        return signalPassFailure();
      }
      // Launches are host code: at the function's top level.
      if (op->getParentOp() != func.getOperation()) {
        op.emitOpError("must be at the top level of its function for "
                       "attn-gpu-lower-decode-attention (it becomes "
                       "launches)");
        return signalPassFailure();
      }
      OpBuilder b(op);
      DecodeLowering(op, b, target).build();
      op.erase();
    }
  }
};

} // namespace
