//===- BlockLoops.cpp - Loops over the blocks of a static extent ----------===//

#include "BlockLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

void mlir::attn::forEachBlock(OpBuilder &b, Location loc, int64_t begin,
                              int64_t count, int64_t step, bool parallel,
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
