//===- TileAndVectorize.cpp - Register tiles and vectors for linalg ops ---===//
//
// After bufferization: GEMMs (linalg.matmul / batch_matmul) become
// register blocks -- rows x vector columns of C held in registers across the
// k loop, one vector load of B and one broadcast + FMA per row per k step --
// all-parallel linalg ops become vector strips of their innermost dimension,
// row reductions one vector per row. Shapes are static, so leftover
// rows/columns are smaller static blocks: no masks. A GEMM's zero or bias
// initialization and a following activation (ReLU, GELU, ...) become part
// of its register blocks (GemmEpilogue.h). Other reductions and
// transposes, and gathers, are left for convert-linalg-to-loops.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/Target/CpuTarget.h"

#include "GemmEpilogue.h"
#include "PowerOfTwoPieces.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTILEANDVECTORIZE
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The largest candidate that divides `size` (candidates in descending
/// order, the last one 1).
int64_t largestDivisor(int64_t size, ArrayRef<int64_t> candidates) {
  for (int64_t c : candidates)
    if (size % c == 0)
      return c;
  return 1;
}

/// Tile sizes per loop (0: not tiled) of the ops vectorized as strips, or
/// empty when the op is left for scalar loops:
/// - all-parallel ops (elementwise linalg.generic, fill, broadcast, and
///   transposes that keep the innermost dimension): strips of the innermost
///   dimension;
/// - reductions over the innermost dimension only (softmax's max and sum,
///   layer norm's sums) of rows up to `maxVectorRow`: one row per vector.
SmallVector<int64_t> chooseStripSizes(linalg::LinalgOp op, int64_t width,
                                      int64_t maxVectorRow) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
    return {};
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation())) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    if (perm.back() != static_cast<int64_t>(perm.size()) - 1)
      return {};
  } else if (!isa<linalg::GenericOp, linalg::FillOp, linalg::BroadcastOp>(op)) {
    return {};
  }
  // Gathers (tensor.extract became memref.load) stay scalar.
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    if (!generic.getBody()->getOps<memref::LoadOp>().empty())
      return {};
  SmallVector<int64_t> tiles(op.getNumLoops(), 1);
  if (op.getNumReductionLoops() != 0) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    if (op.getNumReductionLoops() != 1 ||
        iterators.back() != utils::IteratorType::reduction ||
        ranges.back() > maxVectorRow)
      return {};
    tiles.back() = 0;
    return tiles;
  }
  SmallVector<int64_t> candidates;
  for (int64_t c = width; c >= 1; c /= 2)
    candidates.push_back(c);
  tiles.back() = largestDivisor(ranges.back(), candidates);
  return tiles;
}

/// Tiles of a transpose that swaps the last two dimensions (a weight
/// [O, I] -> [I, O] per call), or empty. Its `block` x `block` tiles stay
/// scalar but are cache-friendly: the naive loop reads one element per cache
/// line.
SmallVector<int64_t> chooseTransposeBlocks(linalg::LinalgOp op, int64_t block) {
  auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation());
  if (!transpose)
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return {};
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      ranges[rank - 2] < 2 * block || ranges[rank - 1] < 2 * block)
    return {};
  SmallVector<int64_t> tiles(rank, 1);
  tiles[rank - 2] = tiles[rank - 1] = block;
  return tiles;
}

/// Emits C[batch, m, n] += sum_k A[batch, m, k] * B[batch, k, n] over
/// k in [kBegin, kBegin + depth) for a block of `rows` x `width` elements of
/// C at (m, n): the C block is loaded into `rows` vector accumulators, each k
/// step loads one vector of B, broadcasts `rows` scalars of A and issues
/// `rows` FMAs, and the block is stored back. `batch` is empty for a plain
/// matmul. With an epilogue, the first k slice (of `totalDepth`) starts from
/// zeros or the bias instead of C, and the last stores activation(C) into
/// the activation's output instead of C into C. With `packedB`, B is read from
/// that [depth, width] copy of the slice instead (see packSliceOfB). C has
/// `matrixRows` rows; the next block's C is prefetched a line every
/// `prefetchStride` floats.
void emitRegisterBlock(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value out, ValueRange batch, Value m, Value n,
                       int64_t rows, int64_t width, Value kBegin, int64_t depth,
                       int64_t totalDepth, const attn::GemmEpilogue &epilogue,
                       Value packedB, int64_t matrixRows,
                       int64_t prefetchStride) {
  auto vectorType = VectorType::get({width}, b.getF32Type());
  auto at = [&](ValueRange tail) {
    SmallVector<Value> indices(batch);
    indices.append(tail.begin(), tail.end());
    return indices;
  };
  SmallVector<Value> rowIndex;
  for (int64_t r = 0; r < rows; ++r)
    rowIndex.push_back(
        r == 0 ? m
               : arith::AddIOp::create(
                     b, loc, m, arith::ConstantIndexOp::create(b, loc, r)));
  // The next row block's C lines are asked for now, so that they arrive
  // while this block's k loop runs: that block's loads of C otherwise wait
  // on memory (C is written once and read again only a whole column pass
  // later). The row is clamped into C: the last block prefetches itself.
  Value lastRow = arith::ConstantIndexOp::create(b, loc, matrixRows - 1);
  for (int64_t r = 0; r < rows; ++r) {
    Value next = arith::MinSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, m,
                              arith::ConstantIndexOp::create(b, loc, rows + r)),
        lastRow);
    for (int64_t c = 0; c < width; c += prefetchStride) {
      Value column =
          c == 0 ? n
                 : arith::AddIOp::create(
                       b, loc, n, arith::ConstantIndexOp::create(b, loc, c));
      memref::PrefetchOp::create(b, loc, out, at({next, column}),
                                 /*isWrite=*/true, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
  auto loadC = [&](OpBuilder &b) {
    SmallVector<Value> blockOfC;
    for (Value row : rowIndex)
      blockOfC.push_back(
          vector::LoadOp::create(b, loc, vectorType, out, at({row, n})));
    return blockOfC;
  };
  SmallVector<Value> accumulators;
  if (!epilogue.zeroInit && !epilogue.bias) {
    accumulators = loadC(b);
  } else {
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kBegin,
                              arith::ConstantIndexOp::create(b, loc, 0));
    auto start =
        scf::IfOp::create(b, loc, SmallVector<Type>(rows, vectorType), first,
                          /*addThenBlock=*/true, /*addElseBlock=*/true);
    OpBuilder thenBuilder = start.getThenBodyBuilder();
    Value initial =
        epilogue.bias
            ? vector::LoadOp::create(thenBuilder, loc, vectorType,
                                     epilogue.bias, ValueRange{n})
                  .getResult()
            : arith::ConstantOp::create(
                  thenBuilder, loc, DenseElementsAttr::get(vectorType, 0.0f))
                  .getResult();
    scf::YieldOp::create(thenBuilder, loc, SmallVector<Value>(rows, initial));
    OpBuilder elseBuilder = start.getElseBodyBuilder();
    scf::YieldOp::create(elseBuilder, loc, loadC(elseBuilder));
    accumulators.assign(start.getResults().begin(), start.getResults().end());
  }
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value kEnd = arith::AddIOp::create(
      b, loc, kBegin, arith::ConstantIndexOp::create(b, loc, depth));
  auto loop = scf::ForOp::create(
      b, loc, kBegin, kEnd, one, accumulators,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange acc) {
        Value bRow =
            packedB
                ? vector::LoadOp::create(
                      nb, nl, vectorType, packedB,
                      ValueRange{arith::SubIOp::create(nb, nl, k, kBegin),
                                 arith::ConstantIndexOp::create(nb, nl, 0)})
                : vector::LoadOp::create(nb, nl, vectorType, rhs, at({k, n}));
        SmallVector<Value> next;
        for (int64_t r = 0; r < rows; ++r) {
          Value a = memref::LoadOp::create(nb, nl, lhs, at({rowIndex[r], k}));
          Value splat = vector::BroadcastOp::create(nb, nl, vectorType, a);
          next.push_back(vector::FMAOp::create(nb, nl, splat, bRow, acc[r]));
        }
        scf::YieldOp::create(nb, nl, next);
      });
  auto storeC = [&](OpBuilder &b) {
    for (int64_t r = 0; r < rows; ++r)
      vector::StoreOp::create(b, loc, loop.getResult(r), out,
                              at({rowIndex[r], n}));
  };
  if (!epilogue.activationOutput) {
    storeC(b);
    return;
  }
  Value last =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kEnd,
                            arith::ConstantIndexOp::create(b, loc, totalDepth));
  auto finish = scf::IfOp::create(b, loc, last, /*withElseRegion=*/true);
  OpBuilder thenBuilder = finish.getThenBodyBuilder();
  for (int64_t r = 0; r < rows; ++r)
    vector::StoreOp::create(
        thenBuilder, loc,
        attn::applyActivation(thenBuilder, loc, epilogue.activation,
                              loop.getResult(r)),
        epilogue.activationOutput, ValueRange{rowIndex[r], n});
  OpBuilder elseBuilder = finish.getElseBodyBuilder();
  storeC(elseBuilder);
}

/// Copies the slice B[batch, k0 : k0 + depth, n : n + width] into the
/// contiguous `packed` [depth, width] buffer. Rows of B are `columns` floats
/// apart: for a power-of-two row length every row of a slice falls into the
/// same few L1 sets, so the register blocks would read B from L2; the copy
/// is read from L1 by all of them.
void packSliceOfB(OpBuilder &b, Location loc, Value rhs, ValueRange batch,
                  Value k0, Value n, int64_t depth, int64_t width,
                  Value packed) {
  auto vectorType = VectorType::get({width}, b.getF32Type());
  scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0),
      arith::ConstantIndexOp::create(b, loc, depth),
      arith::ConstantIndexOp::create(b, loc, 1), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value kk, ValueRange) {
        SmallVector<Value> indices(batch);
        indices.push_back(arith::AddIOp::create(nb, nl, k0, kk));
        indices.push_back(n);
        Value row = vector::LoadOp::create(nb, nl, vectorType, rhs, indices);
        vector::StoreOp::create(
            nb, nl, row, packed,
            ValueRange{kk, arith::ConstantIndexOp::create(nb, nl, 0)});
        scf::YieldOp::create(nb, nl);
      });
}

/// Covers [begin, begin + count * step) of one dimension with a loop of
/// `count` iterations (or a single index when count is 1); an scf.parallel
/// when `parallel`.
void forEachBlock(OpBuilder &b, Location loc, int64_t begin, int64_t count,
                  int64_t step, bool parallel,
                  function_ref<void(OpBuilder &, Value)> body) {
  if (count <= 0)
    return;
  if (count == 1) {
    body(b, arith::ConstantIndexOp::create(b, loc, begin));
    return;
  }
  if (parallel) {
    scf::ParallelOp::create(
        b, loc, ValueRange{arith::ConstantIndexOp::create(b, loc, begin)},
        ValueRange{
            arith::ConstantIndexOp::create(b, loc, begin + count * step)},
        ValueRange{arith::ConstantIndexOp::create(b, loc, step)},
        [&](OpBuilder &nb, Location, ValueRange index) { body(nb, index[0]); });
    return;
  }
  scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, begin),
      arith::ConstantIndexOp::create(b, loc, begin + count * step),
      arith::ConstantIndexOp::create(b, loc, step), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value index, ValueRange) {
        body(nb, index);
        scf::YieldOp::create(nb, nl);
      });
}

/// Replaces a linalg.matmul / linalg.batch_matmul on buffers (default maps,
/// f32) by register blocks of at most rowTile x columnTile. Shapes are
/// static, so the leftover rows and columns are blocks of static, smaller
/// sizes: no masks, no partial vectors.
LogicalResult lowerToRegisterBlocks(RewriterBase &rewriter, linalg::LinalgOp op,
                                    int64_t rowTile, int64_t columnTile,
                                    int64_t depthTile, bool parallel,
                                    int64_t parallelFlops,
                                    int64_t packRowBlocks,
                                    int64_t prefetchStride) {
  bool batched = isa<linalg::BatchMatmulOp>(op);
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
      !op.hasPureBufferSemantics())
    return failure();
  SmallVector<AffineMap> defaults =
      batched ? linalg::BatchMatmulOp::getDefaultIndexingMaps(op.getContext())
              : linalg::MatmulOp::getDefaultIndexingMaps(op.getContext());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (op.getIndexingMapsArray() != defaults ||
      llvm::any_of(ranges, ShapedType::isDynamic) ||
      !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32())
    return failure();
  unsigned first = batched ? 1 : 0;
  int64_t rows = ranges[first], columns = ranges[first + 1],
          depth = ranges[first + 2];
  // Threads only pay off past a few microseconds of work.
  int64_t flops = 2 * rows * columns * depth * (batched ? ranges[0] : 1);
  parallel = parallel && flops >= parallelFlops;
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1],
        out = op.getDpsInits()[0];
  Location loc = op.getLoc();
  // The fill or bias broadcast before it and an activation after it become
  // part of the register blocks (plain matmuls only).
  attn::GemmEpilogue epilogue;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
      matmul && depth > 0)
    epilogue = attn::foldGemmEpilogue(rewriter, matmul);
  rewriter.setInsertionPoint(op);

  auto emitAll = [&](OpBuilder &b, ValueRange batch) {
    // Full blocks, then the leftover rows/columns as one smaller block each.
    int64_t fullRows = rows / rowTile, leftRows = rows % rowTile;
    int64_t fullCols = columns / columnTile, leftCols = columns % columnTile;
    struct Span {
      int64_t begin, count, size;
    };
    Span rowSpans[] = {{0, fullRows, rowTile},
                       {fullRows * rowTile, leftRows ? 1 : 0, leftRows}};
    // Leftover columns as blocks of powers of two: LLVM handles a vector of
    // 36 or 48 floats very badly (scalarized, 20x slower).
    SmallVector<Span> colSpans = {{0, fullCols, columnTile}};
    for (auto [offset, lanes] : attn::powerOfTwoPieces(leftCols, columnTile))
      colSpans.push_back({fullCols * columnTile + offset, 1, lanes});
    // Threads split the outermost loop that has several blocks (never two
    // nested loops): the column blocks, else the row blocks.
    bool innerParallel = parallel && batch.empty();
    // k in slices of depthTile: the slice of B under a column block (at
    // most depthTile x columnTile floats) stays in L1 while every row block
    // runs over it. Each C element still sums k in order: same bits.
    int64_t fullDepth = depth / depthTile, leftDepth = depth % depthTile;
    Span depthSpans[] = {{0, fullDepth, depthTile},
                         {fullDepth * depthTile, leftDepth ? 1 : 0, leftDepth}};
    // B's slice under a column block is copied to a contiguous buffer
    // when enough row blocks read it to pay for the copy.
    bool packB = packRowBlocks > 0 && rows >= packRowBlocks * rowTile;
    int64_t sliceDepth = std::min(depth, depthTile);
    for (const Span &cs : colSpans) {
      bool splitColumns = innerParallel && cs.count > 1;
      forEachBlock(
          b, loc, cs.begin, cs.count, cs.size, splitColumns,
          [&](OpBuilder &b, Value n) {
            Value packed;
            if (packB && sliceDepth > 0)
              packed = memref::AllocOp::create(
                  b, loc,
                  MemRefType::get({sliceDepth, cs.size}, b.getF32Type()),
                  b.getI64IntegerAttr(64));
            for (const Span &ks : depthSpans)
              forEachBlock(
                  b, loc, ks.begin, ks.count, ks.size,
                  /*parallel=*/false, [&](OpBuilder &b, Value k0) {
                    Value view = packed;
                    if (packed && ks.size != sliceDepth)
                      view = memref::SubViewOp::create(
                          b, loc, packed,
                          ArrayRef<OpFoldResult>{b.getIndexAttr(0),
                                                 b.getIndexAttr(0)},
                          ArrayRef<OpFoldResult>{b.getIndexAttr(ks.size),
                                                 b.getIndexAttr(cs.size)},
                          ArrayRef<OpFoldResult>{b.getIndexAttr(1),
                                                 b.getIndexAttr(1)});
                    if (view)
                      packSliceOfB(b, loc, rhs, batch, k0, n, ks.size, cs.size,
                                   view);
                    for (const Span &rs : rowSpans)
                      forEachBlock(b, loc, rs.begin, rs.count, rs.size,
                                   innerParallel && !splitColumns,
                                   [&](OpBuilder &b, Value m) {
                                     emitRegisterBlock(
                                         b, loc, lhs, rhs, out, batch, m, n,
                                         rs.size, cs.size, k0, ks.size, depth,
                                         epilogue, view, rows, prefetchStride);
                                   });
                  });
            if (packed)
              memref::DeallocOp::create(b, loc, packed);
          });
    }
  };
  if (batched)
    forEachBlock(rewriter, loc, 0, ranges[0], 1, parallel,
                 [&](OpBuilder &b, Value batch) { emitAll(b, batch); });
  else
    emitAll(rewriter, {});
  // Every block now stores activation(C) itself.
  if (epilogue.activation)
    rewriter.eraseOp(epilogue.activation);
  rewriter.eraseOp(op);
  return success();
}

struct AttnTileAndVectorizePass
    : mlir::attn::impl::AttnTileAndVectorizeBase<AttnTileAndVectorizePass> {
  using AttnTileAndVectorizeBase::AttnTileAndVectorizeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *context = &getContext();
    IRRewriter rewriter(context);
    // The target's schedule; a pass option set to non-zero overrides it.
    FailureOr<attn::CpuSchedule> schedule = attn::cpuScheduleOf(func);
    if (failed(schedule))
      return signalPassFailure();
    int64_t rows = rowTile ? rowTile : schedule->gemmRows;
    int64_t columns = columnTile ? columnTile : schedule->gemmColumns;
    int64_t depth = depthTile ? depthTile : schedule->gemmDepth;
    int64_t strip = columnTile ? columnTile : schedule->stripElements;

    // GEMMs first: their epilogues take the fills, bias broadcasts and
    // activations next to them out of the IR.
    SmallVector<linalg::LinalgOp> gemms;
    func.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        gemms.push_back(op);
    });
    for (linalg::LinalgOp op : gemms)
      (void)lowerToRegisterBlocks(
          rewriter, op, rows, columns, depth, parallel, schedule->parallelFlops,
          schedule->gemmPackRowBlocks, schedule->prefetchStrideFloats);

    SmallVector<linalg::LinalgOp> candidates;
    func.walk([&](linalg::LinalgOp op) { candidates.push_back(op); });
    for (linalg::LinalgOp op : candidates) {
      // Cache-blocked (scalar) weight transposes, split over threads.
      if (SmallVector<int64_t> blocks =
              chooseTransposeBlocks(op, schedule->transposeBlock);
          !blocks.empty()) {
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(context, blocks));
        int64_t elements = 1;
        for (int64_t range : op.getStaticLoopRanges())
          elements *= range;
        if (parallel && elements >= schedule->parallelElements)
          options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
        rewriter.setInsertionPoint(op);
        if (succeeded(scf::tileUsingSCF(
                rewriter, cast<TilingInterface>(op.getOperation()), options)))
          rewriter.eraseOp(op);
        continue;
      }
      SmallVector<int64_t> tiles =
          chooseStripSizes(op, strip, schedule->maxVectorRow);
      if (tiles.empty())
        continue;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(context, tiles));
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue;
      rewriter.eraseOp(op);
      for (Operation *tile : tiled->tiledOps) {
        rewriter.setInsertionPoint(tile);
        if (succeeded(linalg::vectorize(rewriter, tile)))
          rewriter.eraseOp(tile);
      }
    }

    // Fold the tiling arithmetic so that transfers see constant offsets.
    {
      RewritePatternSet patterns(context);
      vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
      vector::populateVectorTransferDropUnitDimsPatterns(patterns);
      scf::ForOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, context);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, context);
      memref::SubViewOp::getCanonicalizationPatterns(patterns, context);
      affine::AffineMinOp::getCanonicalizationPatterns(patterns, context);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    // Down to 1-D vectors.
    RewritePatternSet patterns(context);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorTransferLoweringPatterns(patterns,
                                                   /*maxTransferRank=*/1);
    vector::populateVectorTransposeLoweringPatterns(
        patterns, vector::VectorTransposeLowering::EltWise);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
