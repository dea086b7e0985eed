//===- DecodeEmitter.h - Attention over a KV cache on buffers --*- C++ -*-===//
//
// DecodeEmitter writes one attn.decode_attention (on memrefs, after
// bufferization) as two loop nests (attn-lower-fused-attention,
// LowerFusedAttention.cpp, calls it). A decode step reads every visible
// row of the cache once and does little arithmetic with it: it is bound by
// memory bandwidth, so the work is split over the keys as well as the kv
// heads, in chunks of C keys fixed at compile time (the target's
// decodeKeys), whatever the number of threads. A cache row `[G x d]` holds
// every kv head's slice side by side: the kv heads are taken in groups of
// E (as many as keep R = E x (H/G) x T query rows within the target's
// decodeRows), and each pass reads the group's span of a row at once -- a
// sequential stream -- rather than one head's slice at the row's stride:
//
//   for (n, c) in (batch x groups) x chunks:    scf.parallel with threads
//     b = n / (G/E), e = n % (G/E), p = pos[b]
//     [jb, je) = [max(cC, begin), min(cC + C, p + T)) (begin: the window's
//                first row for token 0, else 0); nothing when empty or p
//                is out of range
//     qs[r] = query row r (rounded: products); r = (g' (H/G) + h) T + t
//             for kv head eE + g', its query head h, token t
//     s[j][r] = qs[r] · k[b, j, kv head of r]   pass 1: each key row's span
//               * scale, -inf unless visible     once, for all R rows
//                                                (GQA's small GEMM); the
//                                                products of `lanes` (key,
//                                                row) pairs summed by one
//                                                tree of shuffles
//     m[r] = max s[.][r]; s[.][r] = exp(s[.][r] - m[r]); l[r] = sum
//     o[r] = sum_j s[j][r] v[b, j, kv head of r]  pass 3: each value
//                                                row's span once
//     partials[n, c, r] = (m, l, o)
//   for n, r:                                the reduction, chunks in order
//     M = max_c m; out[b, t, h] = sum_c o_c e^(m_c - M) / sum_c l_c e^(m_c - M)
//
// s is laid out key-major, R rounded up to P rows (a power of two below
// `lanes`, else whole vectors), so that a vector of scores holds
// lanes / P keys x P rows (or `lanes` rows of one key), and pass 2's
// maxima and sums are vectors across rows.
//
// No row past a token's position is read, so a cache's unwritten rows
// (NaN included) never reach the output; keys outside a row's range have
// weight 0 exactly. The chunks and every order of summation depend only
// on the shapes: 1 and N threads give the same bits.
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

  /// Rows r of entry n (a group of kv heads of batch entry b): the
  /// partials of its chunks reduced in order, divided into out.
  void reduce(Value n);

  /// The batch entry, first kv head, position (an index) and whether it is
  /// in range, of entry n.
  struct Entry {
    Value batch, firstKvHead, pos, valid;
  };
  Entry entryOf(Value n);

  /// The bounds of a chunk's keys: [jb, je) visible to some row, [ja, jz)
  /// the same rounded out to whole vectors of scores (keysPerVector), j0
  /// the chunk's first key.
  struct Keys {
    Value j0, jb, je, ja, groupsOfKeys;
  };

  /// [begin, end): the cache rows some new token of an entry at position
  /// `pos` sees.
  std::pair<Value, Value> visibleRange(Value pos);

  /// The R query rows of entry n rounded, into qs[R, d].
  void copyQueries(const Entry &entry);

  /// Pass 1: the scores of keys [ja, ja + groupsOfKeys x keysPerVector),
  /// -inf where masked.
  void scoreKeys(const Entry &entry, const Keys &keys);
  /// Pass 1 where a head is not whole vectors: one (key, row) at a time.
  void scoreKeysOneByOne(const Entry &entry, const Keys &keys);
  /// Pass 2: the weights of the scores in place; each row's max and sum
  /// into the partials.
  void weighKeys(Value n, Value c, const Keys &keys);
  /// Pass 3: the weighted sums of the value rows into the partials.
  void sumValues(Value n, Value c, const Entry &entry, const Keys &keys);

  /// Row `row` of a cache (k or v) at column `column`, as the pieces of
  /// one head, widened to f32 and rounded (products).
  SmallVector<Value> cacheRow(Value cache, Value batch, Value row,
                              Value column);

  /// The column of kv head `firstKvHead + local` in a cache row.
  Value kvColumn(const Entry &entry, Value local);

  /// q (the rows' queries) · key, the pieces' products summed in a fixed
  /// order.
  Value dot(ArrayRef<Value> query, ArrayRef<Value> key);

  /// `lanes` vectors of `lanes` lanes (a power of two): the vector of
  /// their sums, vector i's in lane i (a tree of shuffles, a fixed order).
  Value sumLanes(ArrayRef<Value> vectors);

  /// A vector of scores' lanes combined (max or add) across its keys
  /// (lanes / P of them): the P rows' results; `x` itself with one key.
  Value foldKeys(Value x, bool maximum);

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
  /// A constant vector of indices.
  Value indexVector(ArrayRef<int64_t> values);
  /// Prefetches the lines of a group's span of a cache row (clamped into
  /// the cache).
  void prefetchRow(Value cache, const Entry &entry, Value row);

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
  /// head dim d, keys per chunk C, chunks.
  int64_t batch = 0, tokens = 0, cacheRows = 0, heads = 0, kvHeads = 0,
          depth = 0, chunkKeys = 0, chunks = 0, lanes = 16;
  /// The grouping: query rows per kv head (H/G) T, kv heads per group E,
  /// groups G/E, rows per group R, R rounded up (P), keys per vector of
  /// scores (lanes / P, at least 1), vectors per key (P / lanes, at least
  /// 1).
  int64_t rowsPerKvHead = 0, groupKvHeads = 1, groups = 1, rows = 0,
          paddedRows = 0, keysPerVector = 1, vectorsPerKey = 1;
  /// Accumulator registers of pass 3 (rows x pieces).
  int64_t maxAccumulators = 24;
  /// The (offset, lanes) pieces of a head's d columns.
  SmallVector<std::pair<int64_t, int64_t>> pieces;
  /// Whether pass 1 sums vectors of products (every piece a whole vector,
  /// `lanes` a power of two).
  bool vectorScores = false;
  /// Pass 1's products on vdpbf16ps: a bf16 cache whose rows are
  /// products(bf16) operands as they are, the query rows rounded to bf16
  /// too (qs is bf16), on a CPU with AVX512-BF16 (the schedule's bf16-dot,
  /// or its AMX CPUs, which have it), heads of whole 32-element pairs of
  /// vectors.
  bool pairDot = false;
  /// Passes 1 and 3 ask for the cache rows this many keys ahead
  /// (CpuSchedule::decodePrefetchKeys), a line (cacheLineBytes) at a time.
  int64_t prefetchKeys = 16, cacheLineBytes = 64;
};

} // namespace mlir::attn

#endif // ATTN_CPU_DECODEEMITTER_H
