//===- FlashPairs.cpp - bf16 pairs, vdpbf16ps products --------------------===//
//
// See FlashEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "FlashEmitter.h"

#include "Bf16PairStep.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::attn;

void FlashEmitter::allocatePairs() {
  Type f32Type = b.getF32Type();
  auto alloc = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, f32Type),
                                   b.getI64IntegerAttr(64));
  };
  kTiles = alloc({paddedKeys / 16, depth / 2, 16});
  // AMX reads a column block's pairs as tiles; vdpbf16ps a pair's
  // column blocks together (one stream of v, not dv / 16 streams
  // paddedKeys * 32 bytes apart, in the same L1 sets).
  vTiles = dot ? alloc({paddedKeys / 2, width})
               : alloc({width / 16, paddedKeys / 2, 16});
  // The keys past Tk stay zero: their scores are masked, their weights 0
  // (a NaN of stale memory would still reach the sums through 0 x NaN).
  if (paddedKeys == keys)
    return;
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({16}, f32Type), 0.0f));
  forRange(0, paddedKeys / 16, 1, [&](Value t) {
    forRange(0, depth / 2, 1, [&](Value p) {
      vector::StoreOp::create(b, loc, zero, kTiles, ValueRange{t, p, index(0)});
    });
  });
  forRange(0, width / 16, 1, [&](Value t) {
    forRange(0, paddedKeys / 2, 1, [&](Value p) {
      vector::StoreOp::create(b, loc, zero, vTiles, valuePairsAt(t, p));
    });
  });
}

SmallVector<Value> FlashEmitter::valuePairsAt(Value block, Value pair) {
  if (dot)
    return {pair, arith::MulIOp::create(b, loc, block, index(16))};
  return {block, pair, index(0)};
}

Value FlashEmitter::narrowed(Value x) {
  Type type = bf16();
  if (auto vector = dyn_cast<VectorType>(x.getType()))
    type = vector.clone(type);
  return arith::TruncFOp::create(b, loc, type, x);
}

Value FlashEmitter::rowVector(
    Value source, Value row,
    function_ref<SmallVector<Value>(Value, Value)> where) {
  auto load = [&](Value memref, ArrayRef<Value> at, int64_t lanes) {
    return vector::LoadOp::create(
        b, loc, VectorType::get({lanes}, b.getF32Type()), memref, at);
  };
  if (!ropeCos)
    return rounded(load(source, where(row, index(0)), depth));
  int64_t half = depth / 2;
  Value x1 = load(source, where(row, index(0)), half);
  Value x2 = load(source, where(row, index(half)), half);
  Value cos = load(ropeCos, {row, index(0)}, half);
  Value sin = load(ropeSin, {row, index(0)}, half);
  // Rounded after the rotation, as copyRow rounds.
  auto [first, second] = rotateHalves(b, loc, x1, x2, cos, sin);
  return rounded(concatenated({first, second}));
}

Value FlashEmitter::pairSlots(Value x) {
  auto type = cast<VectorType>(x.getType());
  return vector::BitCastOp::create(
      b, loc, VectorType::get({type.getDimSize(0) / 2}, b.getF32Type()),
      narrowed(x));
}

void FlashEmitter::packKeysAndValues() {
  Value c16 = index(16);
  forRange(0, keys, 1, [&](Value j) {
    Value tile = arith::DivUIOp::create(b, loc, j, c16);
    Value slot = arith::RemUIOp::create(b, loc, j, c16);
    Value pairs = pairSlots(
        rowVector(k, j, [&](Value row, Value c) { return kAt(row, c); }));
    // Pair p of key j is row p of its tile: a 32-bit transpose.
    for (int64_t p = 0; p < depth / 2; ++p)
      memref::StoreOp::create(b, loc,
                              vector::ExtractOp::create(b, loc, pairs, p),
                              kTiles, ValueRange{tile, index(p), slot});
  });
  // Values: keys 2p and 2p + 1 interleaved, 16 columns at a time.
  SmallVector<int64_t> interleave;
  for (int64_t i = 0; i < 16; ++i) {
    interleave.push_back(i);
    interleave.push_back(i + 16);
  }
  auto chunkType = VectorType::get({16}, b.getF32Type());
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(chunkType, 0.0f));
  auto packPair = [&](Value j, bool second) {
    Value pair = arith::DivUIOp::create(b, loc, j, index(2));
    for (int64_t c0 = 0; c0 < width; c0 += 16) {
      Value even = rounded(
          vector::LoadOp::create(b, loc, chunkType, v, vAt(j, index(c0))));
      Value odd =
          second ? rounded(vector::LoadOp::create(
                       b, loc, chunkType, v, vAt(add(j, index(1)), index(c0))))
                 : zero;
      Value both = vector::ShuffleOp::create(b, loc, even, odd, interleave);
      vector::StoreOp::create(b, loc, pairSlots(both), vTiles,
                              valuePairsAt(index(c0 / 16), pair));
    }
  };
  forRange(0, keys / 2 * 2, 2, [&](Value j) { packPair(j, true); });
  if (keys % 2 != 0)
    packPair(index(keys - 1), false);
}

Value FlashEmitter::keyFromTiles(Value c, Value j) {
  Value c16 = index(16), c2 = index(2);
  Value slot = memref::LoadOp::create(
      b, loc, kTiles,
      ValueRange{arith::DivUIOp::create(b, loc, j, c16),
                 arith::DivUIOp::create(b, loc, c, c2),
                 arith::RemUIOp::create(b, loc, j, c16)});
  Value pair = vector::BitCastOp::create(
      b, loc, VectorType::get({2}, bf16()),
      vector::BroadcastOp::create(b, loc, VectorType::get({1}, b.getF32Type()),
                                  slot));
  Value x = vector::ExtractOp::create(
      b, loc, pair,
      ArrayRef<OpFoldResult>{
          OpFoldResult(arith::RemUIOp::create(b, loc, c, c2).getResult())});
  return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
}

SmallVector<Value> FlashEmitter::pairScoresOf(ArrayRef<Value> row, Value jt,
                                              int64_t lanes) {
  int64_t rows = row.size();
  int64_t pieceLanes = std::min<int64_t>(lanes, 16);
  int64_t pieces = lanes / pieceLanes;
  auto pieceType = VectorType::get({pieceLanes}, b.getF32Type());
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(pieceType, 0.0f));
  Value tile = arith::DivUIOp::create(b, loc, jt, index(16));
  Value slot = arith::RemUIOp::create(b, loc, jt, index(16));
  auto loop = scf::ForOp::create(
      b, loc, index(0), index(depth / 2), index(1),
      SmallVector<Value>(rows * pieces, zero),
      [&](OpBuilder &nb, Location, Value p, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        SmallVector<Value> slots, lhsPairs;
        for (int64_t t = 0; t < pieces; ++t)
          slots.push_back(
              vector::LoadOp::create(b, loc, pieceType, kTiles,
                                     ValueRange{add(tile, index(t)), p, slot}));
        Value column = arith::MulIOp::create(b, loc, p, index(2));
        for (Value i : row)
          lhsPairs.push_back(
              pairAt(queryPairs, ValueRange{inSuperBlock(i), column}));
        scf::YieldOp::create(b, loc,
                             emitPairStep(b, loc,
                                          pieceLanes >= 4
                                              ? CpuSchedule::Bf16Dot::Vdpbf16ps
                                              : CpuSchedule::Bf16Dot::None,
                                          slots, lhsPairs, acc));
      });
  SmallVector<Value> scores;
  for (int64_t r = 0; r < rows; ++r)
    scores.push_back(
        concatenated(ValueRange(loop.getResults()).slice(r * pieces, pieces)));
  return scores;
}

Value FlashEmitter::keptPairWeights(Value x, Value row, Value t) {
  int64_t lanes = cast<VectorType>(x.getType()).getNumElements();
  if (lanes % 16 != 0) {
    Value p = softmaxExp(b, loc, x);
    vector::StoreOp::create(b, loc, narrowed(p), weightPairs,
                            ValueRange{row, t});
    return p;
  }
  SmallVector<Value> pieces;
  for (int64_t i = 0; i < lanes; i += 16) {
    Value p =
        nonPositiveExp16(b, loc,
                         vector::ExtractStridedSliceOp::create(
                             b, loc, x, ArrayRef<int64_t>{i},
                             ArrayRef<int64_t>{16}, ArrayRef<int64_t>{1}));
    vector::StoreOp::create(b, loc,
                            x86vector::CvtPackedF32ToBF16Op::create(
                                b, loc, VectorType::get({16}, bf16()), p),
                            weightPairs, ValueRange{row, add(t, index(i))});
    pieces.push_back(p);
  }
  return concatenated(pieces);
}

Value FlashEmitter::pairAt(Value memref, ValueRange at) {
  Value pair =
      vector::LoadOp::create(b, loc, VectorType::get({2}, bf16()), memref, at);
  return vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()),
                                   pair);
}

Value FlashEmitter::concatenated(ValueRange parts) {
  SmallVector<Value> level(parts.begin(), parts.end());
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < level.size(); i += 2) {
      int64_t lanes = cast<VectorType>(level[i].getType()).getNumElements();
      SmallVector<int64_t> both;
      for (int64_t j = 0; j < 2 * lanes; ++j)
        both.push_back(j);
      next.push_back(
          vector::ShuffleOp::create(b, loc, level[i], level[i + 1], both));
    }
    level = std::move(next);
  }
  return level[0];
}

void FlashEmitter::pairWeightedValues(
    ArrayRef<Value> row, Value j0, int64_t span, ArrayRef<Value> alphas,
    ArrayRef<std::pair<int64_t, int64_t>> group) {
  int64_t rows = row.size(), pieces = group.size();
  auto chunkType = VectorType::get({16}, b.getF32Type());
  SmallVector<Value> acc;
  for (int64_t r = 0; r < rows; ++r)
    for (auto [c0, chunk] : group) {
      Value o = vector::LoadOp::create(b, loc, chunkType, out,
                                       outAt(row[r], index(c0)));
      acc.push_back(arith::MulFOp::create(b, loc, o, splat(alphas[r], 16)));
    }
  Value firstPair = arith::DivUIOp::create(b, loc, j0, index(2));
  auto loop = scf::ForOp::create(
      b, loc, index(0), index((span + 1) / 2), index(1), acc,
      [&](OpBuilder &nb, Location, Value i, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        SmallVector<Value> slots, lhsPairs;
        Value pair = add(firstPair, i);
        for (auto [c0, chunk] : group)
          slots.push_back(vector::LoadOp::create(
              b, loc, chunkType, vTiles, valuePairsAt(index(c0 / 16), pair)));
        Value key = arith::MulIOp::create(b, loc, i, index(2));
        for (int64_t r = 0; r < rows; ++r)
          lhsPairs.push_back(pairAt(weightPairs, ValueRange{index(r), key}));
        scf::YieldOp::create(b, loc,
                             emitPairStep(b, loc,
                                          CpuSchedule::Bf16Dot::Vdpbf16ps,
                                          slots, lhsPairs, acc));
      });
  for (int64_t r = 0; r < rows; ++r)
    for (auto [g, piece] : llvm::enumerate(group))
      vector::StoreOp::create(b, loc, loop.getResult(r * pieces + g), out,
                              outAt(row[r], index(piece.first)));
}
