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
// A GEMM large enough to fill the target's shared-memory tile (GpuTarget.h)
// is a launch of its own instead: each block stages k-slices of A and B in
// workgroup memory, so that every element a block reads from global memory
// is read once per block rather than once per thread that needs it.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreGemm.h"

#include "attn/GPU/Passes.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

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

/// Static sizes of a GEMM: C [(batch,) m, n] += A [(batch,) m, k] B.
struct GemmShape {
  int64_t batch, m, n, k;
};

GemmShape shapeOf(Value a, Value c, bool batched) {
  auto cType = cast<MemRefType>(c.getType());
  int64_t rank = cType.getRank();
  return {batched ? cType.getDimSize(0) : 1, cType.getDimSize(rank - 2),
          cType.getDimSize(rank - 1),
          cast<MemRefType>(a.getType()).getDimSize(rank - 1)};
}

/// C[b] += A[b] B[b] as one launch: a block per `tile.rows` x `tile.cols`
/// tile of C, k walked in slices staged in workgroup memory.
void emitSharedMemoryGemm(OpBuilder &b, Location loc, Value a, Value bm,
                          Value c, bool batched,
                          const attn::GpuGemmTile &tile) {
  GemmShape shape = shapeOf(a, c, batched);
  Type f32 = b.getF32Type();
  MLIRContext *context = b.getContext();
  int64_t tilesM = llvm::divideCeil(shape.m, tile.rows);
  int64_t tilesN = llvm::divideCeil(shape.n, tile.cols);
  int64_t steps = llvm::divideCeil(shape.k, tile.depth);
  int64_t threads = tile.threads();
  int64_t threadsPerRow = tile.cols / tile.threadCols;
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  // A's slice transposed ([k][row]) so that a thread's rows are one vector.
  auto aSliceType =
      MemRefType::get({tile.depth, tile.rows + tile.rowPadding}, f32,
                      MemRefLayoutAttrInterface{}, workgroup);
  auto bSliceType = MemRefType::get({tile.depth, tile.cols}, f32,
                                    MemRefLayoutAttrInterface{}, workgroup);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };

  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(shape.batch * tilesM * tilesN), one, one, index(threads),
      one, one, /*dynamicSharedMemorySize=*/nullptr,
      b.getType<gpu::AsyncTokenType>(), /*asyncDependencies=*/ValueRange{},
      TypeRange{aSliceType, bSliceType});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value aSlice = launch.getWorkgroupAttributions()[0];
  Value bSlice = launch.getWorkgroupAttributions()[1];
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, int64_t y) -> Value {
    return arith::MulIOp::create(b, loc, x, index(y));
  };
  auto div = [&](Value x, int64_t y) -> Value {
    return arith::DivUIOp::create(b, loc, x, index(y));
  };
  auto rem = [&](Value x, int64_t y) -> Value {
    return arith::RemUIOp::create(b, loc, x, index(y));
  };
  /// Both in range, or null when neither check is needed.
  auto both = [&](Value x, int64_t xBound, bool checkX, Value y, int64_t yBound,
                  bool checkY) -> Value {
    return attn::bothBelow(b, loc, x, xBound, checkX, y, yBound, checkY);
  };

  Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
  attn::TileOfC ofC = attn::tileOfC(b, loc, block, tilesM, tilesN, tile.rows,
                                    tile.cols, batched);
  Value row0 = ofC.row0, col0 = ofC.col0;
  auto at = [&](Value i, Value j) { return ofC.at(i, j); };
  // This thread's rows and columns within the tile.
  Value myRow = mul(div(thread, threadsPerRow), tile.threadRows);
  Value myCol = mul(rem(thread, threadsPerRow), tile.threadCols);
  bool ragged = shape.k % tile.depth != 0;
  bool raggedM = shape.m % tile.rows != 0, raggedN = shape.n % tile.cols != 0;

  auto rowType = VectorType::get({tile.threadCols}, f32);
  auto colType = VectorType::get({tile.threadRows}, f32);
  Value zeros = arith::ConstantOp::create(
      b, loc, rowType, DenseElementsAttr::get(rowType, 0.0f));
  SmallVector<Value> init(tile.threadRows, zeros);
  auto kLoop = scf::ForOp::create(
      b, loc, index(0), index(steps), one, init,
      [&](OpBuilder &nb, Location, Value step, ValueRange acc) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value k0 = mul(step, tile.depth);
        // The height x width window of `source` at (i0, j0) into `slice`
        // ([j][i] when transposed), consecutive threads along a row.
        auto stage = [&](Value source, Value slice, Value i0, Value j0,
                         int64_t height, int64_t width, int64_t iBound,
                         bool checkI, int64_t jBound, bool checkJ,
                         bool transposed) {
          for (int64_t e = 0; e < height * width / threads; ++e) {
            Value linear = add(thread, index(e * threads));
            Value i = div(linear, width), j = rem(linear, width);
            Value gi = add(i0, i), gj = add(j0, j);
            Value v =
                attn::loadOrZero(b, loc, source, at(gi, gj),
                                 both(gi, iBound, checkI, gj, jBound, checkJ));
            SmallVector<Value, 2> into = {i, j};
            if (transposed)
              std::swap(into[0], into[1]);
            memref::StoreOp::create(b, loc, v, slice, into);
          }
        };
        // A's rows x depth slice (read along k), B's depth x cols slice.
        stage(a, aSlice, row0, k0, tile.rows, tile.depth, shape.m, raggedM,
              shape.k, ragged, /*transposed=*/true);
        stage(bm, bSlice, k0, col0, tile.depth, tile.cols, shape.k, ragged,
              shape.n, raggedN, /*transposed=*/false);
        gpu::BarrierOp::create(b, loc);
        auto products = scf::ForOp::create(
            b, loc, index(0), index(tile.depth), one, acc,
            [&](OpBuilder &ib, Location il, Value kk, ValueRange sums) {
              Value as = vector::LoadOp::create(ib, il, colType, aSlice,
                                                ValueRange{kk, myRow});
              Value bs = vector::LoadOp::create(ib, il, rowType, bSlice,
                                                ValueRange{kk, myCol});
              SmallVector<Value> next;
              for (int64_t r = 0; r < tile.threadRows; ++r) {
                Value ar = vector::ExtractOp::create(ib, il, as, r);
                Value splat = vector::BroadcastOp::create(ib, il, rowType, ar);
                next.push_back(
                    vector::FMAOp::create(ib, il, splat, bs, sums[r]));
              }
              scf::YieldOp::create(ib, il, next);
            });
        // The next step overwrites the slices only when every thread is done.
        gpu::BarrierOp::create(b, loc);
        scf::YieldOp::create(b, loc, products.getResults());
      });

  for (int64_t r = 0; r < tile.threadRows; ++r) {
    Value gr = add(add(row0, myRow), index(r));
    for (int64_t col = 0; col < tile.threadCols; ++col) {
      Value gc = add(add(col0, myCol), index(col));
      Value inRange = both(gr, shape.m, raggedM, gc, shape.n, raggedN);
      OpBuilder::InsertionGuard store(b);
      if (inRange) {
        auto branch = scf::IfOp::create(b, loc, inRange, false);
        b.setInsertionPointToStart(branch.thenBlock());
      }
      Value sum = vector::ExtractOp::create(b, loc, kLoop.getResult(r), col);
      Value old = memref::LoadOp::create(b, loc, c, at(gr, gc));
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, sum),
                              c, at(gr, gc));
    }
  }
  gpu::TerminatorOp::create(b, loc);
}

bool hasStaticShape(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape();
}

struct AttnGpuTileMatmulPass
    : mlir::attn::impl::AttnGpuTileMatmulBase<AttnGpuTileMatmulPass> {
  using AttnGpuTileMatmulBase::AttnGpuTileMatmulBase;

  void runOnOperation() override {
    attn::GpuTargetDescription target = attn::describeGpu(chip);
    attn::GpuGemmTile tile = attn::gemmTile(target);
    func::FuncOp func = getOperation();
    attn::GpuTensorCoreTile coreTile = attn::tensorCoreTile(target);
    enum class Kernel { Blocked, SharedMemory, TensorCores };
    struct Gemm {
      linalg::LinalgOp op;
      Kernel kernel;
      /// Matched before any GEMM is rewritten: a launch in place of an
      /// earlier one hides what it writes.
      std::optional<attn::NarrowGemmOperands> narrow;
    };
    SmallVector<Gemm> gemms;
    func.walk([&](linalg::LinalgOp op) {
      bool plain = (isa<linalg::MatmulOp>(op) &&
                    !cast<linalg::MatmulOp>(op).hasUserDefinedMaps()) ||
                   (isa<linalg::BatchMatmulOp>(op) &&
                    !cast<linalg::BatchMatmulOp>(op).hasUserDefinedMaps());
      if (!plain || !op.hasPureBufferSemantics() ||
          !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32() ||
          !hasStaticShape(op.getDpsInputs()[0]) ||
          !hasStaticShape(op.getDpsInputs()[1]) ||
          !hasStaticShape(op.getDpsInits()[0]))
        return;
      GemmShape shape = shapeOf(op.getDpsInputs()[0], op.getDpsInits()[0],
                                isa<linalg::BatchMatmulOp>(op));
      // A launch of its own needs to be host code: at the function's top.
      bool topLevel = op->getParentOp() == func.getOperation();
      bool shared =
          topLevel && attn::usesSharedMemoryGemm(target, shape.m, shape.n);
      // Narrow operands go to the tensor cores at any size: the small
      // GEMMs of the goldens run the code the large ones do.
      std::optional<attn::NarrowGemmOperands> narrow;
      if (topLevel && attn::hasTensorCoreMma(target)) {
        narrow = attn::matchNarrowOperands(op);
        // --gpu-math=tf32: the other f32 GEMMs too, rounded to tf32.
        if (!narrow && tf32)
          narrow = attn::NarrowGemmOperands{op.getDpsInputs()[0],
                                            op.getDpsInputs()[1],
                                            nullptr,
                                            nullptr,
                                            /*bTransposed=*/false,
                                            Float32Type::get(op.getContext())};
      }
      if (narrow)
        gemms.push_back({op, Kernel::TensorCores, narrow});
      else if (shared)
        gemms.push_back({op, Kernel::SharedMemory, std::nullopt});
      // The register blocks load rows of B and C as vectors; anything else
      // keeps the one-output-per-thread loops.
      else if (hasUnitInnerStride(op.getDpsInputs()[1]) &&
               hasUnitInnerStride(op.getDpsInits()[0]))
        gemms.push_back({op, Kernel::Blocked, std::nullopt});
    });
    for (auto &[op, kernel, narrow] : gemms) {
      OpBuilder b(op);
      bool batched = isa<linalg::BatchMatmulOp>(op);
      Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
            c = op.getDpsInits()[0];
      switch (kernel) {
      case Kernel::TensorCores:
        attn::emitTensorCoreGemm(b, op.getLoc(), *narrow, c, batched, coreTile);
        break;
      case Kernel::SharedMemory:
        emitSharedMemoryGemm(b, op.getLoc(), a, bm, c, batched, tile);
        break;
      case Kernel::Blocked:
        emitBlockedGemm(b, op.getLoc(), a, bm, c, batched);
        break;
      }
      op->erase();
      // The f32 copies of narrow operands, when only the GEMM read them.
      if (kernel == Kernel::TensorCores) {
        attn::eraseUnreadWidening(a);
        attn::eraseUnreadWidening(bm);
      }
    }
  }
};

} // namespace
