//===- AmxGemm.cpp - bf16 pair GEMMs on AMX tiles -------------------------===//

#include "AmxGemm.h"
#include "BlockLoops.h"

#include "attn/Target/KernelStatus.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Asks Linux for AMX's tile state (arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA), without libc) at the start of `func`; returns
/// whether it was granted. Without it the first tile instruction faults.
Value requestAmxTileState(OpBuilder &b, func::FuncOp func) {
  Location loc = func.getLoc();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, value);
  };
  constexpr int64_t kSysArchPrctl = 158, kArchReqXcompPerm = 0x1023,
                    kXfeatureXtiledata = 18;
  auto syscall = LLVM::InlineAsmOp::create(
      b, loc, i64,
      ValueRange{constant(kSysArchPrctl), constant(kArchReqXcompPerm),
                 constant(kXfeatureXtiledata)},
      "syscall", "={rax},{rax},{rdi},{rsi},~{rcx},~{r11},~{memory}",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, /*asm_dialect=*/nullptr,
      /*operand_attrs=*/nullptr);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               syscall.getResult(0), constant(0));
}

/// Makes `func` return ATTNC_STATUS_UNSUPPORTED_CPU where `granted` is
/// false (its i32 status, the one result of a kernel function here).
void reportAmxRefusal(OpBuilder &b, func::FuncOp func, Value granted) {
  func.walk([&](func::ReturnOp ret) {
    if (ret.getNumOperands() != 1 || !ret.getOperand(0).getType().isInteger(32))
      return;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ret);
    Value refused = arith::ConstantIntOp::create(
        b, ret.getLoc(), b.getI32Type(), ATTNC_STATUS_UNSUPPORTED_CPU);
    ret->setOperand(0, arith::SelectOp::create(b, ret.getLoc(), granted,
                                               ret.getOperand(0), refused));
  });
}

/// Copies A [M, K] bf16 into AMX tiles, [M/16, K/32, 16, 32]: each tile a
/// KiB of consecutive memory. Read in place, a tile's 16 rows are K * 2
/// bytes apart, and for K a multiple of 1024 they all fall into one L1 set.
Value packA(OpBuilder &b, Location loc, Value lhs, int64_t rows, int64_t depth,
            bool parallel) {
  Type bf16 = b.getBF16Type();
  auto packedType = MemRefType::get({rows / 16, depth / 32, 16, 32}, bf16);
  Value packed =
      memref::AllocOp::create(b, loc, packedType, b.getI64IntegerAttr(64));
  auto vectorType = VectorType::get({32}, bf16);
  forEachBlock(b, loc, 0, rows, 1, parallel, [&](OpBuilder &b, Value row) {
    Value c16 = arith::ConstantIndexOp::create(b, loc, 16);
    Value tileRow = arith::DivUIOp::create(b, loc, row, c16);
    Value inTile = arith::RemUIOp::create(b, loc, row, c16);
    forEachBlock(
        b, loc, 0, depth / 32, 1, /*parallel=*/false,
        [&](OpBuilder &b, Value step) {
          Value column = arith::MulIOp::create(
              b, loc, step, arith::ConstantIndexOp::create(b, loc, 32));
          Value v = vector::LoadOp::create(b, loc, vectorType, lhs,
                                           ValueRange{row, column});
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          vector::StoreOp::create(b, loc, v, packed,
                                  ValueRange{tileRow, step, inTile, zero});
        });
  });
  return packed;
}

/// One block of C at (m, n) on AMX tiles, each 16 rows of 64 bytes:
/// `rowTiles` tiles of 16 rows down by `columnTiles` of 16 columns across,
/// loaded, given `steps` steps of 16 pairs of k from pair `firstPair`
/// (unrolled), and stored. `lhs` is A in tiles, [M/16, K/32, 16, 32] bf16
/// (packA), `tiles` B's [N/16, K/2, 16] slots, `out` C [M, N] f32.
void emitAmxBlock(OpBuilder &b, Location loc, Value lhs, Value tiles, Value out,
                  Value m, Value n, int64_t rowTiles, int64_t columnTiles,
                  Value firstPair, int64_t steps, bool fromZero) {
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto accType = amx::TileType::get({16, 16}, f32);
  auto pairsType = amx::TileType::get({16, 32}, bf16);
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  auto plus = [&](Value base, int64_t offset) -> Value {
    return offset == 0
               ? base
               : arith::AddIOp::create(b, loc, base, index(offset)).getResult();
  };
  Value tileColumn = arith::DivUIOp::create(b, loc, n, index(16));
  Value tileRow = arith::DivUIOp::create(b, loc, m, index(16));
  SmallVector<Value> acc;
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < columnTiles; ++j)
      acc.push_back(fromZero
                        ? amx::TileZeroOp::create(b, loc, accType).getResult()
                        : amx::TileLoadOp::create(
                              b, loc, accType, out,
                              ValueRange{plus(m, 16 * i), plus(n, 16 * j)})
                              .getResult());
  for (int64_t s = 0; s < steps; ++s) {
    Value pair = plus(firstPair, 16 * s);
    Value step = arith::DivUIOp::create(b, loc, pair, index(16));
    SmallVector<Value> a, bTiles;
    for (int64_t i = 0; i < rowTiles; ++i)
      a.push_back(amx::TileLoadOp::create(
          b, loc, pairsType, lhs,
          ValueRange{plus(tileRow, i), step, index(0), index(0)}));
    for (int64_t j = 0; j < columnTiles; ++j)
      bTiles.push_back(amx::TileLoadOp::create(
          b, loc, pairsType, tiles,
          ValueRange{plus(tileColumn, j), pair, index(0)}));
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < columnTiles; ++j) {
        Value &c = acc[i * columnTiles + j];
        c = amx::TileMulFOp::create(b, loc, accType, a[i], bTiles[j], c);
      }
  }
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < columnTiles; ++j)
      amx::TileStoreOp::create(b, loc, out,
                               ValueRange{plus(m, 16 * i), plus(n, 16 * j)},
                               acc[i * columnTiles + j]);
}

/// The linalg.fill of +0.0 that initializes `out` before `op` with nothing
/// between them that writes memory or uses `out`; null if there is none.
linalg::FillOp zeroFillBefore(Operation *op, Value out) {
  for (Operation *before = op->getPrevNode(); before;
       before = before->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(before)) {
      if (fill.getOutputs().front() != out)
        return nullptr;
      auto value = fill.getInputs().front().getDefiningOp<arith::ConstantOp>();
      auto zero = value ? dyn_cast<FloatAttr>(value.getValue()) : FloatAttr();
      return zero && zero.getValue().isPosZero() ? fill : nullptr;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(before);
    if (!effects || effects.hasEffect<MemoryEffects::Write>() ||
        llvm::is_contained(before->getOperands(), out))
      return nullptr;
  }
  return nullptr;
}

} // namespace

void mlir::attn::requestAmxTileStateOnce(OpBuilder &b, func::FuncOp func,
                                         Value &granted) {
  if (granted)
    return;
  granted = requestAmxTileState(b, func);
  reportAmxRefusal(b, func, granted);
}

LogicalResult mlir::attn::lowerBf16PairGemmToAmx(
    RewriterBase &rewriter, linalg::GenericOp op, const Bf16PairGemm &gemm,
    bool parallel, int64_t parallelFlops, int64_t panelBytes, Value &granted) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value lhs = memref::CollapseShapeOp::create(
      rewriter, loc, gemm.lhs, SmallVector<ReassociationIndices>{{0}, {1, 2}});
  auto func = op->getParentOfType<func::FuncOp>();
  requestAmxTileStateOnce(rewriter, func, granted);
  auto ifGranted = scf::IfOp::create(rewriter, loc, granted,
                                     /*withElseRegion=*/false);
  OpBuilder b = ifGranted.getThenBodyBuilder();
  parallel =
      parallel && 4 * gemm.rows * gemm.columns * gemm.pairs >= parallelFlops;
  Value packedA = packA(b, loc, lhs, gemm.rows, 2 * gemm.pairs, parallel);
  // k in slices of 256 steps (8192 k): C's tiles are stored and loaded
  // again between slices, which costs more than B's slice streaming from L2
  // (docs/performance.md), so slices are as long as the code allows.
  int64_t steps = gemm.pairs / 16;
  int64_t stepsPerSlice = std::min<int64_t>(256, steps);
  int64_t fullSlices = steps / stepsPerSlice;
  // From C = 0, the first slice's tiles start at zero, not loaded from a C
  // just filled with zeros (a tile load waits for the fill's stores; the
  // fill is a pass over C of its own).
  bool fromZero = false;
  if (linalg::FillOp fill = zeroFillBefore(ifGranted, gemm.out)) {
    rewriter.eraseOp(fill);
    fromZero = true;
  }
  // Rows of A in chunks that stay in L2 while every column block reads
  // them (A was read from L3 once per column block): a chunk's tiles of A
  // take at most `panelBytes`.
  int64_t chunkRows = std::max<int64_t>(
      32, std::min<int64_t>(gemm.rows / 32 * 32,
                            panelBytes / (4 * gemm.pairs) / 32 * 32));
  auto emitChunk = [&](OpBuilder &b, Value m0, int64_t rows) {
    auto emitColumns = [&](int64_t begin, int64_t count, int64_t columnTiles) {
      forEachBlock(b, loc, begin, count, 16 * columnTiles,
                   parallel && count > 1, [&](OpBuilder &b, Value n) {
                     auto emitSlice = [&](OpBuilder &b, Value firstPair,
                                          int64_t sliceSteps, bool zero) {
                       auto emitRows = [&](int64_t begin, int64_t count,
                                           int64_t rowTiles) {
                         forEachBlock(
                             b, loc, begin, count, 32, /*parallel=*/false,
                             [&](OpBuilder &b, Value m) {
                               emitAmxBlock(
                                   b, loc, packedA, gemm.rhs, gemm.out,
                                   arith::AddIOp::create(b, loc, m0, m), n,
                                   rowTiles, columnTiles, firstPair, sliceSteps,
                                   zero);
                             });
                       };
                       if (rows >= 32)
                         emitRows(0, rows / 32, 2);
                       if (rows % 32 != 0)
                         emitRows(rows / 32 * 32, 1, 1);
                     };
                     emitSlice(b, arith::ConstantIndexOp::create(b, loc, 0),
                               stepsPerSlice, fromZero);
                     if (fullSlices > 1)
                       forEachBlock(b, loc, 16 * stepsPerSlice, fullSlices - 1,
                                    16 * stepsPerSlice, /*parallel=*/false,
                                    [&](OpBuilder &b, Value first) {
                                      emitSlice(b, first, stepsPerSlice, false);
                                    });
                     if (int64_t rest = steps - fullSlices * stepsPerSlice)
                       emitSlice(b,
                                 arith::ConstantIndexOp::create(
                                     b, loc, 16 * stepsPerSlice * fullSlices),
                                 rest, false);
                   });
    };
    emitColumns(0, gemm.columns / 32, 2);
    if (gemm.columns % 32 != 0)
      emitColumns(gemm.columns / 32 * 32, 1, 1);
  };
  int64_t fullChunks = gemm.rows / chunkRows;
  forEachBlock(b, loc, 0, fullChunks, chunkRows, /*parallel=*/false,
               [&](OpBuilder &b, Value m0) { emitChunk(b, m0, chunkRows); });
  if (int64_t rest = gemm.rows - fullChunks * chunkRows)
    emitChunk(b, arith::ConstantIndexOp::create(b, loc, fullChunks * chunkRows),
              rest);
  memref::DeallocOp::create(b, loc, packedA);
  rewriter.eraseOp(op);
  return success();
}
