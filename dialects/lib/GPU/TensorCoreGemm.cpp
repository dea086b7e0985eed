//===- TensorCoreGemm.cpp - GEMMs of bf16/f16 operands on mma.sync --------===//
//
// One launch per GEMM: a block per tile of C, its warps each a part of the
// tile as m16n8k16 mma tiles. Per k slice the block's threads copy A's and
// B's slices (bf16/f16, k innermost) into shared memory, `gpu.barrier`,
// each warp loads its fragments from there (a register's two elements are
// neighbours in k: one 32-bit load) and runs its mma tiles, `gpu.barrier`
// again. Elements past M, N or K load as 0 and are not stored. With
// --gpu-math=tf32, f32 GEMMs take the same launch with m16n8k8 tf32 tiles
// (one element a register), their operands rounded to tf32 as staged.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreGemm.h"

#include "attn/GPU/MmaFragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

bool isReshape(Operation *op) {
  return isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(op);
}

/// The buffer `value` is a reshape of (or `value`).
Value reshapedBuffer(Value value) {
  while (isReshape(value.getDefiningOp()))
    value = value.getDefiningOp()->getOperand(0);
  return value;
}

/// The buffer `value` is a view of, through any view op: what it aliases.
Value aliasedBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// What last wrote `buffer` before `at` (in `at`'s block): a linalg op
/// with `buffer` or a reshape of it as its init; `unknown` when an op that
/// is not one may have (a launch, a call, a write into a part of it).
struct LastWrite {
  linalg::LinalgOp writer;
  bool unknown = false;
};

LastWrite lastWriteBefore(Value buffer, Operation *at) {
  Value aliased = aliasedBuffer(buffer);
  auto aliases = [&](Value value) { return aliasedBuffer(value) == aliased; };
  for (Operation *op = at->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      for (Value init : linalgOp.getDpsInits())
        if (aliases(init)) {
          if (reshapedBuffer(init) != buffer || linalgOp.getNumDpsInits() != 1)
            return {nullptr, true};
          return {linalgOp};
        }
      continue;
    }
    if (isMemoryEffectFree(op) || isa<memref::AllocOp>(op))
      continue;
    bool names = false;
    op->walk([&](Operation *nested) {
      names = names || llvm::any_of(nested->getOperands(), aliases);
    });
    if (names)
      return {nullptr, true};
  }
  return {};
}

/// The last two dimensions swapped, the others in place.
bool swapsLastTwo(ArrayRef<int64_t> permutation) {
  int64_t rank = permutation.size();
  for (int64_t i = 0; i < rank; ++i)
    if (permutation[i] !=
        (i < rank - 2 ? i : (i == rank - 2 ? rank - 1 : rank - 2)))
      return false;
  return rank >= 2;
}

/// The bf16/f16 type of which each f32 element of an operand is a value,
/// and, where the operand is a plain widening of a narrow buffer that
/// nothing writes before the GEMM (an input or param), that buffer
/// (`transposed`: its last two dimensions swapped).
struct Exactness {
  Type type;
  Value narrow;
  bool transposed = false;
};

/// The exactness of `operand` (f32) where `at` reads it: its buffer last
/// written by a generic that yields a widened bf16 (f16) value, or by a
/// transpose of such a buffer.
std::optional<Exactness> exactnessOf(Value operand, Operation *at) {
  Value buffer = reshapedBuffer(operand);
  LastWrite last = lastWriteBefore(buffer, at);
  if (!last.writer)
    return std::nullopt;
  Operation *writer = last.writer.getOperation();
  if (auto transpose = dyn_cast<linalg::TransposeOp>(writer)) {
    std::optional<Exactness> input =
        exactnessOf(transpose.getInput(), transpose);
    if (!input)
      return std::nullopt;
    Exactness exact{input->type, nullptr};
    if (input->narrow && !input->transposed && operand == buffer &&
        transpose.getInit() == buffer &&
        swapsLastTwo(transpose.getPermutation())) {
      exact.narrow = input->narrow;
      exact.transposed = true;
    }
    return exact;
  }
  auto generic = dyn_cast<linalg::GenericOp>(writer);
  if (!generic)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto extend = cast<linalg::YieldOp>(body.getTerminator())
                    .getOperand(0)
                    .getDefiningOp<arith::ExtFOp>();
  if (!extend)
    return std::nullopt;
  Type type = extend.getIn().getType();
  if (!type.isBF16() && !type.isF16())
    return std::nullopt;
  Exactness exact{type, nullptr};
  // A plain widening: read its source instead, if nothing has written it.
  bool plain = generic.getNumDpsInputs() == 1 &&
               body.getOperations().size() == 2 &&
               extend.getIn() == body.getArgument(0) &&
               generic.getDpsInits()[0] == buffer &&
               generic.getNumParallelLoops() == generic.getNumLoops() &&
               llvm::all_of(generic.getIndexingMapsArray(),
                            [](AffineMap map) { return map.isIdentity(); });
  Value source = plain ? generic.getDpsInputs()[0] : nullptr;
  if (source && cast<MemRefType>(source.getType()).hasStaticShape()) {
    LastWrite sourceWrite = lastWriteBefore(reshapedBuffer(source), at);
    if (!sourceWrite.writer && !sourceWrite.unknown)
      exact.narrow = source;
  }
  return exact;
}

/// `narrow` reshaped as `operand` reshapes the buffer it views, built at
/// `b`.
Value reshapedAs(Value operand, Value narrow, OpBuilder &b) {
  Operation *def = operand.getDefiningOp();
  if (!isReshape(def))
    return narrow;
  Value source = reshapedAs(def->getOperand(0), narrow, b);
  auto type = cast<MemRefType>(operand.getType());
  auto narrowType =
      MemRefType::get(type.getShape(), getElementTypeOrSelf(narrow.getType()));
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def))
    return memref::CollapseShapeOp::create(b, def->getLoc(), narrowType, source,
                                           collapse.getReassociationIndices());
  auto expand = cast<memref::ExpandShapeOp>(def);
  return memref::ExpandShapeOp::create(b, def->getLoc(), narrowType, source,
                                       expand.getReassociationIndices());
}

/// The op that writes `buffer` (a memref.alloc) as its one DPS init, when
/// every other use of it (through reshapes) only reads it or frees it.
Operation *soleWriterOf(Value buffer) {
  if (!buffer.getDefiningOp<memref::AllocOp>())
    return nullptr;
  Operation *writer = nullptr;
  SmallVector<Value> views = {buffer};
  while (!views.empty()) {
    Value view = views.pop_back_val();
    for (Operation *user : view.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (isReshape(user)) {
        views.push_back(user->getResult(0));
        continue;
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      if (!linalgOp)
        return nullptr;
      if (!llvm::is_contained(linalgOp.getDpsInits(), view))
        continue;
      if (writer || view != buffer)
        return nullptr;
      writer = user;
    }
  }
  return writer;
}

} // namespace

Value mlir::attn::roundedToTf32(OpBuilder &b, Location loc, Value x) {
  Type i32 = b.getI32Type();
  auto constant = [&](uint32_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, int64_t(v));
  };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  // Half of the dropped part added to the magnitude, then dropped: to
  // nearest, ties away from zero (cvt.rna.tf32.f32); inf stays inf.
  Value rounded = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, bits, constant(0x1000)),
      constant(0xFFFFE000u));
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(
      b, loc, isNan, x, arith::BitcastOp::create(b, loc, x.getType(), rounded));
}

std::optional<NarrowGemmOperands>
mlir::attn::matchNarrowOperands(linalg::LinalgOp gemm) {
  NarrowGemmOperands narrow;
  narrow.a = gemm.getDpsInputs()[0];
  narrow.b = gemm.getDpsInputs()[1];
  std::optional<Exactness> exactA = exactnessOf(narrow.a, gemm);
  std::optional<Exactness> exactB = exactnessOf(narrow.b, gemm);
  if (!exactA || !exactB || exactA->type != exactB->type)
    return std::nullopt;
  narrow.element = exactA->type;
  if (!exactA->transposed)
    narrow.narrowA = exactA->narrow;
  narrow.narrowB = exactB->narrow;
  narrow.bTransposed = exactB->narrow && exactB->transposed;
  return narrow;
}

void mlir::attn::eraseUnreadWidening(Value f32Buffer) {
  if (Operation *def = f32Buffer.getDefiningOp(); isReshape(def)) {
    if (!f32Buffer.use_empty())
      return;
    Value source = def->getOperand(0);
    def->erase();
    return eraseUnreadWidening(source);
  }
  Operation *writer = soleWriterOf(f32Buffer);
  if (!writer)
    return;
  bool read = llvm::any_of(f32Buffer.getUsers(), [&](Operation *user) {
    return user != writer && !isa<memref::DeallocOp>(user);
  });
  if (read)
    return;
  Value source = cast<linalg::LinalgOp>(writer).getDpsInputs()[0];
  for (Operation *user : llvm::make_early_inc_range(f32Buffer.getUsers()))
    user->erase();
  f32Buffer.getDefiningOp()->erase();
  // A transpose's input may be a widening read by nothing else now.
  if (getElementTypeOrSelf(source.getType()).isF32())
    eraseUnreadWidening(source);
}

Value mlir::attn::loadOrZero(OpBuilder &b, Location loc, Value memref,
                             ArrayRef<Value> indices, Value inRange) {
  if (!inRange)
    return memref::LoadOp::create(b, loc, memref, indices);
  Type element = getElementTypeOrSelf(memref.getType());
  auto branch = scf::IfOp::create(
      b, loc, inRange,
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(
            nb, nl,
            ValueRange{memref::LoadOp::create(nb, nl, memref, indices)});
      },
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(
            nb, nl,
            ValueRange{arith::ConstantOp::create(
                nb, nl, cast<TypedAttr>(nb.getZeroAttr(element)))});
      });
  return branch.getResult(0);
}

SmallVector<Value> mlir::attn::TileOfC::at(Value i, Value j) const {
  SmallVector<Value> indices = {i, j};
  if (batched)
    indices.insert(indices.begin(), entry);
  return indices;
}

TileOfC mlir::attn::tileOfC(OpBuilder &b, Location loc, Value block,
                            int64_t tilesM, int64_t tilesN, int64_t rows,
                            int64_t cols, bool batched) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value rest = arith::DivUIOp::create(b, loc, block, index(tilesN));
  Value rowTile = arith::RemUIOp::create(b, loc, rest, index(tilesM));
  Value colTile = arith::RemUIOp::create(b, loc, block, index(tilesN));
  return {arith::MulIOp::create(b, loc, rowTile, index(rows)),
          arith::MulIOp::create(b, loc, colTile, index(cols)),
          arith::DivUIOp::create(b, loc, rest, index(tilesM)), batched};
}

Value mlir::attn::bothBelow(OpBuilder &b, Location loc, Value x, int64_t xBound,
                            bool checkX, Value y, int64_t yBound, bool checkY) {
  auto below = [&](Value v, int64_t bound) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, v,
                                 arith::ConstantIndexOp::create(b, loc, bound));
  };
  Value result;
  if (checkX)
    result = below(x, xBound);
  if (checkY) {
    Value inY = below(y, yBound);
    result = result ? arith::AndIOp::create(b, loc, result, inY) : inY;
  }
  return result;
}

void mlir::attn::emitTensorCoreGemm(OpBuilder &b, Location loc,
                                    const NarrowGemmOperands &operands, Value c,
                                    bool batched,
                                    const GpuTensorCoreTile &tile) {
  auto cType = cast<MemRefType>(c.getType());
  int64_t rank = cType.getRank();
  int64_t batch = batched ? cType.getDimSize(0) : 1;
  int64_t m = cType.getDimSize(rank - 2), n = cType.getDimSize(rank - 1);
  int64_t k = cast<MemRefType>(operands.a.getType()).getDimSize(rank - 1);
  // The narrow buffers where there are, shaped as the operands.
  Value aSource = operands.narrowA ? reshapedAs(operands.a, operands.narrowA, b)
                                   : operands.a;
  Value bSource = operands.narrowB && !operands.bTransposed
                      ? reshapedAs(operands.b, operands.narrowB, b)
                      : (operands.narrowB ? operands.narrowB : operands.b);
  Type element = operands.element;
  // bf16/f16: m16n8k16, two elements a register; f32: m16n8k8 in tf32.
  bool tf32 = element.isF32();
  int64_t perRegister = tf32 ? 1 : 2;
  int64_t mmaDepth = mma::depthOf(perRegister);
  int64_t tilesM = llvm::divideCeil(m, tile.rows);
  int64_t tilesN = llvm::divideCeil(n, tile.cols);
  int64_t steps = llvm::divideCeil(k, tile.depth);
  int64_t warpSize = 32;
  int64_t threads = tile.warps() * warpSize;
  int64_t warpsAcross = tile.cols / tile.warpCols;
  int64_t mmaRows = tile.warpRows / mma::kRows;
  int64_t mmaCols = tile.warpCols / mma::kColumns;
  Type f32 = b.getF32Type();
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  int64_t stride =
      tile.depth + tile.paddingBytes / (element.getIntOrFloatBitWidth() / 8);
  auto aSliceType = MemRefType::get({tile.rows, stride}, element,
                                    MemRefLayoutAttrInterface{}, workgroup);
  auto bSliceType = MemRefType::get({tile.cols, stride}, element,
                                    MemRefLayoutAttrInterface{}, workgroup);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };

  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(batch * tilesM * tilesN), one, one, index(threads), one,
      one, /*dynamicSharedMemorySize=*/nullptr,
      b.getType<gpu::AsyncTokenType>(), /*asyncDependencies=*/ValueRange{},
      TypeRange{aSliceType, bSliceType});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value aSlice = launch.getWorkgroupAttributions()[0];
  Value bSlice = launch.getWorkgroupAttributions()[1];
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto plus = [&](Value x, int64_t y) -> Value {
    return y == 0 ? x : add(x, index(y));
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
  /// x below xBound and y below yBound, each checked only where its bound is
  /// not a multiple of its tile's size; null when neither is.
  auto inside = [&](Value x, int64_t xBound, int64_t xTile, Value y,
                    int64_t yBound, int64_t yTile) -> Value {
    return bothBelow(b, loc, x, xBound, xBound % xTile != 0, y, yBound,
                     yBound % yTile != 0);
  };

  Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
  TileOfC ofC =
      tileOfC(b, loc, block, tilesM, tilesN, tile.rows, tile.cols, batched);
  Value row0 = ofC.row0, col0 = ofC.col0;
  auto at = [&](Value i, Value j) { return ofC.at(i, j); };
  Value warp = div(thread, warpSize), lane = rem(thread, warpSize);
  Value warpRow0 = mul(div(warp, warpsAcross), tile.warpRows);
  Value warpCol0 = mul(rem(warp, warpsAcross), tile.warpCols);
  Value group = div(lane, 4), pair = mul(rem(lane, 4), perRegister);

  auto accType = VectorType::get({2, 2}, f32);
  auto aType = VectorType::get({mma::kRegistersA, perRegister}, element);
  auto bType = VectorType::get({mma::kRegistersB, perRegister}, element);
  auto registerType = VectorType::get({perRegister}, element);
  Value zeros = arith::ConstantOp::create(
      b, loc, accType, cast<TypedAttr>(b.getZeroAttr(accType)));
  SmallVector<Value> init(mmaRows * mmaCols, zeros);
  auto kLoop = scf::ForOp::create(
      b, loc, index(0), index(steps), one, init,
      [&](OpBuilder &nb, Location, Value step, ValueRange acc) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value k0 = mul(step, tile.depth);
        // A's slice, then B's, k innermost in both; consecutive threads
        // read consecutive elements of the source's rows.
        auto stage = [&](Value source, Value slice, Value outer0,
                         int64_t outerSize, int64_t outerBound,
                         bool kInnermost) {
          int64_t count = outerSize * tile.depth;
          assert(count % threads == 0 && "a slice is whole rounds of copies");
          for (int64_t e = 0; e < count / threads; ++e) {
            Value linear = plus(thread, e * threads);
            Value outer, kk;
            if (kInnermost) {
              outer = div(linear, tile.depth);
              kk = rem(linear, tile.depth);
            } else {
              kk = div(linear, outerSize);
              outer = rem(linear, outerSize);
            }
            Value go = add(outer0, outer), gk = add(k0, kk);
            SmallVector<Value> from = kInnermost ? at(go, gk) : at(gk, go);
            Value v = loadOrZero(
                b, loc, source, from,
                inside(go, outerBound, outerSize, gk, k, tile.depth));
            // An f32 operand holds values of `element`: exact; in tf32
            // each is rounded (what the tensor core reads).
            if (tf32)
              v = roundedToTf32(b, loc, v);
            else if (v.getType() != element)
              v = arith::TruncFOp::create(b, loc, element, v);
            memref::StoreOp::create(b, loc, v, slice, ValueRange{outer, kk});
          }
        };
        stage(aSource, aSlice, row0, tile.rows, m, /*kInnermost=*/true);
        stage(bSource, bSlice, col0, tile.cols, n,
              /*kInnermost=*/operands.bTransposed);
        gpu::BarrierOp::create(b, loc);
        SmallVector<Value> sums(acc.begin(), acc.end());
        for (int64_t ks = 0; ks < tile.depth / mmaDepth; ++ks) {
          auto fragment = [&](Value slice, VectorType type, Value outer,
                              auto kOffsetOf) {
            Value result = arith::ConstantOp::create(
                b, loc, type, cast<TypedAttr>(b.getZeroAttr(type)));
            for (int64_t r = 0; r < type.getDimSize(0); ++r) {
              auto [outerOffset, kOffset] = kOffsetOf(r);
              Value kk = add(pair, index(ks * mmaDepth + kOffset));
              Value pairOfElements = vector::LoadOp::create(
                  b, loc, registerType, slice,
                  ValueRange{plus(outer, outerOffset), kk});
              result =
                  vector::InsertOp::create(b, loc, pairOfElements, result, r);
            }
            return result;
          };
          SmallVector<Value> aFragments, bFragments;
          for (int64_t i = 0; i < mmaRows; ++i)
            aFragments.push_back(fragment(
                aSlice, aType, add(plus(warpRow0, i * mma::kRows), group),
                [&](int64_t r) {
                  return std::pair(mma::rowOffsetA(r),
                                   mma::columnOffsetA(r, perRegister));
                }));
          for (int64_t j = 0; j < mmaCols; ++j)
            bFragments.push_back(fragment(
                bSlice, bType, add(plus(warpCol0, j * mma::kColumns), group),
                [&](int64_t r) {
                  return std::pair(int64_t(0), mma::rowOffsetB(r, perRegister));
                }));
          for (int64_t i = 0; i < mmaRows; ++i)
            for (int64_t j = 0; j < mmaCols; ++j) {
              Value &sum = sums[i * mmaCols + j];
              sum = nvgpu::MmaSyncOp::create(
                  b, loc, aFragments[i], bFragments[j], sum,
                  ArrayRef<int64_t>{mma::kRows, mma::kColumns, mmaDepth}, tf32);
            }
        }
        // The next step overwrites the slices only when every warp is done.
        gpu::BarrierOp::create(b, loc);
        scf::YieldOp::create(b, loc, sums);
      });

  Value column = mul(rem(lane, 4), 2);
  for (int64_t i = 0; i < mmaRows; ++i)
    for (int64_t j = 0; j < mmaCols; ++j)
      for (int64_t ci = 0; ci < 2; ++ci)
        for (int64_t cj = 0; cj < 2; ++cj) {
          Value gr = add(
              plus(add(row0, warpRow0), i * mma::kRows + mma::rowOffsetC(ci)),
              group);
          Value gc = add(plus(add(col0, warpCol0),
                              j * mma::kColumns + mma::columnOffsetC(cj)),
                         column);
          Value inRange = inside(gr, m, tile.rows, gc, n, tile.cols);
          OpBuilder::InsertionGuard store(b);
          if (inRange) {
            auto branch = scf::IfOp::create(b, loc, inRange, false);
            b.setInsertionPointToStart(branch.thenBlock());
          }
          Value sum = vector::ExtractOp::create(
              b, loc, kLoop.getResult(i * mmaCols + j),
              ArrayRef<int64_t>{ci, cj});
          Value old = memref::LoadOp::create(b, loc, c, at(gr, gc));
          memref::StoreOp::create(
              b, loc, arith::AddFOp::create(b, loc, old, sum), c, at(gr, gc));
        }
  gpu::TerminatorOp::create(b, loc);
}
