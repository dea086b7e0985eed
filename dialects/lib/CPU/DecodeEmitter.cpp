//===- DecodeEmitter.cpp - Attention over a KV cache on buffers -----------===//
//
// See DecodeEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "DecodeEmitter.h"

#include "attn/IR/AttentionMask.h"
#include "attn/Target/CpuTarget.h"

#include "PowerOfTwoPieces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

DecodeEmitter::DecodeEmitter(OpBuilder &b, Location loc, DecodeAttentionOp op,
                             const attn::CpuSchedule &schedule, bool parallel)
    : b(b), loc(loc), q(op.getQ()), k(op.getK()), v(op.getV()),
      pos(op.getPos()), out(op.getInit()),
      scale(op.getScale().convertToFloat()), parallel(parallel),
      parallelFlops(schedule.parallelFlops) {
  auto qShape = cast<MemRefType>(q.getType()).getShape();
  auto cacheShape = cast<MemRefType>(k.getType()).getShape();
  batch = qShape[0];
  tokens = qShape[1];
  heads = op.getHeads();
  kvHeads = op.getNumKvHeads();
  depth = qShape[2] / heads;
  cacheRows = cacheShape[1];
  rows = heads / kvHeads * tokens;
  lanes = std::max<int64_t>(1, schedule.vectorLanes);
  // Chunks of whole vectors of scores; one chunk for a short cache.
  int64_t roundedRows = (cacheRows + lanes - 1) / lanes * lanes;
  chunkKeys = std::min(roundedRows,
                       std::max(lanes, schedule.decodeKeys / lanes * lanes));
  chunks = (cacheRows + chunkKeys - 1) / chunkKeys;
  pieces = powerOfTwoPieces(depth, lanes);
  maxAccumulators = std::max<int64_t>(1, schedule.attentionAccumulators);
  if (std::optional<uint64_t> w = op.getWindow())
    window = static_cast<int64_t>(*w);
  if (std::optional<Type> type = op.getProducts())
    products = cast<FloatType>(*type);
  prefetchKeys = std::max<int64_t>(0, schedule.decodePrefetchKeys);
  cacheLineBytes = std::max<int64_t>(4, schedule.prefetchStrideFloats * 4);
  Type cacheElement = cast<MemRefType>(k.getType()).getElementType();
  pairDot = products && products.isBF16() && cacheElement.isBF16() &&
            (schedule.bf16Dot == CpuSchedule::Bf16Dot::Vdpbf16ps ||
             schedule.bf16Amx) &&
            lanes == 16 && depth % (2 * lanes) == 0;
}

Value DecodeEmitter::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value DecodeEmitter::f32(float value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value DecodeEmitter::add(Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}

Value DecodeEmitter::mul(Value x, Value y) {
  return arith::MulIOp::create(b, loc, x, y);
}

Value DecodeEmitter::splat(Value scalar, int64_t count) {
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({count}, scalar.getType()), scalar);
}

void DecodeEmitter::forRange(Value begin, Value end,
                             function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, begin, end, index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

SmallVector<Value> DecodeEmitter::forWithValues(
    Value begin, Value end, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, begin, end, index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
  }
  return SmallVector<Value>(loop.getResults());
}

void DecodeEmitter::forEach(int64_t count, bool threads,
                            function_ref<void(Value)> body) {
  if (!threads) {
    forRange(index(0), index(count), body);
    return;
  }
  scf::ParallelOp::create(b, loc, ValueRange{index(0)},
                          ValueRange{index(count)}, ValueRange{index(1)},
                          [&](OpBuilder &nested, Location, ValueRange ivs) {
                            OpBuilder::InsertionGuard guard(b);
                            b.setInsertionPoint(nested.getInsertionBlock(),
                                                nested.getInsertionPoint());
                            body(ivs[0]);
                          });
}

void DecodeEmitter::emit() {
  Type f32Type = b.getF32Type();
  int64_t entries = batch * kvHeads;
  partMax = memref::AllocOp::create(
      b, loc, MemRefType::get({entries, chunks, rows}, f32Type));
  partSum = memref::AllocOp::create(
      b, loc, MemRefType::get({entries, chunks, rows}, f32Type));
  partOut = memref::AllocOp::create(
      b, loc, MemRefType::get({entries, chunks, rows, depth}, f32Type));
  // Threads only pay off past a few microseconds of work; whether they
  // run changes which thread computes a chunk, never the chunks.
  bool threads = parallel && 4 * batch * heads * tokens * cacheRows * depth >=
                                 parallelFlops;
  forEach(entries * chunks, threads, [&](Value item) {
    Value perEntry = index(chunks);
    chunk(arith::DivUIOp::create(b, loc, item, perEntry),
          arith::RemUIOp::create(b, loc, item, perEntry));
  });
  bool reduceThreads =
      parallel && 2 * entries * chunks * rows * depth >= parallelFlops;
  forEach(entries, reduceThreads, [&](Value n) { reduce(n); });
  for (Value buffer : {partMax, partSum, partOut})
    memref::DeallocOp::create(b, loc, buffer);
}

DecodeEmitter::Entry DecodeEmitter::entryOf(Value n) {
  Entry entry;
  entry.batch = arith::DivUIOp::create(b, loc, n, index(kvHeads));
  entry.group = arith::RemUIOp::create(b, loc, n, index(kvHeads));
  Value p = memref::LoadOp::create(b, loc, pos, ValueRange{entry.batch});
  entry.pos = arith::IndexCastOp::create(b, loc, b.getIndexType(), p);
  Value atLeastZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            entry.pos, index(0));
  Value fits =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                            add(entry.pos, index(tokens)), index(cacheRows));
  entry.valid = arith::AndIOp::create(b, loc, atLeastZero, fits);
  return entry;
}

std::pair<Value, Value> DecodeEmitter::visibleRange(Value p) {
  // Token 0 sees the fewest rows from below, token T - 1 the most above.
  Value begin = visibleBegin(b, loc, p, window);
  return {begin ? begin : index(0), add(p, index(tokens))};
}

SmallVector<Value> DecodeEmitter::cacheRow(Value cache, Value batchIndex,
                                           Value row, Value column) {
  Type element = cast<MemRefType>(cache.getType()).getElementType();
  SmallVector<Value> values;
  for (auto [offset, count] : pieces) {
    Value x = vector::LoadOp::create(
        b, loc, VectorType::get({count}, element), cache,
        ValueRange{batchIndex, row, add(column, index(offset))});
    if (!element.isF32())
      x = arith::ExtFOp::create(b, loc,
                                VectorType::get({count}, b.getF32Type()), x);
    // A bf16 cache's rows are products(bf16)'s operands as they are.
    values.push_back(element == products ? x
                                         : productOperand(b, loc, x, products));
  }
  return values;
}

void DecodeEmitter::prefetchRow(Value cache, Value batchIndex, Value row,
                                Value column) {
  // A head's slice of a row is a line or two every G * d elements, a
  // stride the hardware prefetchers follow late: each line of the row
  // `prefetchKeys` ahead is asked for (clamped into the cache: the last
  // rows ask for the last row again).
  Value clamped =
      arith::MinSIOp::create(b, loc, row, index(cacheRows - 1)).getResult();
  auto type = cast<MemRefType>(cache.getType());
  int64_t lineElements = std::max<int64_t>(
      1,
      cacheLineBytes / std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
  for (int64_t e = 0; e < depth; e += lineElements)
    memref::PrefetchOp::create(
        b, loc, cache, ValueRange{batchIndex, clamped, add(column, index(e))},
        /*isWrite=*/false, /*localityHint=*/3,
        /*isDataCache=*/true);
}

SmallVector<Value> DecodeEmitter::bf16Pairs(ArrayRef<Value> query) {
  SmallVector<int64_t> both(2 * lanes);
  std::iota(both.begin(), both.end(), 0);
  auto pairsType = VectorType::get({2 * lanes}, b.getBF16Type());
  SmallVector<Value> pairs;
  for (size_t i = 0; i + 1 < query.size(); i += 2)
    pairs.push_back(arith::TruncFOp::create(
        b, loc, pairsType,
        vector::ShuffleOp::create(b, loc, query[i], query[i + 1], both)));
  return pairs;
}

Value DecodeEmitter::dot(ArrayRef<Value> query, ArrayRef<Value> key) {
  // The full-width pieces in one accumulator, then the shorter ones: one
  // fixed order.
  Value sum, wide;
  for (auto [x, y] : llvm::zip(query, key)) {
    if (cast<VectorType>(x.getType()).getNumElements() == lanes) {
      wide = wide ? vector::FMAOp::create(b, loc, x, y, wide)
                  : arith::MulFOp::create(b, loc, x, y).getResult();
      continue;
    }
    Value part =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                    arith::MulFOp::create(b, loc, x, y));
    sum = sum ? arith::AddFOp::create(b, loc, sum, part).getResult() : part;
  }
  if (wide) {
    Value part =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, wide);
    sum = sum ? arith::AddFOp::create(b, loc, part, sum).getResult() : part;
  }
  return sum;
}

Value DecodeEmitter::sumLanes(ArrayRef<Value> vectors) {
  // Each step pairs the vectors (keys in order) and halves the partial
  // lanes per key: a key's `width` lanes become width / 2, lane by lane
  // sums of its two halves, until each key has one lane.
  SmallVector<Value> level(vectors.begin(), vectors.end());
  int64_t n = static_cast<int64_t>(level.size());
  for (int64_t width = n; width > 1; width /= 2) {
    int64_t keysPer = n / width, half = width / 2;
    SmallVector<Value> next;
    for (size_t v = 0; v + 1 < level.size(); v += 2) {
      SmallVector<int64_t> low, high;
      for (int64_t slot = 0; slot < 2 * keysPer; ++slot) {
        int64_t source = slot < keysPer ? 0 : n;
        int64_t key = slot % keysPer;
        for (int64_t p = 0; p < half; ++p) {
          low.push_back(source + key * width + p);
          high.push_back(source + key * width + half + p);
        }
      }
      Value lo = vector::ShuffleOp::create(b, loc, level[v], level[v + 1], low);
      Value hi =
          vector::ShuffleOp::create(b, loc, level[v], level[v + 1], high);
      next.push_back(arith::AddFOp::create(b, loc, lo, hi));
    }
    level = std::move(next);
  }
  return level.front();
}

void DecodeEmitter::copyQueries(const Entry &entry) {
  int64_t perGroup = heads / kvHeads;
  Value firstHead = mul(entry.group, index(perGroup));
  for (int64_t hq = 0; hq < perGroup; ++hq) {
    Value column = mul(add(firstHead, index(hq)), index(depth));
    forRange(index(0), index(tokens), [&](Value t) {
      Value r = add(t, index(hq * tokens));
      for (auto [offset, count] : pieces) {
        Value x = vector::LoadOp::create(
            b, loc, VectorType::get({count}, b.getF32Type()), q,
            ValueRange{entry.batch, t, add(column, index(offset))});
        vector::StoreOp::create(b, loc, productOperand(b, loc, x, products), qs,
                                ValueRange{r, index(offset)});
      }
    });
  }
}

void DecodeEmitter::chunk(Value n, Value c) {
  Entry entry = entryOf(n);
  auto [begin, end] = visibleRange(entry.pos);
  Value j0 = mul(c, index(chunkKeys));
  Value jb = arith::MaxSIOp::create(b, loc, j0, begin);
  Value je = arith::MinSIOp::create(b, loc, add(j0, index(chunkKeys)), end);
  Value some = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, jb, je);
  auto ifSome = scf::IfOp::create(
      b, loc, arith::AndIOp::create(b, loc, entry.valid, some), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifSome.thenBlock());

  Type f32Type = b.getF32Type();
  qs = memref::AllocOp::create(b, loc, MemRefType::get({rows, depth}, f32Type));
  scores = memref::AllocOp::create(b, loc,
                                   MemRefType::get({rows, chunkKeys}, f32Type));
  copyQueries(entry);
  Value minusInf = f32(-std::numeric_limits<float>::infinity());
  Value column = mul(entry.group, index(depth));
  auto vectorType = VectorType::get({lanes}, f32Type);

  // Scores: -inf where no key is (a chunk's ends, a token's mask).
  forRange(index(0), index(rows), [&](Value r) {
    for (int64_t j = 0; j < chunkKeys; j += lanes)
      vector::StoreOp::create(b, loc, splat(minusInf, lanes), scores,
                              ValueRange{r, index(j)});
  });
  // Pass 1: each key row once, against every query row of the kv head.
  // The query rows stay in registers when they fit beside a key row (a
  // decode step's few rows): the scratch's loads could not be hoisted by
  // LLVM past the stores of the scores (both come from the allocator).
  auto queryRow = [&](Value r) {
    SmallVector<Value> query;
    for (auto [offset, count] : pieces)
      query.push_back(vector::LoadOp::create(b, loc,
                                             VectorType::get({count}, f32Type),
                                             qs, ValueRange{r, index(offset)}));
    return query;
  };
  int64_t registerRows =
      rows * static_cast<int64_t>(pieces.size()) <= maxAccumulators / 2 ? rows
                                                                        : 0;
  SmallVector<SmallVector<Value>> heldQueries;
  for (int64_t r = 0; r < registerRows; ++r)
    heldQueries.push_back(queryRow(index(r)));
  auto queryOf = [&](Value r, int64_t held) -> SmallVector<Value> {
    return registerRows ? heldQueries[held] : queryRow(r);
  };
  // Token t of row r sees [begin(p + t), p + t]; with T = 1 every key of
  // [jb, je) is the token's.
  auto rowPosition = [&](Value r) {
    return add(entry.pos, arith::RemUIOp::create(b, loc, r, index(tokens)));
  };
  auto eachRow = [&](function_ref<void(Value, ArrayRef<Value>)> body) {
    if (registerRows) {
      for (int64_t r = 0; r < registerRows; ++r)
        body(index(r), heldQueries[r]);
      return;
    }
    forRange(index(0), index(rows), [&](Value r) { body(r, queryOf(r, 0)); });
  };
  // Blocks of `lanes` keys when the head is whole vectors: each key's
  // products stay a vector, and one tree of shuffles sums the block's
  // vectors into a vector of its scores, instead of a horizontal sum per
  // key.
  bool blocks =
      llvm::isPowerOf2_64(lanes) &&
      llvm::all_of(pieces, [&](auto piece) { return piece.second == lanes; });
  Value tailBegin = jb;
  if (blocks) {
    Value count = arith::DivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, je, jb), index(lanes));
    tailBegin = add(jb, mul(count, index(lanes)));
    forRange(index(0), count, [&](Value block) {
      Value first = add(jb, mul(block, index(lanes)));
      for (int64_t i = 0; i < lanes; ++i)
        prefetchRow(k, entry.batch, add(first, index(prefetchKeys + i)),
                    column);
      Value slot = arith::SubIOp::create(b, loc, first, j0);
      eachRow([&](Value r, ArrayRef<Value> query) {
        SmallVector<Value> products;
        // vdpbf16ps: lane i of a key's vector sums the products of d
        // columns 2i and 2i + 1 of each 32 (exact: bf16 x bf16 fits f32),
        // where the FMAs sum column i of each 16.
        SmallVector<Value> queryPairs;
        if (pairDot)
          queryPairs = bf16Pairs(query);
        auto pairsType = VectorType::get({2 * lanes}, b.getBF16Type());
        for (int64_t i = 0; i < lanes; ++i) {
          Value row = add(first, index(i));
          if (pairDot) {
            Value sum = splat(f32(0.0f), lanes);
            for (auto [m, pairs] : llvm::enumerate(queryPairs)) {
              Value key = vector::LoadOp::create(
                  b, loc, pairsType, k,
                  ValueRange{entry.batch, row,
                             add(column, index(int64_t(m) * 2 * lanes))});
              sum = x86vector::DotBF16Op::create(b, loc, vectorType, sum, pairs,
                                                 key);
            }
            products.push_back(sum);
            continue;
          }
          SmallVector<Value> key = cacheRow(k, entry.batch, row, column);
          Value sum;
          for (auto [x, y] : llvm::zip(query, key))
            sum = sum ? vector::FMAOp::create(b, loc, x, y, sum)
                      : arith::MulFOp::create(b, loc, x, y).getResult();
          products.push_back(sum);
        }
        Value score = arith::MulFOp::create(b, loc, sumLanes(products),
                                            splat(f32(scale), lanes));
        if (tokens > 1) {
          Value row = rowPosition(r);
          auto indexVector = VectorType::get({lanes}, b.getIndexType());
          Value keys = arith::AddIOp::create(
              b, loc, vector::StepOp::create(b, loc, indexVector),
              splat(first, lanes));
          Value visible = isKeyVisible(
              b, loc, keys, visibleBegin(b, loc, row, window),
              add(row, index(1)), [&](Value x) { return splat(x, lanes); });
          score = arith::SelectOp::create(b, loc, visible, score,
                                          splat(minusInf, lanes));
        }
        vector::StoreOp::create(b, loc, score, scores, ValueRange{r, slot});
      });
    });
  }
  // The other keys one at a time.
  forRange(tailBegin, je, [&](Value j) {
    SmallVector<Value> key = cacheRow(k, entry.batch, j, column);
    Value slot = arith::SubIOp::create(b, loc, j, j0);
    eachRow([&](Value r, ArrayRef<Value> query) {
      Value score = arith::MulFOp::create(b, loc, dot(query, key), f32(scale));
      if (tokens > 1) {
        Value row = rowPosition(r);
        Value visible = isKeyVisible(
            b, loc, j, visibleBegin(b, loc, row, window), add(row, index(1)));
        score = arith::SelectOp::create(b, loc, visible, score, minusInf);
      }
      memref::StoreOp::create(b, loc, score, scores, ValueRange{r, slot});
    });
  });
  // Pass 2: each row's max, weights and sum over the chunk.
  forRange(index(0), index(rows), [&](Value r) {
    Value most = splat(minusInf, lanes);
    for (int64_t j = 0; j < chunkKeys; j += lanes)
      most = arith::MaximumFOp::create(
          b, loc, most,
          vector::LoadOp::create(b, loc, vectorType, scores,
                                 ValueRange{r, index(j)}));
    Value rowMax = vector::ReductionOp::create(
        b, loc, vector::CombiningKind::MAXIMUMF, most);
    // A row with no key in this chunk (its mask): weights exp(-inf) = 0.
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       rowMax, minusInf);
    Value shift = arith::SelectOp::create(b, loc, none, f32(0), rowMax);
    Value sum = splat(f32(0), lanes);
    for (int64_t j = 0; j < chunkKeys; j += lanes) {
      Value s = vector::LoadOp::create(b, loc, vectorType, scores,
                                       ValueRange{r, index(j)});
      Value p = math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, s, splat(shift, lanes)));
      sum = arith::AddFOp::create(b, loc, sum, p);
      vector::StoreOp::create(b, loc, productOperand(b, loc, p, products),
                              scores, ValueRange{r, index(j)});
    }
    Value rowSum =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum);
    memref::StoreOp::create(b, loc, rowMax, partMax, ValueRange{n, c, r});
    memref::StoreOp::create(b, loc, rowSum, partSum, ValueRange{n, c, r});
  });
  // Pass 3: each value row once per block of rows, whose accumulators
  // stay in registers.
  int64_t perBlock = std::max<int64_t>(
      1, std::min<int64_t>(rows, maxAccumulators /
                                     static_cast<int64_t>(pieces.size())));
  auto rowBlock = [&](Value r0, int64_t count) {
    SmallVector<Value> zeros;
    for (int64_t i = 0; i < count; ++i)
      for (auto [offset, width] : pieces)
        zeros.push_back(splat(f32(0), width));
    SmallVector<Value> sums =
        forWithValues(jb, je, zeros, [&](Value j, ValueRange acc) {
          prefetchRow(v, entry.batch, add(j, index(prefetchKeys)), column);
          SmallVector<Value> value = cacheRow(v, entry.batch, j, column);
          Value slot = arith::SubIOp::create(b, loc, j, j0);
          SmallVector<Value> next;
          for (int64_t i = 0; i < count; ++i) {
            Value weight = memref::LoadOp::create(
                b, loc, scores, ValueRange{add(r0, index(i)), slot});
            for (auto [p, piece] : llvm::enumerate(pieces))
              next.push_back(
                  vector::FMAOp::create(b, loc, splat(weight, piece.second),
                                        value[p], acc[i * pieces.size() + p]));
          }
          return next;
        });
    for (int64_t i = 0; i < count; ++i)
      for (auto [p, piece] : llvm::enumerate(pieces))
        vector::StoreOp::create(
            b, loc, sums[i * pieces.size() + p], partOut,
            ValueRange{n, c, add(r0, index(i)), index(piece.first)});
  };
  int64_t fullBlocks = rows / perBlock;
  if (fullBlocks > 0)
    forRange(index(0), index(fullBlocks), [&](Value block) {
      rowBlock(mul(block, index(perBlock)), perBlock);
    });
  if (int64_t rest = rows % perBlock)
    rowBlock(index(fullBlocks * perBlock), rest);
  memref::DeallocOp::create(b, loc, qs);
  memref::DeallocOp::create(b, loc, scores);
}

void DecodeEmitter::reduce(Value n) {
  Entry entry = entryOf(n);
  auto ifValid = scf::IfOp::create(b, loc, entry.valid, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifValid.thenBlock());
  auto [begin, end] = visibleRange(entry.pos);
  Value first = arith::DivUIOp::create(b, loc, begin, index(chunkKeys));
  Value last = arith::DivUIOp::create(b, loc, add(end, index(chunkKeys - 1)),
                                      index(chunkKeys));
  Value minusInf = f32(-std::numeric_limits<float>::infinity());
  int64_t perGroup = heads / kvHeads;
  forRange(index(0), index(rows), [&](Value r) {
    // The row's max over its chunks (each chunk holds a visible key of some
    // row; this row sees itself, so the max is finite).
    Value rowMax =
        forWithValues(first, last, ValueRange{minusInf},
                      [&](Value c, ValueRange most) -> SmallVector<Value> {
                        Value m = memref::LoadOp::create(b, loc, partMax,
                                                         ValueRange{n, c, r});
                        return {arith::MaximumFOp::create(b, loc, most[0], m)};
                      })
            .front();
    SmallVector<Value> init = {f32(0)};
    for (auto [offset, width] : pieces)
      init.push_back(splat(f32(0), width));
    SmallVector<Value> sums =
        forWithValues(first, last, init, [&](Value c, ValueRange acc) {
          Value m =
              memref::LoadOp::create(b, loc, partMax, ValueRange{n, c, r});
          Value scaleBy = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, m, rowMax));
          Value l =
              memref::LoadOp::create(b, loc, partSum, ValueRange{n, c, r});
          SmallVector<Value> next = {arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, l, scaleBy), acc[0])};
          for (auto [p, piece] : llvm::enumerate(pieces)) {
            Value o = vector::LoadOp::create(
                b, loc, VectorType::get({piece.second}, b.getF32Type()),
                partOut, ValueRange{n, c, r, index(piece.first)});
            next.push_back(vector::FMAOp::create(
                b, loc, splat(scaleBy, piece.second), o, acc[1 + p]));
          }
          return next;
        });
    Value rowSum = sums[0];
    Value t = arith::RemUIOp::create(b, loc, r, index(tokens));
    Value head = add(mul(entry.group, index(perGroup)),
                     arith::DivUIOp::create(b, loc, r, index(tokens)));
    Value column = mul(head, index(depth));
    for (auto [p, piece] : llvm::enumerate(pieces)) {
      Value o = arith::DivFOp::create(b, loc, sums[1 + p],
                                      splat(rowSum, piece.second));
      vector::StoreOp::create(
          b, loc, o, out,
          ValueRange{entry.batch, t, add(column, index(piece.first))});
    }
  });
}
