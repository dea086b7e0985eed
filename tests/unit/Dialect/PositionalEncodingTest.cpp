//===- PositionalEncodingTest.cpp - Table entries computed from indices ---===//
//
// Kernels compute tables too big to embed (kMaxConstantTableElements) with
// positionalEncodingEntry instead of reading the table: its double result,
// rounded to float, must be the table's entry bit for bit.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/PositionalEncoding.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir::attn;

namespace {

float entry(float angle, int64_t odd) {
  DoubleOps ops;
  return static_cast<float>(positionalEncodingEntry(ops, angle, odd));
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(PositionalEncodingTest, EntriesEqualTheTable) {
  for (int64_t width : {2, 4, 6, 512}) {
    int64_t rows = width == 512 ? 2048 : 1 << 16;
    std::vector<float> table = positionalEncodingTable(rows, width);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t column = 0; column < width; ++column) {
        float angle = static_cast<float>(i) /
                      positionalEncodingDivisor(column / 2, width);
        if (!sameBits(entry(angle, column % 2), table[i * width + column]))
          ++mismatches;
      }
    EXPECT_EQ(mismatches, 0) << "width " << width;
  }
}

// Rows far past any constant table: the range reduction stays exact up to
// the 2^39 rows a table of 2^40 elements can have.
TEST(PositionalEncodingTest, LargeAnglesReduceExactly) {
  for (double angle : {262143.0, 1.0e6, 16777215.0, 1.0e9, 3.3e10, 5.49e11}) {
    float a = static_cast<float>(angle);
    EXPECT_TRUE(sameBits(entry(a, 0), static_cast<float>(std::sin(double(a)))))
        << angle;
    EXPECT_TRUE(sameBits(entry(a, 1), static_cast<float>(std::cos(double(a)))))
        << angle;
  }
}

TEST(PositionalEncodingTest, DivisorIsTheTablesOwn) {
  std::vector<float> table = positionalEncodingTable(2, 8);
  for (int64_t j = 0; j < 4; ++j)
    EXPECT_TRUE(sameBits(table[8 + 2 * j],
                         static_cast<float>(std::sin(
                             double(1.0f / positionalEncodingDivisor(j, 8))))));
}

} // namespace
