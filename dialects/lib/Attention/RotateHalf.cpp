//===- RotateHalf.cpp - RoPE's rotation, written once ---------------------===//

#include "attn/Attention/RotateHalf.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

// x cos - p sin and x cos + (-p) sin are the same bits (negation is exact),
// so every form below computes round(round(x cos) +- round(p sin)).

Value attn::rotateHalf(OpBuilder &b, Location loc, Value x, Value partner,
                       Value cos, Value sin, Value firstHalf) {
  Value signedPartner = arith::SelectOp::create(
      b, loc, firstHalf, arith::NegFOp::create(b, loc, partner), partner);
  return arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, x, cos),
      arith::MulFOp::create(b, loc, signedPartner, sin));
}

Value attn::rotateHalf(OpBuilder &b, Location loc, Value x, Value partner,
                       Value cos, Value sin, bool firstHalf) {
  Value cosTerm = arith::MulFOp::create(b, loc, x, cos);
  Value sinTerm = arith::MulFOp::create(b, loc, partner, sin);
  if (firstHalf)
    return arith::SubFOp::create(b, loc, cosTerm, sinTerm);
  return arith::AddFOp::create(b, loc, cosTerm, sinTerm);
}

std::pair<Value, Value> attn::rotateHalves(OpBuilder &b, Location loc, Value x1,
                                           Value x2, Value cos, Value sin) {
  return {rotateHalf(b, loc, x1, x2, cos, sin, /*firstHalf=*/true),
          rotateHalf(b, loc, x2, x1, cos, sin, /*firstHalf=*/false)};
}
