//===- Bf16PairStep.cpp - One k pair of a bf16 product, in registers ------===//

#include "Bf16PairStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

SmallVector<Value> mlir::attn::emitPairStep(OpBuilder &b, Location loc,
                                            CpuSchedule::Bf16Dot dot,
                                            ArrayRef<Value> slots,
                                            ArrayRef<Value> lhsPairs,
                                            ValueRange acc) {
  int64_t pieces = slots.size();
  auto slotType = cast<VectorType>(slots[0].getType());
  int64_t lanes = slotType.getNumElements();
  auto bitsType = VectorType::get({lanes}, b.getI32Type());
  SmallVector<Value> next;
  if (dot != CpuSchedule::Bf16Dot::None) {
    // vdpbf16ps, or bfdot v.4s, a.8h, b.8h (lane i += a[2i] b[2i] +
    // a[2i+1] b[2i+1], with its own rounding of the pair's sum).
    assert((dot != CpuSchedule::Bf16Dot::Bfdot || lanes == 4) &&
           "bfdot takes 4 lanes");
    auto pairsType = VectorType::get({2 * lanes}, b.getBF16Type());
    auto bfdot = b.getStringAttr("llvm.aarch64.neon.bfdot.v4f32.v8bf16");
    SmallVector<Value> bPairs;
    for (Value slot : slots)
      bPairs.push_back(vector::BitCastOp::create(b, loc, pairsType, slot));
    for (auto [r, pair] : llvm::enumerate(lhsPairs)) {
      Value aPairs = vector::BitCastOp::create(
          b, loc, pairsType,
          vector::BroadcastOp::create(b, loc, bitsType, pair));
      for (int64_t p = 0; p < pieces; ++p) {
        Value sum = acc[r * pieces + p];
        next.push_back(dot == CpuSchedule::Bf16Dot::Bfdot
                           ? LLVM::CallIntrinsicOp::create(
                                 b, loc, slotType, bfdot,
                                 ValueRange{sum, aPairs, bPairs[p]})
                                 .getResult(0)
                           : x86vector::DotBF16Op::create(b, loc, slotType, sum,
                                                          aPairs, bPairs[p])
                                 .getResult());
      }
    }
    return next;
  }
  // bf16 -> f32 is a shift into the high half: the odd k is already there.
  auto halves = [&](Value bits) -> std::pair<Value, Value> {
    Type type = bits.getType();
    auto constant = [&](int64_t value) -> Value {
      if (auto vector = dyn_cast<VectorType>(type))
        return arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(vector,
                                   b.getI32IntegerAttr(value).getValue()));
      return arith::ConstantIntOp::create(b, loc, type, value);
    };
    Type floatType = getElementTypeOrSelf(type) == type
                         ? Type(b.getF32Type())
                         : Type(cast<VectorType>(type).clone(b.getF32Type()));
    Value odd = arith::AndIOp::create(b, loc, bits, constant(0xffff0000));
    Value even = arith::ShLIOp::create(b, loc, bits, constant(16));
    return {arith::BitcastOp::create(b, loc, floatType, even),
            arith::BitcastOp::create(b, loc, floatType, odd)};
  };
  SmallVector<std::pair<Value, Value>> bHalves;
  for (Value slot : slots)
    bHalves.push_back(
        halves(vector::BitCastOp::create(b, loc, bitsType, slot)));
  for (auto [r, pair] : llvm::enumerate(lhsPairs)) {
    auto [even, odd] = halves(vector::ExtractOp::create(b, loc, pair, 0));
    Value evenSplat = vector::BroadcastOp::create(b, loc, slotType, even);
    Value oddSplat = vector::BroadcastOp::create(b, loc, slotType, odd);
    for (int64_t p = 0; p < pieces; ++p) {
      Value sum = vector::FMAOp::create(b, loc, oddSplat, bHalves[p].second,
                                        acc[r * pieces + p]);
      next.push_back(
          vector::FMAOp::create(b, loc, evenSplat, bHalves[p].first, sum));
    }
  }
  return next;
}
