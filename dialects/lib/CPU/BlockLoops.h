//===- BlockLoops.h - Loops over the blocks of a static extent --*- C++ -*-===//
//
// The CPU code generators cover each static extent with blocks: a loop over
// the whole blocks (a single index when there is one, an scf.parallel for
// threads), then the leftover block.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_BLOCKLOOPS_H
#define ATTN_CPU_BLOCKLOOPS_H

#include "mlir/IR/Builders.h"

#include <cstdint>

namespace mlir::attn {

/// Covers [begin, begin + count * step) of one dimension with a loop of
/// `count` iterations (or a single index when count is 1); an scf.parallel
/// when `parallel`.
void forEachBlock(OpBuilder &b, Location loc, int64_t begin, int64_t count,
                  int64_t step, bool parallel,
                  llvm::function_ref<void(OpBuilder &, Value)> body);

} // namespace mlir::attn

#endif // ATTN_CPU_BLOCKLOOPS_H
