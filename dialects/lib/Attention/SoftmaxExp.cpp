//===- SoftmaxExp.cpp - The softmax's exp, built in one place -------------===//

#include "attn/Attention/SoftmaxExp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

Value attn::softmaxExp(OpBuilder &b, Location loc, Value x) {
  return math::ExpOp::create(b, loc, x);
}

Value attn::nonPositiveExp16(OpBuilder &b, Location loc, Value x) {
  auto vecType = cast<VectorType>(x.getType());
  auto constant = [&](float value) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(vecType, value));
  };
  auto fma = [&](Value a, Value c, Value d) -> Value {
    return vector::FMAOp::create(b, loc, a, c, d);
  };
  // k = round(x / ln 2); r = x - k ln 2 in two steps (Cody and Waite).
  Value k = math::RoundEvenOp::create(
      b, loc, arith::MulFOp::create(b, loc, x, constant(1.44269504088896341f)));
  Value r = fma(k, constant(-0.693359375f), x);
  r = fma(k, constant(2.12194440e-4f), r);
  Value poly = constant(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                  1.6666665459e-1f, 5.0000001201e-1f})
    poly = fma(poly, r, constant(c));
  Value e = arith::AddFOp::create(
      b, loc, fma(poly, arith::MulFOp::create(b, loc, r, r), r),
      constant(1.0f));
  // Lanes with x >= ln(2^-126) or NaN take e 2^k, the others 0.
  Value kept = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE, x,
                                     constant(-87.3365402f));
  Value mask = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI16Type()), kept);
  // MLIR 22's mask.scalef hands its operands (src, a, b) to LLVM's
  // llvm.x86.avx512.mask.scalef.ps.512, whose order is (a, b, src): e, k
  // and the zeros go in that order (docs/toolchain.md).
  return x86vector::MaskScaleFOp::create(
      b, loc, vecType, /*src=*/e, /*a=*/k, /*b=*/constant(0.0f),
      vector::ExtractOp::create(b, loc, mask, 0),
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), 4));
}
