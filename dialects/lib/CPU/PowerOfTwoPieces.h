//===- PowerOfTwoPieces.h - Split a static extent for vectors ---*- C++ -*-===//
//
// LLVM lowers vectors of 12, 13, 36 or 48 floats very badly (scalarized,
// up to 20x slower), powers of two well. Code generators split a static
// extent into `most` lanes at a time, then the rest in decreasing powers of
// two.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_POWEROFTWOPIECES_H
#define ATTN_TRANSFORMS_POWEROFTWOPIECES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <utility>

namespace mlir::attn {

/// [0, size) as (offset, lanes) pieces: whole pieces of `most` lanes, then
/// the rest in decreasing powers of two below `most`.
inline llvm::SmallVector<std::pair<int64_t, int64_t>>
powerOfTwoPieces(int64_t size, int64_t most) {
  llvm::SmallVector<std::pair<int64_t, int64_t>> pieces;
  int64_t offset = 0;
  for (; most > 0 && offset + most <= size; offset += most)
    pieces.push_back({offset, most});
  for (int64_t lanes = int64_t(llvm::PowerOf2Ceil(most)) / 2; lanes >= 1;
       lanes /= 2)
    if (offset + lanes <= size) {
      pieces.push_back({offset, lanes});
      offset += lanes;
    }
  return pieces;
}

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_POWEROFTWOPIECES_H
