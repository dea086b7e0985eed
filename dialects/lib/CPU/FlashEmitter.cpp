//===- FlashEmitter.cpp - Flash-style attention loops ---------------------===//
//
// See FlashEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "FlashEmitter.h"

#include "attn/Target/CpuTarget.h"

#include "AmxGemm.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

FlashEmitter::FlashEmitter(OpBuilder &b, Location loc, FusedAttentionOp op,
                           const attn::CpuSchedule &schedule, bool parallel)
    : b(b), loc(loc), func(op->getParentOfType<func::FuncOp>()), q(op.getQ()),
      k(op.getK()), v(op.getV()), lens(op.getValidLens()), out(op.getInit()),
      ropeCos(op.getRopeCos()), ropeSin(op.getRopeSin()),
      causal(op.getCausal()), exclusive(op.getExclusive()),
      scale(op.getScale().convertToFloat()), rowBlock(schedule.attentionRows),
      keyBlock(schedule.attentionKeys),
      maxAccumulators(schedule.attentionAccumulators),
      chunkLanes(schedule.attentionChunkLanes),
      rowBlocksPerSweep(schedule.attentionRowBlocksPerSweep),
      softmaxBlocks(std::max<int64_t>(1, schedule.attentionSoftmaxBlocks)),
      parallelFlops(schedule.parallelFlops), parallel(parallel) {
  auto qs = cast<MemRefType>(q.getType()).getShape();
  auto ks = cast<MemRefType>(k.getType()).getShape();
  auto vs = cast<MemRefType>(v.getType()).getShape();
  heads = op.getHeads();
  kvHeads = op.getNumKvHeads();
  groupSize = heads / kvHeads;
  batch = qs[0] * heads;
  groups = qs[0] * kvHeads;
  queries = qs[1];
  depth = qs[2] / heads;
  keys = ks[1];
  width = vs[2] / kvHeads;
  lens2d = lens && cast<MemRefType>(lens.getType()).getRank() == 2;
  if (std::optional<uint64_t> w = op.getWindow())
    window = hidingWindow(static_cast<int64_t>(*w), queries);
  if (std::optional<Type> type = op.getProducts())
    products = cast<FloatType>(*type);
  // Both products on AMX tiles (16 rows of 64 bytes each: a tile is 32
  // columns of q or 16 of out).
  amx = products && schedule.bf16Amx && depth % 32 == 0 && width % 16 == 0;
  if (amx) {
    amxKeys = keys > 32 ? 64 : 32;
    paddedKeys = (keys + amxKeys - 1) / amxKeys * amxKeys;
  }
  // Without AMX, on AVX512-BF16 (bf16Dot): both products on vdpbf16ps,
  // from the same packed pairs, in the loop nest above (key pieces of at
  // most 16 keys are one register of kTiles, output chunks of 16 columns
  // one of vTiles).
  dot = products && !amx &&
        schedule.bf16Dot == CpuSchedule::Bf16Dot::Vdpbf16ps && depth % 2 == 0 &&
        width % 16 == 0 && keyBlock % 16 == 0 && chunkLanes == 16;
  if (dot)
    paddedKeys = (keys + 15) / 16 * 16;
}

void FlashEmitter::emit() {
  // Threads only pay off past a few microseconds of work.
  if (4 * batch * queries * keys * std::max(depth, width) < parallelFlops)
    parallel = false;
  if (amx) {
    Value granted;
    requestAmxTileStateOnce(b, func, granted);
    auto ifGranted = scf::IfOp::create(b, loc, granted, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifGranted.thenBlock());
    emitEntries();
    return;
  }
  emitEntries();
}

void FlashEmitter::emitEntries() {
  if (!parallel) {
    allocateScratch();
    forRange(0, groups, 1, [&](Value n) { groupEntry(n); });
    freeScratch();
    return;
  }
  // Threads take whole batch entries (with kv_heads: a kv head and its
  // group of query heads), each with its own scratch.
  scf::ParallelOp::create(
      b, loc, ValueRange{index(0)}, ValueRange{index(groups)},
      ValueRange{index(1)}, [&](OpBuilder &nb, Location, ValueRange n) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        allocateScratch();
        groupEntry(n[0]);
        freeScratch();
      });
}

void FlashEmitter::allocateScratch() {
  Type f32 = b.getF32Type();
  if (amx) {
    allocateAmxScratch();
    return;
  }
  if (dot) {
    allocatePairs();
    queryPairs = memref::AllocOp::create(
        b, loc, MemRefType::get({rowBlock * rowBlocksPerSweep, depth}, bf16()));
    weightPairs = memref::AllocOp::create(
        b, loc, MemRefType::get({rowBlock, keyBlock * softmaxBlocks}, bf16()));
  } else {
    // Blocked rather than [d, Tk]: with Tk a multiple of 1024, the d rows
    // of one key block were 4 KB apart, all in one L1 set.
    kt = memref::AllocOp::create(
        b, loc,
        MemRefType::get({(keys + keyBlock - 1) / keyBlock, depth, keyBlock},
                        f32));
  }
  if (mayBeEmpty())
    mean = memref::AllocOp::create(b, loc, MemRefType::get({width}, f32));
  stats = memref::AllocOp::create(
      b, loc, MemRefType::get({2, rowBlock * rowBlocksPerSweep}, f32));
  probs = memref::AllocOp::create(
      b, loc, MemRefType::get({rowBlock, keyBlock * softmaxBlocks}, f32));
  queryRows = memref::AllocOp::create(
      b, loc, MemRefType::get({rowBlock * rowBlocksPerSweep, depth}, f32));
  // products(bf16): the kv head's values rounded once, not at each read.
  if (products && !dot)
    roundedValues =
        memref::AllocOp::create(b, loc, MemRefType::get({keys, width}, f32));
}

void FlashEmitter::freeScratch() {
  if (amx) {
    for (Value buffer : {kTiles, vTiles, qTiles, scores, weightTiles, outTile,
                         products16, sums, stepSums, stats, queryRows})
      memref::DeallocOp::create(b, loc, buffer);
    if (mean)
      memref::DeallocOp::create(b, loc, mean);
    return;
  }
  if (dot)
    for (Value buffer : {kTiles, vTiles, queryPairs, weightPairs})
      memref::DeallocOp::create(b, loc, buffer);
  else
    memref::DeallocOp::create(b, loc, kt);
  if (mean)
    memref::DeallocOp::create(b, loc, mean);
  memref::DeallocOp::create(b, loc, stats);
  memref::DeallocOp::create(b, loc, probs);
  memref::DeallocOp::create(b, loc, queryRows);
  if (roundedValues)
    memref::DeallocOp::create(b, loc, roundedValues);
}

void FlashEmitter::groupEntry(Value n) {
  // Entry n is kv head n % G of batch entry n / G: its columns of k
  // start at (n % G) * dk, those of v at (n % G) * dv. Its query heads
  // are h = (n % G) * (H / G) + r, with columns h * dk of q, h * dv of
  // out.
  entryBatch = n;
  kOffset = vOffset = Value();
  Value kvHead;
  if (heads > 1) {
    entryBatch = arith::DivUIOp::create(b, loc, n, index(kvHeads));
    kvHead = arith::RemUIOp::create(b, loc, n, index(kvHeads));
    kOffset = arith::MulIOp::create(b, loc, kvHead, index(depth));
    vOffset = arith::MulIOp::create(b, loc, kvHead, index(width));
  }
  if (amx || dot) {
    packKeysAndValues();
  } else {
    transposeKeys(n);
    if (roundedValues)
      roundValues();
  }
  if (mayBeEmpty())
    meanOfValues(n);
  auto queryHead = [&](Value head) {
    qOffset = oOffset = Value();
    if (head) {
      qOffset = arith::MulIOp::create(b, loc, head, index(depth));
      oOffset = arith::MulIOp::create(b, loc, head, index(width));
    }
    if (amx) {
      int64_t full = queries / 16, left = queries % 16;
      forRange(0, full * 16, 16, [&](Value i0) { amxRowTile(n, i0, 16); });
      if (left)
        amxRowTile(n, index(full * 16), left);
      return;
    }
    int64_t super = rowBlock * rowBlocksPerSweep;
    int64_t full = queries / super, left = queries % super;
    forRange(0, full * super, super,
             [&](Value s0) { superBlockOf(n, s0, super); });
    if (left)
      superBlockOf(n, index(full * super), left);
  };
  if (groupSize == 1) {
    queryHead(kvHead);
    return;
  }
  Value first = arith::MulIOp::create(b, loc, kvHead, index(groupSize));
  forRange(0, groupSize, 1, [&](Value r) { queryHead(add(first, r)); });
}

void FlashEmitter::copyRow(Value source, Value row,
                           function_ref<SmallVector<Value>(Value, Value)> where,
                           function_ref<void(Value, Value)> store) {
  if (!ropeCos) {
    forRange(0, depth, 1, [&](Value c) {
      store(c, rounded(memref::LoadOp::create(b, loc, source, where(row, c))));
    });
    return;
  }
  int64_t half = depth / 2;
  forRange(0, half, 1, [&](Value c) {
    Value partner = add(c, index(half));
    Value x1 = memref::LoadOp::create(b, loc, source, where(row, c));
    Value x2 = memref::LoadOp::create(b, loc, source, where(row, partner));
    Value cos = memref::LoadOp::create(b, loc, ropeCos, ValueRange{row, c});
    Value sin = memref::LoadOp::create(b, loc, ropeSin, ValueRange{row, c});
    // Rounded after the rotation, as torch does.
    auto [first, second] = rotateHalves(b, loc, x1, x2, cos, sin);
    store(c, rounded(first));
    store(partner, rounded(second));
  });
}

void FlashEmitter::forRange(int64_t begin, int64_t end, int64_t step,
                            function_ref<void(Value)> body) {
  if (end <= begin)
    return;
  auto loop = scf::ForOp::create(b, loc, index(begin), index(end), index(step));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

SmallVector<Value> FlashEmitter::ktIndex(Value c, Value j) {
  Value width = index(keyBlock);
  return {arith::DivUIOp::create(b, loc, j, width), c,
          arith::RemUIOp::create(b, loc, j, width)};
}

void FlashEmitter::transposeKeys(Value n) {
  forRange(0, keys, 1, [&](Value j) {
    copyRow(
        k, j, [&](Value row, Value c) { return kAt(row, c); },
        [&](Value c, Value x) {
          memref::StoreOp::create(b, loc, x, kt, ktIndex(c, j));
        });
  });
}

void FlashEmitter::roundValues() {
  forRange(0, keys, 1, [&](Value j) {
    for (auto [c0, lanes] : chunks()) {
      Value x = vector::LoadOp::create(b, loc,
                                       VectorType::get({lanes}, b.getF32Type()),
                                       v, vAt(j, index(c0)));
      vector::StoreOp::create(b, loc, rounded(x), roundedValues,
                              ValueRange{j, index(c0)});
    }
  });
}

void FlashEmitter::meanOfValues(Value n) {
  forRange(0, width, 1, [&](Value c) {
    memref::StoreOp::create(b, loc, f32(0.0f), mean, ValueRange{c});
  });
  forRange(0, keys, 1, [&](Value j) {
    forRange(0, width, 1, [&](Value c) {
      Value x = rounded(memref::LoadOp::create(b, loc, v, vAt(j, c)));
      Value acc = memref::LoadOp::create(b, loc, mean, ValueRange{c});
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, acc, x),
                              mean, ValueRange{c});
    });
  });
  Value count = f32(static_cast<float>(keys));
  forRange(0, width, 1, [&](Value c) {
    Value acc = memref::LoadOp::create(b, loc, mean, ValueRange{c});
    memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, acc, count),
                            mean, ValueRange{c});
  });
}

Value FlashEmitter::lengthOf(Value n, Value row) {
  Value len;
  if (lens) {
    Value raw =
        lens2d
            ? memref::LoadOp::create(b, loc, lens, ValueRange{entryBatch, row})
            : memref::LoadOp::create(b, loc, lens, ValueRange{entryBatch});
    len = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  }
  return visibleEnd(b, loc, len, row, keys, causal);
}

void FlashEmitter::rowsOf(Value n, Value i0, int64_t rows,
                          SmallVectorImpl<Value> &row,
                          SmallVectorImpl<Value> &len,
                          SmallVectorImpl<Value> &lo) {
  for (int64_t r = 0; r < rows; ++r) {
    row.push_back(add(i0, index(r)));
    len.push_back(lengthOf(n, row.back()));
    lo.push_back(lowerOf(row.back()));
  }
}

void FlashEmitter::forRowBlocks(Value s0, int64_t count,
                                function_ref<void(Value, int64_t)> body) {
  int64_t full = count / rowBlock, left = count % rowBlock;
  if (full) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(full * rowBlock),
                                   index(rowBlock));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(add(s0, loop.getInductionVar()), rowBlock);
  }
  if (left)
    body(add(s0, index(full * rowBlock)), left);
}

void FlashEmitter::superBlockOf(Value n, Value s0, int64_t rows) {
  // The super-block's query rows are read from a copy: `out` may be `q`'s
  // buffer (attention in place), and its rows are written from here on.
  superStart = s0;
  forRange(0, rows, 1, [&](Value r) {
    copyRow(
        q, add(s0, r), [&](Value row, Value c) { return qAt(row, c); },
        [&](Value c, Value x) {
          memref::StoreOp::create(b, loc, x, queryRows, ValueRange{r, c});
          if (dot)
            memref::StoreOp::create(b, loc, narrowed(x), queryPairs,
                                    ValueRange{r, c});
        });
  });
  auto init = scf::ForOp::create(
      b, loc, index(0), index(rows), index(1), ValueRange{index(0)},
      [&](OpBuilder &nb, Location, Value r, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value row = add(s0, r);
        memref::StoreOp::create(b, loc,
                                f32(std::numeric_limits<float>::lowest()),
                                stats, ValueRange{index(0), r});
        memref::StoreOp::create(b, loc, f32(0.0f), stats,
                                ValueRange{index(1), r});
        for (auto [c0, lanes] : chunks())
          vector::StoreOp::create(
              b, loc,
              arith::ConstantOp::create(
                  b, loc,
                  DenseElementsAttr::get(
                      VectorType::get({lanes}, b.getF32Type()), 0.0f)),
              out, outAt(row, index(c0)));
        scf::YieldOp::create(b, loc,
                             ValueRange{arith::MaxSIOp::create(
                                 b, loc, acc[0], lengthOf(n, row))});
      });
  Value maxLen = init.getResult(0);

  // One step of keys (`blocks` blocks of `lanes`) for every register
  // block of the super-block.
  auto sweep = [&](Value j0, int64_t lanes, int64_t blocks) {
    forRowBlocks(s0, rows, [&](Value i0, int64_t count) {
      SmallVector<Value> row, len, lo, state;
      rowsOf(n, i0, count, row, len, lo);
      // With a window, a register block of rows skips the keys that none
      // of its rows sees: the work per row grows with the window, not Tk.
      OpBuilder::InsertionGuard guard(b);
      if (window) {
        Value blockLen = len[0];
        for (int64_t r = 1; r < count; ++r)
          blockLen = arith::MaxSIOp::create(b, loc, blockLen, len[r]);
        Value end = add(j0, index(lanes * blocks));
        Value seen = arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j0,
                                  blockLen),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, end,
                                  lo[0]));
        auto ifOp = scf::IfOp::create(b, loc, seen, /*withElseRegion=*/false);
        b.setInsertionPointToStart(ifOp.thenBlock());
      }
      Value first = arith::SubIOp::create(b, loc, i0, s0);
      for (int64_t which = 0; which < 2; ++which)
        for (int64_t r = 0; r < count; ++r)
          state.push_back(memref::LoadOp::create(
              b, loc, stats, ValueRange{index(which), add(first, index(r))}));
      SmallVector<Value> next =
          keyBlockOf(n, row, len, lo, j0, lanes, blocks, state);
      for (int64_t which = 0; which < 2; ++which)
        for (int64_t r = 0; r < count; ++r)
          memref::StoreOp::create(
              b, loc, next[which * count + r], stats,
              ValueRange{index(which), add(first, index(r))});
    });
  };

  // Full key blocks up to the longest row (past it every key of every row
  // is masked): softmaxBlocks at a time, then the rest one at a time.
  // With a window, keys below the first row's window (the lowest) are
  // skipped too: from the block that holds it.
  int64_t fullBlocks = keys / keyBlock, leftKeys = keys % keyBlock;
  int64_t fullSteps = fullBlocks / softmaxBlocks;
  Value firstBlock = index(0), firstStep = index(0);
  if (window) {
    firstBlock = arith::MinUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, lowerOf(s0), index(keyBlock)),
        index(fullBlocks));
    firstStep =
        arith::DivUIOp::create(b, loc, firstBlock, index(softmaxBlocks));
  }
  if (fullBlocks) {
    Value wanted = arith::DivUIOp::create(
        b, loc, add(maxLen, index(keyBlock - 1)), index(keyBlock));
    Value blocks = arith::MinUIOp::create(b, loc, wanted, index(fullBlocks));
    Value steps = arith::MinUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, blocks, index(softmaxBlocks)),
        index(fullSteps));
    if (fullSteps) {
      auto loop = scf::ForOp::create(b, loc, firstStep, steps, index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      sweep(arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                  index(keyBlock * softmaxBlocks)),
            keyBlock, softmaxBlocks);
    }
    // Blocks the steps leave: past fullSteps, or past the longest row.
    if (softmaxBlocks > 1) {
      Value first = arith::MaxUIOp::create(
          b, loc, arith::MulIOp::create(b, loc, steps, index(softmaxBlocks)),
          firstBlock);
      auto loop = scf::ForOp::create(b, loc, first, blocks, index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      sweep(arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                  index(keyBlock)),
            keyBlock, 1);
    }
  }
  // The leftover keys, in blocks of powers of two (see powerOfTwoPieces),
  // each only if some row reaches it.
  for (auto [offset, lanes] : powerOfTwoPieces(leftKeys, keyBlock)) {
    Value start = index(fullBlocks * keyBlock + offset);
    Value needed =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, maxLen, start);
    auto ifOp = scf::IfOp::create(b, loc, needed, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    sweep(start, lanes, 1);
  }

  forRange(0, rows, 1, [&](Value r) {
    Value row = add(s0, r);
    Value rowMax =
        memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
    Value rowSum =
        memref::LoadOp::create(b, loc, stats, ValueRange{index(1), r});
    finishRow(n, row, lengthOf(n, row), lowerOf(row), rowMax, rowSum);
  });
}

SmallVector<Value> FlashEmitter::keyBlockOf(Value n, ArrayRef<Value> row,
                                            ArrayRef<Value> len,
                                            ArrayRef<Value> lo, Value j0,
                                            int64_t lanes, int64_t blocks,
                                            ValueRange state) {
  int64_t rows = row.size();
  int64_t span = lanes * blocks;
  auto vecType = VectorType::get({lanes}, b.getF32Type());
  Value zero =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vecType, 0.0f));
  SmallVector<int32_t> offsets;
  for (int64_t j = 0; j < lanes; ++j)
    offsets.push_back(static_cast<int32_t>(j));
  auto i32Vec = VectorType::get({lanes}, b.getI32Type());
  Value laneIndex = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(i32Vec, ArrayRef(offsets)));

  // The scaled, masked scores of the `lanes` keys from jt, a vector per
  // row: s[r] = sum_c q[n, row r, c] * kt[key block, c, lanes].
  auto productsOf = [&](Value jt) -> SmallVector<Value> {
    if (dot)
      return pairScoresOf(row, jt, lanes);
    SmallVector<Value> where = ktIndex(index(0), jt);
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(depth), index(1),
        SmallVector<Value>(rows, zero),
        [&](OpBuilder &nb, Location, Value c, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value keyColumn = vector::LoadOp::create(
              b, loc, vecType, kt, ValueRange{where[0], c, where[2]});
          SmallVector<Value> next;
          for (int64_t r = 0; r < rows; ++r) {
            Value x = memref::LoadOp::create(
                b, loc, queryRows, ValueRange{inSuperBlock(row[r]), c});
            next.push_back(vector::FMAOp::create(b, loc, splat(x, lanes),
                                                 keyColumn, acc[r]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  };
  auto scoresOf = [&](Value jt) {
    SmallVector<Value> products = productsOf(jt);
    // Key indices jt + [0, lanes) as i32, to compare with the lengths.
    Value keyIndex = arith::AddIOp::create(
        b, loc, laneIndex,
        splat(arith::IndexCastOp::create(b, loc, b.getI32Type(), jt), lanes));
    SmallVector<Value> scores;
    for (int64_t r = 0; r < rows; ++r) {
      Value s =
          arith::MulFOp::create(b, loc, products[r], splat(f32(scale), lanes));
      Value visible =
          isKeyVisible(b, loc, keyIndex, lo[r], len[r], [&](Value bound) {
            return splat(
                arith::IndexCastOp::create(b, loc, b.getI32Type(), bound),
                lanes);
          });
      scores.push_back(maskScore(b, loc, visible, s));
    }
    return scores;
  };
  // One block per step (AVX-512's 64 keys): its scores stay in registers.
  // Several: each block's wait in probs[r, t * lanes + j].
  SmallVector<Value> inRegisters;
  if (blocks == 1)
    inRegisters = scoresOf(j0);
  else
    forRange(0, blocks, 1, [&](Value t) {
      Value first = arith::MulIOp::create(b, loc, t, index(lanes));
      for (auto [r, s] : llvm::enumerate(scoresOf(add(j0, first))))
        vector::StoreOp::create(b, loc, s, probs, ValueRange{index(r), first});
    });

  // Per row, a loop over the step's blocks for the maximum, another for
  // the exps and their sum: one block of scores live at a time (unrolled,
  // the blocks of every row were live at once and spilled).
  SmallVector<Value> maxes, sums, alphas;
  auto overBlocks = [&](int64_t r, Value init,
                        function_ref<Value(Value, Value, Value)> body) {
    if (blocks == 1)
      return body(index(0), inRegisters[r], init);
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(span), index(lanes), ValueRange{init},
        [&](OpBuilder &nb, Location, Value t, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value s = vector::LoadOp::create(b, loc, vecType, probs,
                                           ValueRange{index(r), t});
          scf::YieldOp::create(b, loc, body(t, s, acc[0]));
        });
    return loop.getResult(0);
  };
  for (int64_t r = 0; r < rows; ++r) {
    // A plain max (vmaxps): a NaN score still reaches the output
    // through exp and the sum, without IEEE maximum's NaN and -0 fix-ups
    // (about 50 instructions per row and block).
    Value lanesMax =
        overBlocks(r, maxIdentity(b, loc, vecType, ScoreMax::Plain),
                   [&](Value, Value s, Value acc) -> Value {
                     return maxOf(b, loc, acc, s, ScoreMax::Plain);
                   });
    OnlineStep step = advanceMax(b, loc, state[r],
                                 reduceMax(b, loc, lanesMax, ScoreMax::Plain),
                                 ScoreMax::Plain);
    Value newMax = step.newMax;
    Value lanesSum =
        overBlocks(r, zero, [&](Value t, Value s, Value acc) -> Value {
          Value p;
          if (dot) {
            p = keptPairWeights(
                arith::SubFOp::create(b, loc, s, splat(newMax, lanes)),
                index(r), t);
          } else {
            p = stepWeight(b, loc, s, step);
            vector::StoreOp::create(b, loc, rounded(p), probs,
                                    ValueRange{index(r), t});
          }
          return arith::AddFOp::create(b, loc, acc, p);
        });
    // An odd step (the last key) pairs its weight with a zero, as vTiles
    // pairs its row of v with zeros.
    if (dot && span % 2 != 0)
      memref::StoreOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc, b.getFloatAttr(bf16(), 0.0)),
          weightPairs, ValueRange{index(r), index(span)});
    Value alpha = rescaleFactor(b, loc, step);
    sums.push_back(advanceSum(b, loc, state[rows + r], alpha,
                              reduceSum(b, loc, lanesSum)));
    maxes.push_back(newMax);
    alphas.push_back(alpha);
  }

  // out[r] = out[r] * alpha[r] + sum_j p[r][j] * v[n, j0 + j, :] as a
  // small GEMM: the weights go through `probs` so that each p[r][j] is a
  // broadcast load, not a lane shuffle. Per group of column chunks, the
  // rows' accumulators stay in registers over a loop on the keys that
  // loads each row of v once and each weight once (unrolled over the
  // keys, LLVM kept every broadcast weight as a whole vector on the
  // stack).
  SmallVector<std::pair<int64_t, int64_t>> all = chunks();
  int64_t perGroup = std::max<int64_t>(1, maxAccumulators / rows);
  for (size_t g0 = 0; g0 < all.size(); g0 += perGroup) {
    ArrayRef<std::pair<int64_t, int64_t>> group =
        ArrayRef(all).slice(g0, std::min<size_t>(perGroup, all.size() - g0));
    if (dot) {
      pairWeightedValues(row, j0, span, alphas, group);
      continue;
    }
    SmallVector<Value> acc;
    for (auto [c0, chunk] : group)
      for (int64_t r = 0; r < rows; ++r) {
        Value o = vector::LoadOp::create(
            b, loc, VectorType::get({chunk}, b.getF32Type()), out,
            outAt(row[r], index(c0)));
        acc.push_back(rescaled(b, loc, o, alphas[r]));
      }
    auto keysLoop = scf::ForOp::create(
        b, loc, index(0), index(span), index(1), acc,
        [&](OpBuilder &nb, Location, Value j, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> weight, next;
          for (int64_t r = 0; r < rows; ++r)
            weight.push_back(
                memref::LoadOp::create(b, loc, probs, ValueRange{index(r), j}));
          for (auto [i, piece] : llvm::enumerate(group)) {
            auto [c0, chunk] = piece;
            auto chunkType = VectorType::get({chunk}, b.getF32Type());
            Value key = add(j0, j);
            Value valueRow =
                roundedValues
                    ? vector::LoadOp::create(b, loc, chunkType, roundedValues,
                                             ValueRange{key, index(c0)})
                          .getResult()
                    : vector::LoadOp::create(b, loc, chunkType, v,
                                             vAt(key, index(c0)))
                          .getResult();
            for (int64_t r = 0; r < rows; ++r)
              next.push_back(
                  accumulated(b, loc, acc[i * rows + r], weight[r], valueRow));
          }
          scf::YieldOp::create(b, loc, next);
        });
    for (auto [i, piece] : llvm::enumerate(group))
      for (int64_t r = 0; r < rows; ++r)
        vector::StoreOp::create(b, loc, keysLoop.getResult(i * rows + r), out,
                                outAt(row[r], index(piece.first)));
  }
  SmallVector<Value> next(maxes);
  next.append(sums);
  return next;
}

void FlashEmitter::finishRow(Value n, Value row, Value len, Value lo,
                             Value rowMax, Value rowSum) {
  Value empty = mayBeEmpty() ? isEmptyRow(b, loc, lo, len) : Value();
  Value exact = needsExactRecompute(b, loc, rowMax, lo, len, keys);
  auto divideOrRecompute = [&] {
    scf::IfOp::create(
        b, loc, exact,
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          exactRow(n, row, len, lo);
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          for (auto [c0, chunk] : chunks()) {
            auto chunkType = VectorType::get({chunk}, b.getF32Type());
            Value col = index(c0);
            Value o =
                vector::LoadOp::create(b, loc, chunkType, out, outAt(row, col));
            o = arith::DivFOp::create(b, loc, o, splat(rowSum, chunk));
            vector::StoreOp::create(b, loc, o, out, outAt(row, col));
          }
          scf::YieldOp::create(b, loc);
        });
  };
  // Without valid_lens every row sees a key at least (causal: itself).
  if (!mayBeEmpty()) {
    divideOrRecompute();
    return;
  }
  scf::IfOp::create(
      b, loc, empty,
      [&](OpBuilder &nb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        forRange(0, width, 1, [&](Value c) {
          Value x = memref::LoadOp::create(b, loc, mean, ValueRange{c});
          memref::StoreOp::create(b, loc, x, out, outAt(row, c));
        });
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &nb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        divideOrRecompute();
        scf::YieldOp::create(b, loc);
      });
}

Value FlashEmitter::scoreOf(Value n, Value row, Value len, Value lo, Value j) {
  return maskScore(b, loc, isKeyVisible(b, loc, j, lo, len),
                   rawScoreOf(n, row, j));
}

Value FlashEmitter::rawScoreOf(Value n, Value row, Value j) {
  auto sum = scf::ForOp::create(
      b, loc, index(0), index(depth), index(1), ValueRange{f32(0.0f)},
      [&](OpBuilder &nb, Location, Value c, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value x = memref::LoadOp::create(b, loc, queryRows,
                                         ValueRange{inSuperBlock(row), c});
        Value y =
            amx || dot
                ? keyFromTiles(c, j)
                : memref::LoadOp::create(b, loc, kt, ktIndex(c, j)).getResult();
        scf::YieldOp::create(
            b, loc, ValueRange{math::FmaOp::create(b, loc, x, y, acc[0])});
      });
  return arith::MulFOp::create(b, loc, sum.getResult(0), f32(scale));
}

void FlashEmitter::exactRow(Value n, Value row, Value len, Value lo) {
  // D2L's rule: every key, masked ones at -1e6. `exclusive`: the visible
  // keys only (a masked key weighs 0). The row's accumulators are its
  // output row.
  forRange(0, width, 1, [&](Value c) {
    memref::StoreOp::create(b, loc, f32(0.0f), out, outAt(row, c));
  });
  SmallVector<Value> rowStats = attn::exactRow(
      b, loc, index(keys), ValueRange{},
      [&](Value j) {
        return exclusive ? rawScoreOf(n, row, j) : scoreOf(n, row, len, lo, j);
      },
      exclusive ? function_ref<Value(Value)>(
                      [&](Value j) { return isKeyVisible(b, loc, j, lo, len); })
                : function_ref<Value(Value)>(),
      [&](ValueRange, Value alpha, Value weight, Value j) {
        Value p = rounded(weight);
        forRange(0, width, 1, [&](Value c) {
          Value x = rounded(memref::LoadOp::create(b, loc, v, vAt(j, c)));
          Value acc = memref::LoadOp::create(b, loc, out, outAt(row, c));
          memref::StoreOp::create(
              b, loc, accumulated(b, loc, rescaled(b, loc, acc, alpha), p, x),
              out, outAt(row, c));
        });
        return SmallVector<Value>();
      });
  forRange(0, width, 1, [&](Value c) {
    Value acc = memref::LoadOp::create(b, loc, out, outAt(row, c));
    memref::StoreOp::create(b, loc, normalized(b, loc, acc, rowStats[1]), out,
                            outAt(row, c));
  });
}
