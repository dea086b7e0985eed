//===- LowerBf16Mma.cpp - nvgpu.mma.sync on bf16 to nvvm.mma.sync ---------===//
//
// attn-gpu-lower-bf16-mma (Passes.td): the bf16 case MLIR 22's
// convert-nvgpu-to-nvvm cannot type, emitted as nvvm.mma.sync with the
// bf16 pairs packed in i32 registers, as PTX's mma takes them.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPULOWERBF16MMA
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// Each row of `fragment` (vector<Rx2xbf16>) as the i32 holding its pair.
SmallVector<Value> packedRegisters(OpBuilder &b, Location loc, Value fragment) {
  auto type = cast<VectorType>(fragment.getType());
  auto word = VectorType::get({1}, b.getI32Type());
  SmallVector<Value> registers;
  for (int64_t r = 0; r < type.getDimSize(0); ++r) {
    Value pair = vector::ExtractOp::create(b, loc, fragment, r);
    Value bits = vector::BitCastOp::create(b, loc, word, pair);
    registers.push_back(vector::ExtractOp::create(b, loc, bits, 0));
  }
  return registers;
}

LogicalResult lower(nvgpu::MmaSyncOp mma) {
  auto aType = cast<VectorType>(mma.getMatrixA().getType());
  if (!aType.getElementType().isBF16())
    return success();
  SmallVector<int64_t> shape = llvm::to_vector(
      llvm::map_range(mma.getMmaShape().getAsRange<IntegerAttr>(),
                      [](IntegerAttr size) { return size.getInt(); }));
  auto cType = cast<VectorType>(mma.getMatrixC().getType());
  if (shape != SmallVector<int64_t>{16, 8, 16} ||
      aType.getShape() != ArrayRef<int64_t>{4, 2} ||
      cType.getShape() != ArrayRef<int64_t>{2, 2} ||
      !cType.getElementType().isF32())
    return mma.emitOpError("on bf16 is lowered only as m16n8k16 with f32 "
                           "accumulators (vector<4x2xbf16>, vector<2x2xbf16>, "
                           "vector<2x2xf32>)");
  OpBuilder b(mma);
  Location loc = mma.getLoc();
  Type f32 = b.getF32Type();
  SmallVector<Value> accumulators;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      accumulators.push_back(vector::ExtractOp::create(
          b, loc, mma.getMatrixC(), ArrayRef<int64_t>{i, j}));
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  auto product = NVVM::MmaOp::create(
      b, loc, resultType, packedRegisters(b, loc, mma.getMatrixA()),
      packedRegisters(b, loc, mma.getMatrixB()), accumulators, shape,
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> sums;
  for (int64_t i = 0; i < 4; ++i)
    sums.push_back(LLVM::ExtractValueOp::create(b, loc, product, i));
  mma.replaceAllUsesWith(
      vector::FromElementsOp::create(b, loc, cType, sums).getResult());
  mma.erase();
  return success();
}

struct AttnGpuLowerBf16MmaPass
    : mlir::attn::impl::AttnGpuLowerBf16MmaBase<AttnGpuLowerBf16MmaPass> {
  void runOnOperation() override {
    SmallVector<nvgpu::MmaSyncOp> products;
    getOperation().walk([&](nvgpu::MmaSyncOp mma) { products.push_back(mma); });
    for (nvgpu::MmaSyncOp mma : products)
      if (failed(lower(mma)))
        return signalPassFailure();
  }
};

} // namespace
