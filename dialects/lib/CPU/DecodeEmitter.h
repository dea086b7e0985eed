//===- DecodeEmitter.h - Attention over a KV cache on buffers --*- C++ -*-===//
//
// DecodeEmitter writes one attn.decode_attention (on memrefs, after
// bufferization) as two loop nests (attn-lower-fused-attention,
// LowerFusedAttention.cpp, calls it). A decode step reads every visible
// row of the cache once and does little arithmetic with it: it is bound by
// memory bandwidth, so the work is split over the keys as well as the kv
// heads, in chunks of C keys fixed at compile time (the target's
// decodeKeys), whatever the number of threads:
//
//   for (n, c) in (batch x kv heads) x chunks:   scf.parallel with threads
//     b = n / G, g = n % G, p = pos[b]
//     [jb, je) = [max(cC, begin), min(cC + C, p + T)) (begin: the window's
//                first row for token 0, else 0); nothing when empty or p
//                is out of range
//     qs = the R = (H/G) x T query rows of kv head g (rounded: products)
//     s[r][j] = qs[r] · k[b, j, g]          pass 1: each key row loaded
//               * scale, -inf unless visible     once (widened from the
//                                                cache's type) for all R
//                                                rows: GQA's small GEMM
//     m[r] = max s[r]; s[r] = exp(s[r] - m[r]); l[r] = sum s[r]
//     o[r] = sum_j s[r][j] v[b, j, g]       pass 3: each value row once,
//                                                the rows' accumulators in
//                                                registers
//     partials[n, c, r] = (m, l, o)
//   for n, r:                                the reduction, chunks in order
//     M = max_c m; out[b, t, h] = sum_c o_c e^(m_c - M) / sum_c l_c e^(m_c - M)
//
// No row past a token's position is read, so a cache's unwritten rows
// (NaN included) never reach the output; keys outside a row's range have
// weight 0 exactly. The chunks and the reduction order depend only on the
// shapes: 1 and N threads give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_DECODEEMITTER_H
#define ATTN_CPU_DECODEEMITTER_H

#include "attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::attn {

struct CpuSchedule;

/// Emits the loop nests of one decode_attention op at the builder's point.
class DecodeEmitter {
public:
  DecodeEmitter(OpBuilder &b, Location loc, DecodeAttentionOp op,
                const attn::CpuSchedule &schedule, bool parallel);

  void emit();

private:
  /// Chunk c of entry n: its partial (max, sum, output) per row, or
  /// nothing when it holds no visible key.
  void chunk(Value n, Value c);

  /// Rows r of entry n (kv head g of batch entry b): the partials of its
  /// chunks reduced in order, divided into out.
  void reduce(Value n);

  /// The batch entry, kv head, position (an index) and whether it is in
  /// range, of entry n.
  struct Entry {
    Value batch, group, pos, valid;
  };
  Entry entryOf(Value n);

  /// [begin, end): the cache rows some new token of an entry at position
  /// `pos` sees.
  std::pair<Value, Value> visibleRange(Value pos);

  /// The query rows of entry (b, g) rounded, into qs[R, d].
  void copyQueries(const Entry &entry);

  /// Row `row` of a cache (k or v) at column `column`, as the pieces of
  /// one head, widened to f32 and rounded (products).
  SmallVector<Value> cacheRow(Value cache, Value batch, Value row,
                              Value column);

  /// q (the rows' queries) · key, the pieces' products summed in a fixed
  /// order.
  Value dot(ArrayRef<Value> query, ArrayRef<Value> key);

  /// `lanes` vectors of `lanes` lanes (a power of two), each a key's
  /// products: the vector of their sums, key i in lane i (a tree of
  /// shuffles, in a fixed order).
  Value sumLanes(ArrayRef<Value> vectors);

  /// for (i = begin; i < end; ++i) body(i) at the builder's point.
  void forRange(Value begin, Value end, function_ref<void(Value)> body);

  /// for (i = begin; i < end; ++i) values = body(i, values), from `init`:
  /// the last values.
  SmallVector<Value>
  forWithValues(Value begin, Value end, ValueRange init,
                function_ref<SmallVector<Value>(Value, ValueRange)> body);

  /// A loop over [0, count) on threads (`parallel`) or on one.
  void forEach(int64_t count, bool threads, function_ref<void(Value)> body);

  Value index(int64_t value);
  Value f32(float value);
  Value add(Value x, Value y);
  Value mul(Value x, Value y);
  Value splat(Value scalar, int64_t lanes);
  /// Prefetches the lines of a head's slice of a cache row (clamped into
  /// the cache).
  void prefetchRow(Value cache, Value batchIndex, Value row, Value column);
  /// A query row's f32 pieces as vectors of 2 x lanes bf16 (for pairDot).
  SmallVector<Value> bf16Pairs(ArrayRef<Value> query);

  OpBuilder &b;
  Location loc;
  Value q, k, v, pos, out;
  /// Scratch: the partials (all entries and chunks), the query rows and
  /// the scores of a chunk (one per thread).
  Value partMax, partSum, partOut, qs, scores;
  FloatType products;
  std::optional<int64_t> window;
  float scale;
  bool parallel;
  int64_t parallelFlops;
  /// Shapes: batch B, new tokens T, cache rows L, heads H and kv heads G,
  /// head dim d, rows R = (H / G) T per kv head, keys per chunk C, chunks.
  int64_t batch = 0, tokens = 0, cacheRows = 0, heads = 0, kvHeads = 0,
          depth = 0, rows = 0, chunkKeys = 0, chunks = 0, lanes = 16;
  /// Accumulator registers of pass 3 (rows x pieces).
  int64_t maxAccumulators = 24;
  /// The (offset, lanes) pieces of a head's d columns.
  SmallVector<std::pair<int64_t, int64_t>> pieces;
  /// Pass 1's blocks of keys on vdpbf16ps: a bf16 cache whose rows are
  /// products(bf16) operands as they are, the query rows rounded to bf16
  /// too, on a CPU with AVX512-BF16 (the schedule's bf16-dot, or its AMX
  /// CPUs, which have it), heads of whole 32-element pairs of vectors.
  bool pairDot = false;
  /// Passes 1 and 3 ask for the cache rows this many keys ahead
  /// (CpuSchedule::decodePrefetchKeys), a line (cacheLineBytes) at a time.
  int64_t prefetchKeys = 16, cacheLineBytes = 64;
};

} // namespace mlir::attn

#endif // ATTN_CPU_DECODEEMITTER_H
