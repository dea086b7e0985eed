//===- FlashAmx.cpp - Both attention products on AMX ----------------------===//
//
// See FlashEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "FlashEmitter.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

void FlashEmitter::allocateAmxScratch() {
  Type f32Type = b.getF32Type();
  auto alloc = [&](ArrayRef<int64_t> shape, Type element) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, element),
                                   b.getI64IntegerAttr(64));
  };
  allocatePairs();
  qTiles = alloc({depth / 32, 16, 32}, bf16());
  scores = alloc({16, amxKeys}, f32Type);
  weightTiles = alloc({amxKeys / 32, 16, 32}, bf16());
  outTile = alloc({16, width}, f32Type);
  stats = alloc({3, 16}, f32Type);
  products16 = alloc({16, width}, f32Type);
  sums = alloc({16, 16}, f32Type);
  stepSums = alloc({16, 16}, f32Type);
  queryRows = alloc({16, depth}, f32Type);
  if (mayBeEmpty())
    mean = alloc({width}, f32Type);
}

void FlashEmitter::amxRowTile(Value n, Value i0, int64_t count) {
  Type f32Type = b.getF32Type();
  auto vecType = VectorType::get({16}, f32Type);
  superStart = i0;
  // Copies first: `out` may be `q`'s buffer.
  forRange(0, count, 1, [&](Value r) {
    Value x = rowVector(q, add(i0, r),
                        [&](Value row, Value c) { return qAt(row, c); });
    vector::StoreOp::create(b, loc, x, queryRows, ValueRange{r, index(0)});
    for (int64_t c0 = 0; c0 < depth; c0 += 32) {
      Value chunk =
          vector::LoadOp::create(b, loc, VectorType::get({32}, f32Type),
                                 queryRows, ValueRange{r, index(c0)});
      vector::StoreOp::create(b, loc, narrowed(chunk), qTiles,
                              ValueRange{index(c0 / 32), r, index(0)});
    }
  });
  Value zeros =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vecType, 0.0f));
  // Every row of the state, the tile's missing rows too (their lanes go
  // through the vector steps).
  vector::StoreOp::create(b, loc, maxIdentity(b, loc, vecType, ScoreMax::Plain),
                          stats, ValueRange{index(0), index(0)});
  forRange(0, 16, 1, [&](Value r) {
    vector::StoreOp::create(b, loc, zeros, sums, ValueRange{r, index(0)});
    for (int64_t c0 = 0; c0 < width; c0 += 16)
      vector::StoreOp::create(b, loc, zeros, outTile, ValueRange{r, index(c0)});
  });
  // The longest and shortest row, the highest window start.
  auto bounds = scf::ForOp::create(
      b, loc, index(0), index(count), index(1),
      ValueRange{index(0), index(keys), index(0)},
      [&](OpBuilder &nb, Location, Value r, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value row = add(i0, r);
        Value len = lengthOf(n, row);
        Value lo = window ? lowerOf(row) : index(0);
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::MaxSIOp::create(b, loc, acc[0], len),
                       arith::MinSIOp::create(b, loc, acc[1], len),
                       arith::MaxSIOp::create(b, loc, acc[2], lo)});
      });
  Value maxLen = bounds.getResult(0), minLen = bounds.getResult(1),
        maxLo = bounds.getResult(2);
  // Steps from the one holding the first row's window (the lowest) to
  // the longest row's end.
  Value step = index(amxKeys);
  Value first = index(0);
  if (window)
    first = arith::DivUIOp::create(b, loc, lowerOf(i0), step);
  Value last = arith::DivUIOp::create(
      b, loc,
      add(arith::MaxSIOp::create(b, loc, maxLen, index(0)), index(amxKeys - 1)),
      step);
  // The scores of the next step are computed before this step's p @ v:
  // the weights' vector stores drain meanwhile (a tile load right after
  // them waits for them).
  {
    auto any = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first, last),
        false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(any.thenBlock());
    amxScores(arith::MulIOp::create(b, loc, first, step));
  }
  auto loop = scf::ForOp::create(b, loc, first, last, index(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value it = loop.getInductionVar();
    Value j0 = arith::MulIOp::create(b, loc, it, step);
    // A step inside every row's visible keys needs no mask.
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                              add(j0, index(amxKeys)), minLen),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j0, maxLo));
    amxWeights(n, i0, count, j0, inside);
    {
      Value next = add(it, index(1));
      auto more = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next, last),
          false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(more.thenBlock());
      amxScores(arith::MulIOp::create(b, loc, next, step));
    }
    amxWeightedValues(count, j0);
  }
  forRange(0, count, 1, [&](Value r) {
    Value row = add(i0, r);
    for (int64_t c0 = 0; c0 < width; c0 += 16) {
      Value o = vector::LoadOp::create(b, loc, vecType, outTile,
                                       ValueRange{r, index(c0)});
      vector::StoreOp::create(b, loc, o, out, outAt(row, index(c0)));
    }
    Value rowMax =
        memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
    Value rowSum = vector::ReductionOp::create(
        b, loc, vector::CombiningKind::ADD,
        vector::LoadOp::create(b, loc, vecType, sums, ValueRange{r, index(0)}));
    finishRow(n, row, lengthOf(n, row), lowerOf(row), rowMax, rowSum);
  });
}

void FlashEmitter::tileProducts(int64_t columns, int64_t steps,
                                function_ref<Value(int64_t)> aTile,
                                function_ref<Value(int64_t, int64_t)> bTile,
                                function_ref<void(int64_t, Value)> store) {
  auto accType = amx::TileType::get({16, 16}, b.getF32Type());
  for (int64_t c0 = 0; c0 < columns; c0 += 4) {
    int64_t count = std::min<int64_t>(4, columns - c0);
    SmallVector<Value> acc;
    for (int64_t c = 0; c < count; ++c)
      acc.push_back(amx::TileZeroOp::create(b, loc, accType));
    for (int64_t s = 0; s < steps; ++s) {
      Value a = aTile(s);
      for (int64_t c = 0; c < count; ++c)
        acc[c] = amx::TileMulFOp::create(b, loc, accType, a, bTile(c0 + c, s),
                                         acc[c]);
    }
    for (int64_t c = 0; c < count; ++c)
      store(c0 + c, acc[c]);
  }
}

Value FlashEmitter::pairsTile(Value memref, ValueRange at) {
  return amx::TileLoadOp::create(b, loc, amx::TileType::get({16, 32}, bf16()),
                                 memref, at);
}

void FlashEmitter::amxScores(Value j0) {
  Value keyTile0 = arith::DivUIOp::create(b, loc, j0, index(16));
  tileProducts(
      amxKeys / 16, depth / 32,
      [&](int64_t s) {
        return pairsTile(qTiles, {index(s), index(0), index(0)});
      },
      [&](int64_t t, int64_t s) {
        return pairsTile(kTiles,
                         {add(keyTile0, index(t)), index(16 * s), index(0)});
      },
      [&](int64_t t, Value acc) {
        amx::TileStoreOp::create(b, loc, scores,
                                 ValueRange{index(0), index(16 * t)}, acc);
      });
}

void FlashEmitter::amxWeights(Value n, Value i0, int64_t count, Value j0,
                              Value inside) {
  auto vecType = VectorType::get({16}, b.getF32Type());
  // The online softmax, a row at a time: the step's max (stats[1]), its
  // weights rounded into weightTiles, their sum as a vector (sums) added
  // to the row's below.
  SmallVector<int32_t> lanes;
  for (int32_t j = 0; j < 16; ++j)
    lanes.push_back(j);
  Value laneIndex = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({16}, b.getI32Type()),
                             ArrayRef(lanes)));
  Value firstKey =
      splat(arith::IndexCastOp::create(b, loc, b.getI32Type(), j0), 16);
  auto rowStep = [&](Value r, bool masked) {
    Value row = add(i0, r);
    Value len, lo;
    if (masked) {
      len = lengthOf(n, row);
      lo = lowerOf(row);
    }
    SmallVector<Value> s;
    Value blockMax;
    for (int64_t t = 0; t < amxKeys / 16; ++t) {
      Value x = vector::LoadOp::create(b, loc, vecType, scores,
                                       ValueRange{r, index(16 * t)});
      x = arith::MulFOp::create(b, loc, x, splat(f32(scale), 16));
      if (masked) {
        Value key = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, firstKey, laneIndex),
            splat(arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16 * t),
                  16));
        Value visible = isKeyVisible(b, loc, key, lo, len, [&](Value bound) {
          return splat(
              arith::IndexCastOp::create(b, loc, b.getI32Type(), bound), 16);
        });
        x = maskScore(b, loc, visible, x);
        if (paddedKeys != keys) {
          // Keys past Tk are not keys at all: weight 0.
          Value real = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::slt, key,
              splat(arith::ConstantIntOp::create(b, loc, b.getI32Type(), keys),
                    16));
          x = arith::SelectOp::create(
              b, loc, real, x,
              splat(f32(-std::numeric_limits<float>::infinity()), 16));
        }
      }
      s.push_back(x);
      blockMax = blockMax ? maxOf(b, loc, blockMax, x, ScoreMax::Plain) : x;
    }
    Value oldMax =
        memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
    Value newMax =
        advanceMax(b, loc, oldMax, reduceMax(b, loc, blockMax, ScoreMax::Plain),
                   ScoreMax::Plain)
            .newMax;
    Value sum;
    for (int64_t t = 0; t < amxKeys / 16; ++t) {
      Value p = nonPositiveExp16(
          b, loc, arith::SubFOp::create(b, loc, s[t], splat(newMax, 16)));
      sum = sum ? arith::AddFOp::create(b, loc, sum, p).getResult() : p;
      // vcvtneps2bf16 rounds to nearest even; p is never subnormal (its
      // inputs would be flushed).
      vector::StoreOp::create(b, loc,
                              x86vector::CvtPackedF32ToBF16Op::create(
                                  b, loc, VectorType::get({16}, bf16()), p),
                              weightTiles,
                              ValueRange{index(t / 2), r, index(16 * (t % 2))});
    }
    memref::StoreOp::create(b, loc, newMax, stats, ValueRange{index(1), r});
    vector::StoreOp::create(b, loc, sum, stepSums, ValueRange{r, index(0)});
  };
  // Without a mask, unless some row's keys end or start inside the step.
  bool everyKeyVisible = !lens && !causal && !window && paddedKeys == keys;
  if (everyKeyVisible) {
    forRange(0, count, 1, [&](Value r) { rowStep(r, false); });
  } else {
    scf::IfOp::create(
        b, loc, inside,
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          forRange(0, count, 1, [&](Value r) { rowStep(r, false); });
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          forRange(0, count, 1, [&](Value r) { rowStep(r, true); });
          scf::YieldOp::create(b, loc);
        });
  }
  // The rows' rescaling exp(m - m') as one vector.
  OnlineStep tile;
  tile.oldMax = vector::LoadOp::create(b, loc, vecType, stats,
                                       ValueRange{index(0), index(0)});
  tile.newMax = vector::LoadOp::create(b, loc, vecType, stats,
                                       ValueRange{index(1), index(0)});
  Value newMax = tile.newMax;
  vector::StoreOp::create(b, loc, rescaleFactor(b, loc, tile), stats,
                          ValueRange{index(2), index(0)});
  vector::StoreOp::create(b, loc, newMax, stats,
                          ValueRange{index(0), index(0)});
}

void FlashEmitter::amxWeightedValues(int64_t count, Value j0) {
  auto vecType = VectorType::get({16}, b.getF32Type());
  // p @ v: a C tile per 16 columns, from zero (a tile load of out,
  // just written by vector stores, would wait for them).
  Value pair0 = arith::DivUIOp::create(b, loc, j0, index(2));
  tileProducts(
      width / 16, amxKeys / 32,
      [&](int64_t t) {
        return pairsTile(weightTiles, {index(t), index(0), index(0)});
      },
      [&](int64_t c, int64_t t) {
        return pairsTile(vTiles,
                         {index(c), add(pair0, index(16 * t)), index(0)});
      },
      [&](int64_t c, Value acc) {
        amx::TileStoreOp::create(b, loc, products16,
                                 ValueRange{index(0), index(16 * c)}, acc);
      });
  // out = out * exp(m - m') + p @ v, and the sums alike, by rows.
  forRange(0, count, 1, [&](Value r) {
    Value alpha = splat(
        memref::LoadOp::create(b, loc, stats, ValueRange{index(2), r}), 16);
    auto rescale = [&](Value into, Value from, Value at) {
      Value o =
          vector::LoadOp::create(b, loc, vecType, into, ValueRange{r, at});
      Value x =
          vector::LoadOp::create(b, loc, vecType, from, ValueRange{r, at});
      vector::StoreOp::create(b, loc,
                              vector::FMAOp::create(b, loc, o, alpha, x), into,
                              ValueRange{r, at});
    };
    for (int64_t c0 = 0; c0 < width; c0 += 16)
      rescale(outTile, products16, index(c0));
    rescale(sums, stepSums, index(0));
  });
}
