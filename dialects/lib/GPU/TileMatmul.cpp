//===- TileMatmul.cpp - GEMMs as register blocks, one per GPU thread ------===//
//
// A GEMM mapped one output per thread loads one B element per FMA. Here
// each thread computes an R x C block of the output instead (R, C in
// {4, 2, 1}, dividing M and N): per step of k it loads C contiguous
// elements of B's row k (one vector load), R elements of A's column k, and
// does R x C FMAs into accumulators held in registers. Neighbouring threads
// take neighbouring column blocks of the same rows: their B loads are one
// contiguous run and their A loads the same addresses.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUTILEMATMUL
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The largest of {4, 2, 1} that divides `size`.
int64_t blockOf(int64_t size) {
  for (int64_t block : {4, 2})
    if (size % block == 0)
      return block;
  return 1;
}

/// A static memref whose rows are contiguous (vector loads of a row).
bool hasUnitInnerStride(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// C[b] += A[b] B[b] for memrefs A [(B,) M, K], B [(B,) K, N], C [(B,) M, N]
/// (`batched`: the leading batch dimension).
void emitBlockedGemm(OpBuilder &b, Location loc, Value a, Value bm, Value c,
                     bool batched) {
  auto cType = cast<MemRefType>(c.getType());
  int64_t rank = cType.getRank();
  int64_t batch = batched ? cType.getDimSize(0) : 1;
  int64_t m = cType.getDimSize(rank - 2), n = cType.getDimSize(rank - 1);
  int64_t k = cast<MemRefType>(a.getType()).getDimSize(rank - 1);
  int64_t rows = blockOf(m), cols = blockOf(n);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto vectorType = VectorType::get({cols}, cType.getElementType());

  SmallVector<Value> lbs = {index(0), index(0)},
                     ubs = {index(m / rows), index(n / cols)},
                     steps = {index(1), index(1)};
  if (batched) {
    lbs.insert(lbs.begin(), index(0));
    ubs.insert(ubs.begin(), index(batch));
    steps.insert(steps.begin(), index(1));
  }
  auto loop = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> ivs(loop.getInductionVars());
  Value row0 = arith::MulIOp::create(b, loc, ivs[batched ? 1 : 0], index(rows));
  Value col0 = arith::MulIOp::create(b, loc, ivs[batched ? 2 : 1], index(cols));
  auto at = [&](Value i, Value j) {
    SmallVector<Value> indices = {i, j};
    if (batched)
      indices.insert(indices.begin(), ivs[0]);
    return indices;
  };
  SmallVector<Value> rowIndex;
  for (int64_t r = 0; r < rows; ++r)
    rowIndex.push_back(arith::AddIOp::create(b, loc, row0, index(r)));

  SmallVector<Value> init;
  for (Value i : rowIndex)
    init.push_back(vector::LoadOp::create(b, loc, vectorType, c, at(i, col0)));
  auto kLoop = scf::ForOp::create(
      b, loc, index(0), index(k), index(1), init,
      [&](OpBuilder &nb, Location nl, Value kk, ValueRange acc) {
        Value bRow =
            vector::LoadOp::create(nb, nl, vectorType, bm, at(kk, col0));
        SmallVector<Value> next;
        for (auto [r, i] : llvm::enumerate(rowIndex)) {
          Value aValue = memref::LoadOp::create(nb, nl, a, at(i, kk));
          Value splat = vector::BroadcastOp::create(nb, nl, vectorType, aValue);
          next.push_back(vector::FMAOp::create(nb, nl, splat, bRow, acc[r]));
        }
        scf::YieldOp::create(nb, nl, next);
      });
  for (auto [r, i] : llvm::enumerate(rowIndex))
    vector::StoreOp::create(b, loc, kLoop.getResult(r), c, at(i, col0));
}

struct AttnGpuTileMatmulPass
    : mlir::attn::impl::AttnGpuTileMatmulBase<AttnGpuTileMatmulPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> gemms;
    getOperation().walk([&](linalg::LinalgOp op) {
      bool plain = (isa<linalg::MatmulOp>(op) &&
                    !cast<linalg::MatmulOp>(op).hasUserDefinedMaps()) ||
                   (isa<linalg::BatchMatmulOp>(op) &&
                    !cast<linalg::BatchMatmulOp>(op).hasUserDefinedMaps());
      // f32 on buffers whose rows are contiguous; anything else keeps
      // the one-output-per-thread loops.
      if (plain && op.hasPureBufferSemantics() &&
          getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32() &&
          hasUnitInnerStride(op.getDpsInputs()[1]) &&
          hasUnitInnerStride(op.getDpsInits()[0]) &&
          isa<MemRefType>(op.getDpsInputs()[0].getType()) &&
          cast<MemRefType>(op.getDpsInputs()[0].getType()).hasStaticShape())
        gemms.push_back(op);
    });
    for (linalg::LinalgOp op : gemms) {
      OpBuilder b(op);
      emitBlockedGemm(b, op.getLoc(), op.getDpsInputs()[0],
                      op.getDpsInputs()[1], op.getDpsInits()[0],
                      isa<linalg::BatchMatmulOp>(op));
      op->erase();
    }
  }
};

} // namespace
