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
#include "attn/Target/KernelStatus.h"

#include "AmxGemm.h"
#include "Bf16PairGemm.h"
#include "Bf16PairStep.h"
#include "BlockLoops.h"
#include "GemmEpilogue.h"
#include "PowerOfTwoPieces.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
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

/// How a GEMM's k step reads its operands (Bf16PairGemm.h).
struct GemmOperandKind {
  /// Each k step is a pair of k, the odd one summed first.
  bool pairs = false;
  /// A is bf16 and B holds bf16 pairs in f32 slots (else both are f32, B
  /// two rows per step).
  bool slots = false;
  /// Slots through vdpbf16ps (AVX512-BF16; avx512vl for fewer than 16
  /// lanes) or bfdot (AArch64's BF16) rather than FMAs on widened pairs.
  attn::CpuSchedule::Bf16Dot dot = attn::CpuSchedule::Bf16Dot::None;

  /// Rows of B (or of its packed copy) per k step.
  int64_t rhsRowsPerStep() const { return pairs && !slots ? 2 : 1; }
};

/// Lanes per accumulator vector of a block `width` columns wide: the whole
/// width (LLVM splits it into registers), but at most 16 for vdpbf16ps and
/// 4 for bfdot, whose vectors are one register.
int64_t pieceLanes(const GemmOperandKind &kind, int64_t width) {
  if (!kind.slots || width < 4)
    return width;
  switch (kind.dot) {
  case attn::CpuSchedule::Bf16Dot::Vdpbf16ps:
    return std::min<int64_t>(width, 16);
  case attn::CpuSchedule::Bf16Dot::Bfdot:
    return 4;
  case attn::CpuSchedule::Bf16Dot::None:
    break;
  }
  return width;
}

/// Emits C[batch, m, n] += sum_k A[batch, m, k] * B[batch, k, n] over
/// k in [kBegin, kBegin + depth) for a block of `rows` x `width` elements of
/// C at (m, n): the C block is loaded into vector accumulators (`rows` x
/// pieces of pieceLanes), each k step loads one row of B, broadcasts `rows`
/// scalars of A and issues an FMA per accumulator, and the block is stored
/// back. `batch` is empty for a plain matmul. With an epilogue, the first k
/// slice (of `totalDepth`) starts from zeros or the bias instead of C, and
/// the last stores activation(C) into the activation's output instead of C
/// into C. With `packedB`, B is read from that [depth, width] copy of the
/// slice instead (see packSliceOfB). C has `matrixRows` rows; the next
/// block's C is prefetched a line every `prefetchStride` floats. For bf16
/// pairs (`kind`), k counts pairs: A's columns 2k and 2k + 1, B's slot row k.
/// The epilogue's first slice is the one at `firstK` (null: 0).
void emitRegisterBlock(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value out, ValueRange batch, Value m, Value n,
                       int64_t rows, int64_t width, Value kBegin, int64_t depth,
                       int64_t totalDepth, const attn::GemmEpilogue &epilogue,
                       Value packedB, int64_t matrixRows,
                       int64_t prefetchStride, const GemmOperandKind &kind,
                       Value firstK = nullptr) {
  int64_t lanes = pieceLanes(kind, width), pieces = width / lanes;
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  auto at = [&](ValueRange tail) {
    SmallVector<Value> indices(batch);
    indices.append(tail.begin(), tail.end());
    return indices;
  };
  auto plus = [&](OpBuilder &b, Value base, int64_t offset) -> Value {
    return offset == 0 ? base
                       : arith::AddIOp::create(
                             b, loc, base,
                             arith::ConstantIndexOp::create(b, loc, offset));
  };
  SmallVector<Value> rowIndex, columnIndex;
  for (int64_t r = 0; r < rows; ++r)
    rowIndex.push_back(plus(b, m, r));
  for (int64_t p = 0; p < pieces; ++p)
    columnIndex.push_back(plus(b, n, p * lanes));
  // The next row block's C lines are asked for now, so that they arrive
  // while this block's k loop runs: that block's loads of C otherwise wait
  // on memory (C is written once and read again only a whole column pass
  // later). The row is clamped into C: the last block prefetches itself
  // (none when the block has all of C's rows).
  Value lastRow = arith::ConstantIndexOp::create(b, loc, matrixRows - 1);
  for (int64_t r = 0; r < rows && rows < matrixRows; ++r) {
    Value next = arith::MinSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, m,
                              arith::ConstantIndexOp::create(b, loc, rows + r)),
        lastRow);
    for (int64_t c = 0; c < width; c += prefetchStride)
      memref::PrefetchOp::create(b, loc, out, at({next, plus(b, n, c)}),
                                 /*isWrite=*/true, /*localityHint=*/3,
                                 /*isDataCache=*/true);
  }
  auto loadC = [&](OpBuilder &b) {
    SmallVector<Value> blockOfC;
    for (Value row : rowIndex)
      for (Value column : columnIndex)
        blockOfC.push_back(
            vector::LoadOp::create(b, loc, vectorType, out, at({row, column})));
    return blockOfC;
  };
  SmallVector<Value> accumulators;
  if (!epilogue.zeroInit && !epilogue.bias) {
    accumulators = loadC(b);
  } else {
    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, kBegin,
        firstK ? firstK : arith::ConstantIndexOp::create(b, loc, 0));
    auto start = scf::IfOp::create(
        b, loc, SmallVector<Type>(rows * pieces, vectorType), first,
        /*addThenBlock=*/true, /*addElseBlock=*/true);
    OpBuilder thenBuilder = start.getThenBodyBuilder();
    SmallVector<Value> initial;
    for (Value column : columnIndex)
      initial.push_back(
          epilogue.bias
              ? vector::LoadOp::create(thenBuilder, loc, vectorType,
                                       epilogue.bias, ValueRange{column})
                    .getResult()
              : arith::ConstantOp::create(
                    thenBuilder, loc, DenseElementsAttr::get(vectorType, 0.0f))
                    .getResult());
    SmallVector<Value> initialBlock;
    for (int64_t r = 0; r < rows; ++r)
      initialBlock.append(initial);
    scf::YieldOp::create(thenBuilder, loc, initialBlock);
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
        // Row `row` of B (of this step's rows) as pieces.
        auto loadB = [&](int64_t row) {
          int64_t steps = kind.rhsRowsPerStep();
          SmallVector<Value> pieceVectors;
          for (int64_t p = 0; p < pieces; ++p) {
            if (packedB) {
              Value local = arith::SubIOp::create(nb, nl, k, kBegin);
              if (steps != 1)
                local = arith::MulIOp::create(
                    nb, nl, local,
                    arith::ConstantIndexOp::create(nb, nl, steps));
              pieceVectors.push_back(vector::LoadOp::create(
                  nb, nl, vectorType, packedB,
                  ValueRange{
                      plus(nb, local, row),
                      arith::ConstantIndexOp::create(nb, nl, p * lanes)}));
              continue;
            }
            Value global =
                steps == 1 ? k
                           : arith::MulIOp::create(
                                 nb, nl, k,
                                 arith::ConstantIndexOp::create(nb, nl, steps));
            pieceVectors.push_back(vector::LoadOp::create(
                nb, nl, vectorType, rhs,
                at({plus(nb, global, row), columnIndex[p]})));
          }
          return pieceVectors;
        };
        // C += A[., k] B[k, .] for the k of step row `row`.
        auto fmaStep = [&](ValueRange acc, Value kOfA, int64_t row) {
          SmallVector<Value> bRow = loadB(row), sums;
          for (int64_t r = 0; r < rows; ++r) {
            Value a =
                memref::LoadOp::create(nb, nl, lhs, at({rowIndex[r], kOfA}));
            Value splat = vector::BroadcastOp::create(nb, nl, vectorType, a);
            for (int64_t p = 0; p < pieces; ++p)
              sums.push_back(vector::FMAOp::create(nb, nl, splat, bRow[p],
                                                   acc[r * pieces + p]));
          }
          return sums;
        };
        SmallVector<Value> next;
        if (kind.slots) {
          // Two bf16 of A as one 32-bit lane (the even k low).
          Value column = arith::MulIOp::create(
              nb, nl, k, arith::ConstantIndexOp::create(nb, nl, 2));
          auto pairType = VectorType::get({2}, nb.getBF16Type());
          auto bitsType = VectorType::get({1}, nb.getI32Type());
          SmallVector<Value> lhsPairs;
          for (Value row : rowIndex)
            lhsPairs.push_back(vector::BitCastOp::create(
                nb, nl, bitsType,
                vector::LoadOp::create(nb, nl, pairType, lhs,
                                       at({row, column}))));
          next = attn::emitPairStep(
              nb, nl, lanes >= 4 ? kind.dot : attn::CpuSchedule::Bf16Dot::None,
              loadB(0), lhsPairs, acc);
        } else if (kind.pairs) {
          // k = 2p + 1, then 2p.
          Value even = arith::MulIOp::create(
              nb, nl, k, arith::ConstantIndexOp::create(nb, nl, 2));
          next = fmaStep(acc, plus(nb, even, 1), 1);
          next = fmaStep(next, even, 0);
        } else {
          next = fmaStep(acc, k, 0);
        }
        scf::YieldOp::create(nb, nl, next);
      });
  auto storeC = [&](OpBuilder &b) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = 0; p < pieces; ++p)
        vector::StoreOp::create(b, loc, loop.getResult(r * pieces + p), out,
                                at({rowIndex[r], columnIndex[p]}));
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
    for (int64_t p = 0; p < pieces; ++p)
      vector::StoreOp::create(
          thenBuilder, loc,
          attn::applyActivation(thenBuilder, loc, epilogue.activation,
                                loop.getResult(r * pieces + p)),
          epilogue.activationOutput, ValueRange{rowIndex[r], columnIndex[p]});
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

/// C = A B (+ the epilogue) for a GEMM of fewer rows than a register block
/// (a decode step's projections), which is bound by reading B once: B's
/// rows are read in chunks of `gemvChunkSteps` k steps, each chunk's rows
/// at once -- one stream, where column blocks would read B in strided
/// passes -- into partial sums of its own (P[c], in L1 while the chunk
/// runs; blocks of `gemvBlockSteps` rows of B between the loads and stores
/// of P[c]), the chunks split over threads. The partials are then summed
/// in chunk order onto C's start (zeros, the bias or C) and the activation
/// applied. The chunks depend only on the shapes: the same bits on any
/// number of threads.
void emitStreamingGemm(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value out, int64_t rows, int64_t columns, int64_t depth,
                       int64_t columnTile, const attn::GemmEpilogue &epilogue,
                       bool parallel, const attn::CpuSchedule &schedule,
                       const GemmOperandKind &kind) {
  auto constant = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  int64_t chunkSteps = std::clamp<int64_t>(schedule.gemvChunkSteps, 1, depth);
  int64_t blockSteps =
      std::clamp<int64_t>(schedule.gemvBlockSteps, 1, chunkSteps);
  int64_t fullChunks = depth / chunkSteps, leftSteps = depth % chunkSteps;
  int64_t chunks = fullChunks + (leftSteps ? 1 : 0);
  Type f32 = b.getF32Type();
  Value partials = memref::AllocOp::create(
      b, loc, MemRefType::get({chunks, rows, columns}, f32),
      b.getI64IntegerAttr(64));
  // Leftover columns as blocks of powers of two (see lowerToRegisterBlocks).
  SmallVector<std::pair<int64_t, int64_t>> columnBlocks;
  int64_t fullColumns = columns / columnTile * columnTile;
  for (int64_t n = 0; n < fullColumns; n += columnTile)
    columnBlocks.push_back({n, columnTile});
  for (auto [offset, lanes] :
       attn::powerOfTwoPieces(columns - fullColumns, columnTile))
    columnBlocks.push_back({fullColumns + offset, lanes});
  attn::GemmEpilogue fromZero;
  fromZero.zeroInit = true;
  auto partialType =
      MemRefType::get({rows, columns}, f32,
                      StridedLayoutAttr::get(
                          b.getContext(), ShapedType::kDynamic, {columns, 1}));
  // B's rows of the `count` k steps `gemvPrefetchSteps` steps after
  // kBegin's, a line at a time into L2 (clamped into B): the hardware
  // prefetchers alone keep too few lines in flight for one core to read
  // at the memory's rate.
  auto rhsType = cast<MemRefType>(rhs.getType());
  int64_t rhsRows = rhsType.getDimSize(0);
  int64_t lineElements = std::max<int64_t>(
      1, schedule.prefetchStrideFloats * 32 /
             std::max<int64_t>(1, rhsType.getElementTypeBitWidth()));
  int64_t rowsPerStep = kind.rhsRowsPerStep();
  auto prefetchRows = [&](OpBuilder &b, Value kBegin, int64_t count) {
    if (schedule.gemvPrefetchSteps <= 0)
      return;
    for (int64_t r = 0; r < count * rowsPerStep; ++r) {
      Value row = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, kBegin, constant(b, rowsPerStep)),
          constant(b, schedule.gemvPrefetchSteps * rowsPerStep + r));
      row = arith::MinSIOp::create(b, loc, row, constant(b, rhsRows - 1));
      for (int64_t n = 0; n < columns; n += lineElements)
        memref::PrefetchOp::create(b, loc, rhs, ValueRange{row, constant(b, n)},
                                   /*isWrite=*/false, /*localityHint=*/2,
                                   /*isDataCache=*/true);
    }
  };
  // The `steps` k steps of chunk c, from k0, into P[c].
  auto emitChunk = [&](OpBuilder &b, Value c, Value k0, int64_t steps) {
    Value partial = memref::SubViewOp::create(
        b, loc, partialType, partials,
        ArrayRef<OpFoldResult>{c, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows),
                               b.getIndexAttr(columns)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                               b.getIndexAttr(1)});
    auto emitSteps = [&](OpBuilder &b, Value kBegin, int64_t count) {
      prefetchRows(b, kBegin, count);
      for (auto [n, width] : columnBlocks)
        emitRegisterBlock(b, loc, lhs, rhs, partial, {}, constant(b, 0),
                          constant(b, n), rows, width, kBegin, count, depth,
                          fromZero, nullptr, rows, 1, kind, k0);
    };
    int64_t blocks = steps / blockSteps;
    attn::forEachBlock(b, loc, 0, blocks, blockSteps, /*parallel=*/false,
                       [&](OpBuilder &b, Value s) {
                         emitSteps(b, arith::AddIOp::create(b, loc, k0, s),
                                   blockSteps);
                       });
    if (int64_t rest = steps % blockSteps)
      emitSteps(
          b,
          arith::AddIOp::create(b, loc, k0, constant(b, blocks * blockSteps)),
          rest);
  };
  attn::forEachBlock(
      b, loc, 0, chunks, 1, parallel, [&](OpBuilder &b, Value c) {
        Value k0 = arith::MulIOp::create(b, loc, c, constant(b, chunkSteps));
        if (!leftSteps) {
          emitChunk(b, c, k0, chunkSteps);
          return;
        }
        Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                           constant(b, fullChunks));
        auto ifFull = scf::IfOp::create(b, loc, full, /*withElse=*/true);
        OpBuilder thenBuilder = ifFull.getThenBodyBuilder();
        emitChunk(thenBuilder, c, k0, chunkSteps);
        OpBuilder elseBuilder = ifFull.getElseBodyBuilder();
        emitChunk(elseBuilder, c, k0, leftSteps);
      });
  // C = start + P[0] + P[1] + ..., then the activation.
  int64_t lanes = std::max<int64_t>(1, schedule.vectorLanes);
  auto sumColumns = [&](OpBuilder &b, int64_t m, Value n, int64_t width) {
    auto type = VectorType::get({width}, f32);
    Value row = constant(b, m);
    Value start;
    if (epilogue.bias)
      start =
          vector::LoadOp::create(b, loc, type, epilogue.bias, ValueRange{n});
    else if (epilogue.zeroInit)
      start =
          arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, 0.0f));
    else
      start = vector::LoadOp::create(b, loc, type, out, ValueRange{row, n});
    auto loop = scf::ForOp::create(
        b, loc, constant(b, 0), constant(b, chunks), constant(b, 1),
        ValueRange{start},
        [&](OpBuilder &nb, Location nl, Value c, ValueRange sum) {
          Value part = vector::LoadOp::create(nb, nl, type, partials,
                                              ValueRange{c, row, n});
          scf::YieldOp::create(
              nb, nl, ValueRange{arith::AddFOp::create(nb, nl, sum[0], part)});
        });
    Value sum = loop.getResult(0);
    if (epilogue.activationOutput)
      vector::StoreOp::create(
          b, loc, attn::applyActivation(b, loc, epilogue.activation, sum),
          epilogue.activationOutput, ValueRange{row, n});
    else
      vector::StoreOp::create(b, loc, sum, out, ValueRange{row, n});
  };
  int64_t fullVectors = columns / lanes;
  for (int64_t m = 0; m < rows; ++m) {
    attn::forEachBlock(
        b, loc, 0, fullVectors, lanes, /*parallel=*/false,
        [&](OpBuilder &b, Value n) { sumColumns(b, m, n, lanes); });
    for (auto [offset, width] :
         attn::powerOfTwoPieces(columns - fullVectors * lanes, lanes))
      sumColumns(b, m, constant(b, fullVectors * lanes + offset), width);
  }
  memref::DeallocOp::create(b, loc, partials);
}

/// Replaces a linalg.matmul / linalg.batch_matmul on buffers (default maps,
/// f32), or a bf16 pair GEMM (Bf16PairGemm.h; the schedule's bf16-dot), by
/// register blocks of at most rowTile x columnTile. Shapes are static, so the
/// leftover rows and columns are blocks of static, smaller sizes: no masks, no
/// partial vectors.
LogicalResult lowerToRegisterBlocks(RewriterBase &rewriter, linalg::LinalgOp op,
                                    int64_t rowTile, int64_t columnTile,
                                    int64_t depthTile, bool parallel,
                                    const attn::CpuSchedule &schedule) {
  int64_t packRowBlocks = schedule.gemmPackRowBlocks;
  int64_t prefetchStride = schedule.prefetchStrideFloats;
  if (!op.hasPureBufferSemantics())
    return failure();
  bool batched = isa<linalg::BatchMatmulOp>(op);
  GemmOperandKind kind;
  int64_t batches = 1, rows, columns, depth;
  Value lhs, rhs, out;
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
    std::optional<attn::Bf16PairGemm> pairs = attn::matchBf16PairGemm(generic);
    if (!pairs || pairs->form == attn::Bf16PairForm::Tiles)
      return failure();
    bool slots = pairs->form != attn::Bf16PairForm::Widened;
    kind = {/*pairs=*/true, slots,
            pairs->form == attn::Bf16PairForm::Slots
                ? schedule.bf16Dot
                : attn::CpuSchedule::Bf16Dot::None};
    rows = pairs->rows;
    columns = pairs->columns;
    depth = pairs->pairs;
    out = pairs->out;
    // The pair dimensions back into k: A [M, K], a widened B [K, N].
    rewriter.setInsertionPoint(op);
    lhs = memref::CollapseShapeOp::create(
        rewriter, op.getLoc(), pairs->lhs,
        SmallVector<ReassociationIndices>{{0}, {1, 2}});
    rhs = slots ? pairs->rhs
                : memref::CollapseShapeOp::create(
                      rewriter, op.getLoc(), pairs->rhs,
                      SmallVector<ReassociationIndices>{{0, 1}, {2}})
                      .getResult();
  } else {
    if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
      return failure();
    SmallVector<AffineMap> defaults =
        batched ? linalg::BatchMatmulOp::getDefaultIndexingMaps(op.getContext())
                : linalg::MatmulOp::getDefaultIndexingMaps(op.getContext());
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (op.getIndexingMapsArray() != defaults ||
        llvm::any_of(ranges, ShapedType::isDynamic) ||
        !llvm::all_of(op->getOperandTypes(), [](Type type) {
          return getElementTypeOrSelf(type).isF32();
        }))
      return failure();
    unsigned first = batched ? 1 : 0;
    batches = batched ? ranges[0] : 1;
    rows = ranges[first];
    columns = ranges[first + 1];
    depth = ranges[first + 2];
    lhs = op.getDpsInputs()[0];
    rhs = op.getDpsInputs()[1];
    out = op.getDpsInits()[0];
  }
  // A GEMM of fewer rows than a register block's (a decode step's
  // projections: a row per sequence) takes wider blocks, about as many
  // accumulators as a full block: one row of columnTile columns leaves too
  // few independent FMA (or vdpbf16ps) chains to hide their latency. A
  // power of two, as vectors of other lengths are (see the leftovers).
  if (rows > 0 && rows < rowTile)
    columnTile *= int64_t(1) << llvm::Log2_64(uint64_t(rowTile / rows));
  // Threads only pay off past a few microseconds of work.
  int64_t flops = 2 * rows * columns * depth * batches * (kind.pairs ? 2 : 1);
  parallel = parallel && flops >= schedule.parallelFlops;
  Location loc = op.getLoc();
  // The fill or bias broadcast before it and an activation after it become
  // part of the register blocks (not batched ones).
  attn::GemmEpilogue epilogue;
  if (!batched && depth > 0)
    epilogue = attn::foldGemmEpilogue(rewriter, op);
  rewriter.setInsertionPoint(op);
  if (!batched && rows > 0 && rows < rowTile && depth > 0 &&
      schedule.gemvChunkSteps > 0) {
    emitStreamingGemm(rewriter, loc, lhs, rhs, out, rows, columns, depth,
                      columnTile, epilogue, parallel, schedule, kind);
    if (epilogue.activation)
      rewriter.eraseOp(epilogue.activation);
    rewriter.eraseOp(op);
    return success();
  }

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
    // runs over it. Each C element still sums k in order: same bits. A k
    // step of widened pairs reads two rows of B: half as many steps.
    int64_t steps = kind.rhsRowsPerStep();
    int64_t stepTile = std::max<int64_t>(1, depthTile / steps);
    int64_t fullDepth = depth / stepTile, leftDepth = depth % stepTile;
    Span depthSpans[] = {{0, fullDepth, stepTile},
                         {fullDepth * stepTile, leftDepth ? 1 : 0, leftDepth}};
    // B's slice under a column block is copied to a contiguous buffer
    // when enough row blocks read it to pay for the copy.
    bool packB = packRowBlocks > 0 && rows >= packRowBlocks * rowTile;
    int64_t sliceDepth = std::min(depth, stepTile);
    for (const Span &cs : colSpans) {
      bool splitColumns = innerParallel && cs.count > 1;
      attn::forEachBlock(
          b, loc, cs.begin, cs.count, cs.size, splitColumns,
          [&](OpBuilder &b, Value n) {
            Value packed;
            if (packB && sliceDepth > 0)
              packed = memref::AllocOp::create(
                  b, loc,
                  MemRefType::get({sliceDepth * steps, cs.size},
                                  b.getF32Type()),
                  b.getI64IntegerAttr(64));
            for (const Span &ks : depthSpans)
              attn::forEachBlock(
                  b, loc, ks.begin, ks.count, ks.size,
                  /*parallel=*/false, [&](OpBuilder &b, Value k0) {
                    Value view = packed;
                    if (packed && ks.size != sliceDepth)
                      view = memref::SubViewOp::create(
                          b, loc, packed,
                          ArrayRef<OpFoldResult>{b.getIndexAttr(0),
                                                 b.getIndexAttr(0)},
                          ArrayRef<OpFoldResult>{
                              b.getIndexAttr(ks.size * steps),
                              b.getIndexAttr(cs.size)},
                          ArrayRef<OpFoldResult>{b.getIndexAttr(1),
                                                 b.getIndexAttr(1)});
                    if (view)
                      packSliceOfB(b, loc, rhs, batch,
                                   steps == 1
                                       ? k0
                                       : arith::MulIOp::create(
                                             b, loc, k0,
                                             arith::ConstantIndexOp::create(
                                                 b, loc, steps)),
                                   n, ks.size * steps, cs.size, view);
                    for (const Span &rs : rowSpans)
                      attn::forEachBlock(b, loc, rs.begin, rs.count, rs.size,
                                         innerParallel && !splitColumns,
                                         [&](OpBuilder &b, Value m) {
                                           emitRegisterBlock(
                                               b, loc, lhs, rhs, out, batch, m,
                                               n, rs.size, cs.size, k0, ks.size,
                                               depth, epilogue, view, rows,
                                               prefetchStride, kind);
                                         });
                  });
            if (packed)
              memref::DeallocOp::create(b, loc, packed);
          });
    }
  };
  if (batched)
    attn::forEachBlock(rewriter, loc, 0, batches, 1, parallel,
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
    schedule->overrideParallelWork(parallelWork);
    int64_t rows = rowTile ? rowTile : schedule->gemmRows;
    int64_t columns = columnTile ? columnTile : schedule->gemmColumns;
    int64_t depth = depthTile ? depthTile : schedule->gemmDepth;
    int64_t strip = columnTile ? columnTile : schedule->stripElements;

    // GEMMs first: their epilogues take the fills, bias broadcasts and
    // activations next to them out of the IR.
    SmallVector<linalg::LinalgOp> gemms;
    func.walk([&](linalg::LinalgOp op) {
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
          (generic && attn::matchBf16PairGemm(generic)))
        gemms.push_back(op);
    });
    // Every AMX GEMM of the function under one request for the tile state.
    Value amxGranted;
    for (linalg::LinalgOp op : gemms) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        std::optional<attn::Bf16PairGemm> pairs =
            attn::matchBf16PairGemm(generic);
        if (pairs && pairs->form == attn::Bf16PairForm::Tiles) {
          if (schedule->bf16Amx)
            (void)attn::lowerBf16PairGemmToAmx(
                rewriter, generic, *pairs, parallel, schedule->parallelFlops,
                schedule->amxPanelBytes, amxGranted);
          continue;
        }
      }
      (void)lowerToRegisterBlocks(rewriter, op, rows, columns, depth, parallel,
                                  *schedule);
    }

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
