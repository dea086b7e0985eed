//===- DecodeEmitter.cpp - Attention over a KV cache on buffers -----------===//
//
// See DecodeEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "DecodeEmitter.h"

#include "attn/Attention/OnlineSoftmax.h"
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
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

/// Pass 3 with its accumulators in memory, where a kv head's value slice
/// serves several query rows (GQA, prompt chunks), reads this many value
/// rows between an accumulator's load and store: their loads and stores
/// halved. With one row per kv head it reads one value row at a time: one
/// sequential stream, which the prefetchers follow better than two rows
/// at once (docs/performance.md), at one load and store per FMA.
constexpr int64_t kSharedValueRowsPerStep = 2;

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
  lanes = std::max<int64_t>(1, schedule.vectorLanes);
  // Chunks of whole vectors of scores; one chunk for a short cache.
  int64_t roundedRows = (cacheRows + lanes - 1) / lanes * lanes;
  chunkKeys = std::min(roundedRows,
                       std::max(lanes, schedule.decodeKeys / lanes * lanes));
  chunks = (cacheRows + chunkKeys - 1) / chunkKeys;
  // The most kv heads (a divisor of G) whose rows stay within decodeRows;
  // one at least.
  rowsPerKvHead = heads / kvHeads * tokens;
  for (int64_t e = kvHeads; e >= 1; --e)
    if (kvHeads % e == 0 &&
        (e == 1 || e * rowsPerKvHead <= schedule.decodeRows)) {
      groupKvHeads = e;
      break;
    }
  groups = kvHeads / groupKvHeads;
  rows = groupKvHeads * rowsPerKvHead;
  paddedRows = rows <= lanes ? static_cast<int64_t>(llvm::PowerOf2Ceil(rows))
                             : llvm::alignTo(rows, lanes);
  keysPerVector = std::max<int64_t>(1, lanes / paddedRows);
  vectorsPerKey = std::max<int64_t>(1, paddedRows / lanes);
  pieces = powerOfTwoPieces(depth, lanes);
  maxAccumulators = std::max<int64_t>(1, schedule.attentionAccumulators);
  if (std::optional<uint64_t> w = op.getWindow())
    window = static_cast<int64_t>(*w);
  if (std::optional<Type> type = op.getProducts())
    products = cast<FloatType>(*type);
  prefetchKeys = std::max<int64_t>(0, schedule.decodePrefetchKeys);
  cacheLineBytes = std::max<int64_t>(4, schedule.prefetchStrideFloats * 4);
  vectorScores =
      llvm::isPowerOf2_64(lanes) &&
      llvm::all_of(pieces, [&](auto piece) { return piece.second == lanes; });
  Type cacheElement = cast<MemRefType>(k.getType()).getElementType();
  pairDot = vectorScores && products && products.isBF16() &&
            cacheElement.isBF16() &&
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
  int64_t entries = batch * groups;
  partMax = memref::AllocOp::create(
      b, loc, MemRefType::get({entries, chunks, paddedRows}, f32Type));
  partSum = memref::AllocOp::create(
      b, loc, MemRefType::get({entries, chunks, paddedRows}, f32Type));
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
  entry.batch = arith::DivUIOp::create(b, loc, n, index(groups));
  entry.firstKvHead = mul(arith::RemUIOp::create(b, loc, n, index(groups)),
                          index(groupKvHeads));
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

Value DecodeEmitter::kvColumn(const Entry &entry, Value local) {
  return mul(add(entry.firstKvHead, local), index(depth));
}

Value DecodeEmitter::indexVector(ArrayRef<int64_t> values) {
  auto type =
      VectorType::get({static_cast<int64_t>(values.size())}, b.getIndexType());
  SmallVector<Attribute> elements;
  for (int64_t x : values)
    elements.push_back(b.getIndexAttr(x));
  return arith::ConstantOp::create(b, loc, type,
                                   DenseElementsAttr::get(type, elements));
}

SmallVector<Value> DecodeEmitter::cacheRow(Value cache, Value batchIndex,
                                           Value row, Value column) {
  Type element = cast<MemRefType>(cache.getType()).getElementType();
  SmallVector<Value> values;
  if (pairDot && cache == k) {
    // vdpbf16ps's operands: the row's bf16 as they are, 2 x lanes a time.
    for (int64_t offset = 0; offset < depth; offset += 2 * lanes)
      values.push_back(vector::LoadOp::create(
          b, loc, VectorType::get({2 * lanes}, element), cache,
          ValueRange{batchIndex, row, add(column, index(offset))}));
    return values;
  }
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

void DecodeEmitter::prefetchRow(Value cache, const Entry &entry, Value row) {
  // Each line of the group's span `prefetchKeys` rows ahead, into L2
  // (clamped into the cache: the last rows ask for the last row again):
  // the hardware prefetchers alone keep too few lines in flight for one
  // core to read at the memory's rate, and lines asked into L1 that far
  // ahead would be evicted before they are read.
  if (prefetchKeys == 0)
    return;
  Value clamped = arith::MinSIOp::create(b, loc, add(row, index(prefetchKeys)),
                                         index(cacheRows - 1))
                      .getResult();
  auto type = cast<MemRefType>(cache.getType());
  int64_t lineElements = std::max<int64_t>(
      1,
      cacheLineBytes / std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
  Value column = kvColumn(entry, index(0));
  for (int64_t e = 0; e < groupKvHeads * depth; e += lineElements)
    memref::PrefetchOp::create(
        b, loc, cache, ValueRange{entry.batch, clamped, add(column, index(e))},
        /*isWrite=*/false, /*localityHint=*/2,
        /*isDataCache=*/true);
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
  // Each step pairs the vectors (in order) and halves the partial lanes
  // per vector: a vector's `width` lanes become width / 2, lane by lane
  // sums of its two halves, until each vector has one lane.
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

Value DecodeEmitter::foldKeys(Value x, bool maximum) {
  // Lane l holds row l % P: halves fold onto each other until P remain.
  for (int64_t width = cast<VectorType>(x.getType()).getNumElements();
       width > paddedRows; width /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t l = 0; l < width / 2; ++l) {
      low.push_back(l);
      high.push_back(width / 2 + l);
    }
    Value lo = vector::ShuffleOp::create(b, loc, x, x, low);
    Value hi = vector::ShuffleOp::create(b, loc, x, x, high);
    x = maximum ? arith::MaximumFOp::create(b, loc, lo, hi).getResult()
                : arith::AddFOp::create(b, loc, lo, hi).getResult();
  }
  return x;
}

void DecodeEmitter::copyQueries(const Entry &entry) {
  // Row r is query head firstKvHead (H/G) + r / T, token r % T.
  Value firstHead = mul(entry.firstKvHead, index(heads / kvHeads));
  Type element = cast<MemRefType>(qs.getType()).getElementType();
  forRange(index(0), index(rows), [&](Value r) {
    Value t = arith::RemUIOp::create(b, loc, r, index(tokens));
    Value head =
        add(firstHead, arith::DivUIOp::create(b, loc, r, index(tokens)));
    Value column = mul(head, index(depth));
    for (auto [offset, count] : pieces) {
      Value x = vector::LoadOp::create(
          b, loc, VectorType::get({count}, b.getF32Type()), q,
          ValueRange{entry.batch, t, add(column, index(offset))});
      x = productOperand(b, loc, x, products);
      if (!element.isF32()) // exact: x is a bf16 value
        x = arith::TruncFOp::create(b, loc, VectorType::get({count}, element),
                                    x);
      vector::StoreOp::create(b, loc, x, qs, ValueRange{r, index(offset)});
    }
  });
}

void DecodeEmitter::chunk(Value n, Value c) {
  Entry entry = entryOf(n);
  auto [begin, end] = visibleRange(entry.pos);
  Keys keys;
  keys.j0 = mul(c, index(chunkKeys));
  keys.jb = arith::MaxSIOp::create(b, loc, keys.j0, begin);
  keys.je = arith::MinSIOp::create(b, loc, add(keys.j0, index(chunkKeys)), end);
  Value some = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, keys.jb,
                                     keys.je);
  auto ifSome = scf::IfOp::create(
      b, loc, arith::AndIOp::create(b, loc, entry.valid, some), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifSome.thenBlock());

  // [ja, jz): [jb, je) rounded out to whole vectors of scores (within the
  // chunk, whose size is whole vectors).
  Value perVector = index(keysPerVector);
  Value fromChunk = arith::SubIOp::create(b, loc, keys.jb, keys.j0);
  keys.ja =
      add(keys.j0,
          mul(arith::DivUIOp::create(b, loc, fromChunk, perVector), perVector));
  keys.groupsOfKeys = arith::DivUIOp::create(
      b, loc,
      add(arith::SubIOp::create(b, loc, keys.je, keys.ja),
          index(keysPerVector - 1)),
      perVector);

  Type f32Type = b.getF32Type();
  qs = memref::AllocOp::create(
      b, loc,
      MemRefType::get({rows, depth},
                      pairDot ? Type(b.getBF16Type()) : f32Type));
  scores = memref::AllocOp::create(
      b, loc, MemRefType::get({chunkKeys * paddedRows}, f32Type));
  copyQueries(entry);
  if (vectorScores)
    scoreKeys(entry, keys);
  else
    scoreKeysOneByOne(entry, keys);
  weighKeys(n, c, keys);
  sumValues(n, c, entry, keys);
  memref::DeallocOp::create(b, loc, qs);
  memref::DeallocOp::create(b, loc, scores);
}

void DecodeEmitter::scoreKeys(const Entry &entry, const Keys &keys) {
  Type f32Type = b.getF32Type();
  auto vectorType = VectorType::get({lanes}, f32Type);
  Value minusInf = f32(-std::numeric_limits<float>::infinity());
  // The query rows stay in registers when they fit beside the key rows (a
  // decode step's few rows): the scratch's loads could not be hoisted by
  // LLVM past the stores of the scores (both come from the allocator).
  int64_t registerRows =
      rows * static_cast<int64_t>(pieces.size()) <= maxAccumulators / 2 ? rows
                                                                        : 0;
  auto loadQuery = [&](int64_t r) {
    SmallVector<Value> query;
    if (pairDot) {
      for (int64_t offset = 0; offset < depth; offset += 2 * lanes)
        query.push_back(vector::LoadOp::create(
            b, loc, VectorType::get({2 * lanes}, b.getBF16Type()), qs,
            ValueRange{index(r), index(offset)}));
      return query;
    }
    for (auto [offset, count] : pieces)
      query.push_back(
          vector::LoadOp::create(b, loc, VectorType::get({count}, f32Type), qs,
                                 ValueRange{index(r), index(offset)}));
    return query;
  };
  SmallVector<SmallVector<Value>> heldQueries;
  for (int64_t r = 0; r < registerRows; ++r)
    heldQueries.push_back(loadQuery(r));
  // Lane l of a vector of scores: key keyOf(l) of its group of keys and
  // row rowOf(s, l) (s: the vector of the key).
  auto keyOf = [&](int64_t l) {
    return keysPerVector > 1 ? l / paddedRows : 0;
  };
  auto rowOf = [&](int64_t s, int64_t l) {
    return keysPerVector > 1 ? l % paddedRows : s * lanes + l;
  };
  forRange(index(0), keys.groupsOfKeys, [&](Value i) {
    Value first = add(keys.ja, mul(i, index(keysPerVector)));
    for (int64_t key = 0; key < keysPerVector; ++key)
      prefetchRow(k, entry, add(first, index(key)));
    // Each (key, kv head) slice loaded once, in the row's order; keys past
    // je (a partial group's) read row je - 1 instead, and are masked.
    std::map<std::pair<int64_t, int64_t>, SmallVector<Value>> slices;
    auto sliceOf = [&](int64_t key, int64_t kvHead) -> ArrayRef<Value> {
      auto [it, inserted] = slices.try_emplace({key, kvHead});
      if (inserted) {
        Value row = add(first, index(key));
        if (keysPerVector > 1)
          row = arith::MinSIOp::create(
              b, loc, row, arith::SubIOp::create(b, loc, keys.je, index(1)));
        it->second =
            cacheRow(k, entry.batch, row, kvColumn(entry, index(kvHead)));
      }
      return it->second;
    };
    for (int64_t s = 0; s < vectorsPerKey; ++s) {
      SmallVector<Value> sums;
      for (int64_t l = 0; l < lanes; ++l) {
        int64_t r = rowOf(s, l);
        if (r >= rows) {
          sums.push_back(splat(f32(0), lanes));
          continue;
        }
        ArrayRef<Value> key = sliceOf(keyOf(l), r / rowsPerKvHead);
        SmallVector<Value> query = registerRows ? heldQueries[r] : loadQuery(r);
        Value sum;
        for (auto [x, y] : llvm::zip(query, key)) {
          if (pairDot) {
            // vdpbf16ps: lane i sums the products of columns 2i and 2i + 1
            // of each 32 (exact: bf16 x bf16 fits f32), where the FMAs
            // sum column i of each 16.
            sum = x86vector::DotBF16Op::create(
                b, loc, vectorType, sum ? sum : splat(f32(0), lanes), x, y);
            continue;
          }
          sum = sum ? vector::FMAOp::create(b, loc, x, y, sum)
                    : arith::MulFOp::create(b, loc, x, y).getResult();
        }
        sums.push_back(sum);
      }
      Value score = arith::MulFOp::create(b, loc, sumLanes(sums),
                                          splat(f32(scale), lanes));
      if (keysPerVector > 1 || tokens > 1) {
        SmallVector<int64_t> keyOffsets, rowTokens;
        for (int64_t l = 0; l < lanes; ++l) {
          keyOffsets.push_back(keyOf(l));
          rowTokens.push_back(rowOf(s, l) % tokens);
        }
        auto indices = [&](Value x) { return splat(x, lanes); };
        Value keyIndices = arith::AddIOp::create(
            b, loc, indexVector(keyOffsets), splat(first, lanes));
        Value visible =
            isKeyVisible(b, loc, keyIndices, keys.jb, keys.je, indices);
        if (tokens > 1) {
          // Token t of a row sees [begin(p + t), p + t].
          Value rowPosition = arith::AddIOp::create(
              b, loc, indexVector(rowTokens), splat(entry.pos, lanes));
          Value rowEnd = arith::AddIOp::create(b, loc, rowPosition,
                                               splat(index(1), lanes));
          visible = arith::AndIOp::create(
              b, loc, visible,
              isKeyVisible(b, loc, keyIndices,
                           visibleBegin(b, loc, rowPosition, window), rowEnd));
        }
        score = arith::SelectOp::create(b, loc, visible, score,
                                        splat(minusInf, lanes));
      }
      Value slot = add(
          mul(arith::SubIOp::create(b, loc, first, keys.j0), index(paddedRows)),
          index(s * lanes));
      vector::StoreOp::create(b, loc, score, scores, ValueRange{slot});
    }
  });
}

void DecodeEmitter::scoreKeysOneByOne(const Entry &entry, const Keys &keys) {
  Type f32Type = b.getF32Type();
  Value minusInf = f32(-std::numeric_limits<float>::infinity());
  Value keyEnd = add(keys.ja, mul(keys.groupsOfKeys, index(keysPerVector)));
  Value lastKey = arith::SubIOp::create(b, loc, keys.je, index(1));
  forRange(keys.ja, keyEnd, [&](Value j) {
    Value row = arith::MinSIOp::create(b, loc, j, lastKey);
    Value inChunk = isKeyVisible(b, loc, j, keys.jb, keys.je);
    Value slot =
        mul(arith::SubIOp::create(b, loc, j, keys.j0), index(paddedRows));
    forRange(index(0), index(paddedRows), [&](Value r) {
      // The padding rows' scores are -inf; their loads read row R - 1.
      Value real = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r,
                                         index(rows));
      Value rowRead = arith::MinUIOp::create(b, loc, r, index(rows - 1));
      SmallVector<Value> query;
      for (auto [offset, count] : pieces)
        query.push_back(
            vector::LoadOp::create(b, loc, VectorType::get({count}, f32Type),
                                   qs, ValueRange{rowRead, index(offset)}));
      Value kvHead =
          arith::DivUIOp::create(b, loc, rowRead, index(rowsPerKvHead));
      SmallVector<Value> key =
          cacheRow(k, entry.batch, row, kvColumn(entry, kvHead));
      Value score = arith::MulFOp::create(b, loc, dot(query, key), f32(scale));
      Value visible = arith::AndIOp::create(b, loc, real, inChunk);
      if (tokens > 1) {
        Value rowPosition =
            add(entry.pos, arith::RemUIOp::create(b, loc, r, index(tokens)));
        visible = arith::AndIOp::create(
            b, loc, visible,
            isKeyVisible(b, loc, j, visibleBegin(b, loc, rowPosition, window),
                         add(rowPosition, index(1))));
      }
      score = arith::SelectOp::create(b, loc, visible, score, minusInf);
      memref::StoreOp::create(b, loc, score, scores, ValueRange{add(slot, r)});
    });
  });
}

void DecodeEmitter::weighKeys(Value n, Value c, const Keys &keys) {
  // Each vector of scores: keysPerVector keys x P rows, or `lanes` of a
  // key's rows; a key's vectors are `stride` apart.
  int64_t stride = keysPerVector * paddedRows;
  int64_t width = std::min(lanes, paddedRows);
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  Value first =
      mul(arith::SubIOp::create(b, loc, keys.ja, keys.j0), index(paddedRows));
  SmallVector<int64_t> tile;
  for (int64_t l = 0; l < lanes; ++l)
    tile.push_back(l % width);
  for (int64_t s = 0; s < vectorsPerKey; ++s) {
    auto slotOf = [&](Value i) {
      return add(add(first, mul(i, index(stride))), index(s * lanes));
    };
    Value most =
        forWithValues(
            index(0), keys.groupsOfKeys,
            ValueRange{maxIdentity(b, loc, vectorType, ScoreMax::Ieee)},
            [&](Value i, ValueRange acc) -> SmallVector<Value> {
              Value x = vector::LoadOp::create(b, loc, vectorType, scores,
                                               ValueRange{slotOf(i)});
              return {maxOf(b, loc, acc[0], x, ScoreMax::Ieee)};
            })
            .front();
    Value rowMax = foldKeys(most, /*maximum=*/true);
    // The chunk's one step of the online softmax; a row with no key in this
    // chunk (its mask) has weights exp(-inf - 0) = 0.
    OnlineStep step = advanceMax(
        b, loc, maxIdentity(b, loc, rowMax.getType(), ScoreMax::Ieee), rowMax,
        ScoreMax::Ieee, StepGuard::Seen);
    rowMax = step.newMax;
    if (width < lanes)
      step.base = vector::ShuffleOp::create(b, loc, step.base, step.base, tile);
    Value sum =
        forWithValues(
            index(0), keys.groupsOfKeys, ValueRange{splat(f32(0), lanes)},
            [&](Value i, ValueRange acc) -> SmallVector<Value> {
              Value slot = slotOf(i);
              Value x = vector::LoadOp::create(b, loc, vectorType, scores,
                                               ValueRange{slot});
              Value p = stepWeight(b, loc, x, step);
              vector::StoreOp::create(b, loc,
                                      productOperand(b, loc, p, products),
                                      scores, ValueRange{slot});
              return {arith::AddFOp::create(b, loc, acc[0], p)};
            })
            .front();
    Value rowSum = foldKeys(sum, /*maximum=*/false);
    vector::StoreOp::create(b, loc, rowMax, partMax,
                            ValueRange{n, c, index(s * lanes)});
    vector::StoreOp::create(b, loc, rowSum, partSum,
                            ValueRange{n, c, index(s * lanes)});
  }
}

void DecodeEmitter::sumValues(Value n, Value c, const Entry &entry,
                              const Keys &keys) {
  Type f32Type = b.getF32Type();
  auto weightOf = [&](Value j, Value r) {
    Value slot =
        mul(arith::SubIOp::create(b, loc, j, keys.j0), index(paddedRows));
    return memref::LoadOp::create(b, loc, scores, ValueRange{add(slot, r)})
        .getResult();
  };
  int64_t pieceCount = static_cast<int64_t>(pieces.size());
  if (groupKvHeads > 1 && rows * pieceCount > maxAccumulators) {
    // More rows than registers, over several kv heads: the accumulators
    // in the partials (L1), each value row's span read once.
    forRange(index(0), index(rows), [&](Value r) {
      for (auto [offset, width] : pieces)
        vector::StoreOp::create(b, loc, splat(f32(0), width), partOut,
                                ValueRange{n, c, r, index(offset)});
    });
    // `step` value rows at a time: each accumulator loaded and stored once
    // for all of them (summed in key order, as one at a time would).
    auto valueRows = [&](Value j, int64_t step) {
      for (int64_t u = 0; u < step; ++u)
        prefetchRow(v, entry, add(j, index(u)));
      forRange(index(0), index(groupKvHeads), [&](Value kvHead) {
        SmallVector<SmallVector<Value>> values;
        for (int64_t u = 0; u < step; ++u)
          values.push_back(cacheRow(v, entry.batch, add(j, index(u)),
                                    kvColumn(entry, kvHead)));
        Value r0 = mul(kvHead, index(rowsPerKvHead));
        for (int64_t i = 0; i < rowsPerKvHead; ++i) {
          Value r = add(r0, index(i));
          SmallVector<Value> weights;
          for (int64_t u = 0; u < step; ++u)
            weights.push_back(weightOf(add(j, index(u)), r));
          for (auto [p, piece] : llvm::enumerate(pieces)) {
            auto type = VectorType::get({piece.second}, f32Type);
            SmallVector<Value> at{n, c, r, index(piece.first)};
            Value acc = vector::LoadOp::create(b, loc, type, partOut, at);
            for (int64_t u = 0; u < step; ++u)
              acc = accumulated(b, loc, acc, weights[u], values[u][p]);
            vector::StoreOp::create(b, loc, acc, partOut, at);
          }
        }
      });
    };
    if (rowsPerKvHead == 1) {
      forRange(keys.jb, keys.je, [&](Value j) { valueRows(j, 1); });
      return;
    }
    int64_t step = kSharedValueRowsPerStep;
    Value span = arith::SubIOp::create(b, loc, keys.je, keys.jb);
    Value steps = arith::DivUIOp::create(b, loc, span, index(step));
    forRange(index(0), steps, [&](Value i) {
      valueRows(add(keys.jb, mul(i, index(step))), step);
    });
    forRange(add(keys.jb, mul(steps, index(step))), keys.je,
             [&](Value j) { valueRows(j, 1); });
    return;
  }
  // Blocks of rows whose accumulators stay in registers: all rows in one
  // (each value row's span once), or one kv head's rows in several, each
  // reading the head's slice of the chunk's value rows again (from the
  // caches: C rows of one head).
  int64_t perBlock = std::max<int64_t>(
      1, std::min<int64_t>(rows, maxAccumulators / pieceCount));
  auto rowBlock = [&](Value r0, int64_t count) {
    SmallVector<Value> zeros;
    for (int64_t i = 0; i < count; ++i)
      for (auto [offset, width] : pieces)
        zeros.push_back(splat(f32(0), width));
    SmallVector<Value> sums =
        forWithValues(keys.jb, keys.je, zeros, [&](Value j, ValueRange acc) {
          prefetchRow(v, entry, j);
          // One block of all rows (r0 = 0), or blocks of the one kv
          // head's rows.
          std::map<int64_t, SmallVector<Value>> slices;
          auto valueOf = [&](int64_t i) -> ArrayRef<Value> {
            int64_t kvHead = count == rows ? i / rowsPerKvHead : 0;
            auto [it, inserted] = slices.try_emplace(kvHead);
            if (inserted)
              it->second =
                  cacheRow(v, entry.batch, j, kvColumn(entry, index(kvHead)));
            return it->second;
          };
          SmallVector<Value> next;
          for (int64_t i = 0; i < count; ++i) {
            ArrayRef<Value> value = valueOf(i);
            Value weight = weightOf(j, add(r0, index(i)));
            for (auto [p, piece] : llvm::enumerate(pieces))
              next.push_back(accumulated(b, loc, acc[i * pieceCount + p],
                                         weight, value[p]));
          }
          return next;
        });
    for (int64_t i = 0; i < count; ++i)
      for (auto [p, piece] : llvm::enumerate(pieces))
        vector::StoreOp::create(
            b, loc, sums[i * pieceCount + p], partOut,
            ValueRange{n, c, add(r0, index(i)), index(piece.first)});
  };
  if (perBlock == rows) {
    rowBlock(index(0), rows);
    return;
  }
  // Here groupKvHeads == 1: every block is the one kv head's.
  int64_t fullBlocks = rows / perBlock;
  forRange(index(0), index(fullBlocks), [&](Value block) {
    rowBlock(mul(block, index(perBlock)), perBlock);
  });
  if (int64_t rest = rows % perBlock)
    rowBlock(index(fullBlocks * perBlock), rest);
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
  Value firstHead = mul(entry.firstKvHead, index(heads / kvHeads));
  forRange(index(0), index(rows), [&](Value r) {
    // Each chunk holds a visible key of some row; this row sees itself, so
    // the max over its chunks is finite.
    SmallVector<Value> zeros;
    for (auto [offset, width] : pieces)
      zeros.push_back(splat(f32(0), width));
    SmallVector<Value> sums = combinePartials(
        b, loc, first, last,
        [&](Value c) -> Value {
          return memref::LoadOp::create(b, loc, partMax, ValueRange{n, c, r});
        },
        [&](Value c) {
          ChunkPartial partial;
          partial.sum =
              memref::LoadOp::create(b, loc, partSum, ValueRange{n, c, r});
          for (auto [offset, width] : pieces)
            partial.out.push_back(vector::LoadOp::create(
                b, loc, VectorType::get({width}, b.getF32Type()), partOut,
                ValueRange{n, c, r, index(offset)}));
          return partial;
        },
        zeros);
    Value rowSum = sums[0];
    Value t = arith::RemUIOp::create(b, loc, r, index(tokens));
    Value head =
        add(firstHead, arith::DivUIOp::create(b, loc, r, index(tokens)));
    Value column = mul(head, index(depth));
    for (auto [p, piece] : llvm::enumerate(pieces)) {
      Value o = normalized(b, loc, sums[1 + p], rowSum);
      vector::StoreOp::create(
          b, loc, o, out,
          ValueRange{entry.batch, t, add(column, index(piece.first))});
    }
  });
}
