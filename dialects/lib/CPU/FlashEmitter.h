//===- FlashEmitter.h - Flash-style attention loops on buffers -*- C++ -*-===//
//
// FlashEmitter writes one attn.fused_attention (on memrefs, after
// bufferization) as one loop nest that never materializes the [N, Tq, Tk]
// scores (attn-lower-fused-attention, LowerFusedAttention.cpp, calls it):
//
//   for n:                                   batch x kv heads (with
//                                            heads(H) and kv_heads(G), kv
//                                            head n % G of entry n / G: its
//                                            columns of [B, T, G*d]; G = H
//                                            without kv_heads)
//     kt = k[n]ᵀ in blocks of W keys         [Tk / W, d, W] scratch: a
//                                            block of keys is one vector,
//                                            and a key block's d vectors
//                                            are contiguous (rope: rotated
//                                            as it is copied)
//     for each query head h of the kv head's group (H / G of them: they
//     share kt and read v where it is, no copy per query head):
//      for each super-block of 8 x R query rows:
//       qs = q[rows]                         a copy: out may be q's buffer
//                                            (rope: rotated as it is copied)
//       len[r] = valid_len (min(., i + 1) when causal), clamped to Tk
//       lo[r] = max(0, i + 1 - window) with a causal window, else 0
//       for each block of W keys from min(lo) below max(len):
//                                                     (the rest is skipped)
//        for each block of R rows:                    (k, v blocks in L1)
//         s[r] = qs[r] · kt[block] * scale            R x W/16 accumulators
//         s[r][j >= len[r] or j < lo[r]] = -1e6       D2L's replacement
//         m' = max(m, max s[r]); p = exp(s[r] - m')   online softmax
//         l = l * exp(m - m') + sum p
//         out[r] = out[r] * exp(m - m') + p @ v[block]
//       out[r] /= l          (len <= lo: the mean of v, D2L's uniform row)
//
// With products(bf16) q, k and the weights are rounded where they are
// copied or kept, v once per kv head; on an AMX CPU (bf16Amx) with d a
// multiple of 32 and dv of 16 the two products run on AMX tiles instead
// (the "AMX" section below: its own blocking, the same masks and rows'
// ends); on AVX512-BF16 without AMX (bf16Dot) with d even and dv a
// multiple of 16, on vdpbf16ps in the loop nest above (the "vdpbf16ps"
// section: the AMX packing, a k step per pair).
//
// Skipping masked keys is exact unless the row needs an exact recompute
// (attn/IR/AttentionMask.h: every visible score below -1e6 + 104 while keys
// are masked); such a row is recomputed by an exact scalar loop over all
// keys, so results always equal D2L's.
//
// The definitions: FlashEmitter.cpp (the loop nest above), FlashPairs.cpp
// (bf16 pairs: the packing shared with AMX, the vdpbf16ps products),
// FlashAmx.cpp (the AMX loop).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_FLASHEMITTER_H
#define ATTN_CPU_FLASHEMITTER_H

#include "attn/Attention/OnlineSoftmax.h"
#include "attn/Attention/RotateHalf.h"
#include "attn/Attention/SoftmaxExp.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"

#include "PowerOfTwoPieces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

namespace mlir::attn {

struct CpuSchedule;

/// Emits the loop nest of one fused_attention op at the builder's point.
class FlashEmitter {
public:
  /// `schedule` gives the blocking (attentionRows and attentionKeys as
  /// rowBlock and keyBlock, the accumulator budget, the chunk lanes, the
  /// row blocks per sweep, the threads' threshold).
  FlashEmitter(OpBuilder &b, Location loc, FusedAttentionOp op,
               const attn::CpuSchedule &schedule, bool parallel);

  /// Emits the loop nest at the builder's point (with AMX, inside a check
  /// that the kernel has the tile state).
  void emit();

private:
  //===--------------------------------------------------------------------===//
  // The loop nest (FlashEmitter.cpp)
  //===--------------------------------------------------------------------===//

  /// The loop over batch x kv heads entries: a scf.parallel with
  /// `parallel`, each iteration with its own scratch.
  void emitEntries();

  /// The scratch buffers of one thread (AMX: allocateAmxScratch), and
  /// their release.
  void allocateScratch();
  void freeScratch();

  /// Entry n (kv head n % G of batch entry n / G): its keys and values
  /// packed, then the rows of each of its query heads.
  void groupEntry(Value n);

  /// Copies row `row` of q or k (`source` at `where`) to `store(column,
  /// value)`: as it is, or rotated by rope at position `row` (Hugging Face
  /// Llama: element c < d/2 pairs with c + d/2).
  void copyRow(Value source, Value row,
               function_ref<SmallVector<Value>(Value, Value)> where,
               function_ref<void(Value, Value)> store);

  /// for (i = begin; i < end; i += step) body(i), at the builder's point.
  void forRange(int64_t begin, int64_t end, int64_t step,
                function_ref<void(Value)> body);

  /// Where kt keeps key j's column c: kt[j / W, c, j % W].
  SmallVector<Value> ktIndex(Value c, Value j);

  /// kt[j / W, c, j % W] = k[n, j, c] (rotated with rope)
  void transposeKeys(Value n);

  /// roundedValues[j, c] = v[n, j, c] rounded (products).
  void roundValues();

  /// mean[c] = sum_j v[n, j, c] / Tk: the output row of a fully masked row.
  void meanOfValues(Value n);

  /// The end of query row `row`'s visible keys (attn/IR/AttentionMask.h).
  /// May be <= 0.
  Value lengthOf(Value n, Value row);

  /// The rows of a register block [i0, i0 + rows) and their lengths.
  void rowsOf(Value n, Value i0, int64_t rows, SmallVectorImpl<Value> &row,
              SmallVectorImpl<Value> &len, SmallVectorImpl<Value> &lo);

  /// Register blocks of rowBlock rows covering [s0, s0 + count), the last
  /// one possibly shorter: body(first row, rows).
  void forRowBlocks(Value s0, int64_t count,
                    function_ref<void(Value, int64_t)> body);

  /// `rows` query rows from s0 that share each block of keys: the block of
  /// k and v is read from L1 by every register block of rows, instead of
  /// streaming all of k and v once per register block. The running max
  /// and sum of each row live in `stats` between key blocks.
  void superBlockOf(Value n, Value s0, int64_t rows);

  /// One step of the online softmax for every row of the block: `blocks`
  /// blocks of `lanes` keys from j0; returns the updated (max..., sum...).
  /// The scores of each block are computed in registers and kept in
  /// `probs`; the maximum, the rescaling of the output rows (alpha) and the
  /// sums then happen once per step, not once per block.
  SmallVector<Value> keyBlockOf(Value n, ArrayRef<Value> row,
                                ArrayRef<Value> len, ArrayRef<Value> lo,
                                Value j0, int64_t lanes, int64_t blocks,
                                ValueRange state);

  /// out[row] /= sum, or the mean of v for a fully masked row; a row whose
  /// visible scores all lie where masked keys still count is recomputed
  /// exactly. Its visible keys are [lo, len) (lo null: 0).
  void finishRow(Value n, Value row, Value len, Value lo, Value rowMax,
                 Value rowSum);

  /// score(j) of `row`, with D2L's replacement for j >= len or j < lo.
  Value scoreOf(Value n, Value row, Value len, Value lo, Value j);
  /// The same score, not masked.
  Value rawScoreOf(Value n, Value row, Value j);

  /// The exact softmax over all keys of one row (attn::exactRow: one online
  /// pass, scalar loops over the row's columns).
  void exactRow(Value n, Value row, Value len, Value lo);

  //===--------------------------------------------------------------------===//
  // Small helpers
  //===--------------------------------------------------------------------===//

  /// Where element (row, col) of the current entry's q (`qOffset`), k
  /// (`kOffset`), v (`vOffset`) or out (`oOffset`) is.
  SmallVector<Value> at(Value row, Value col, Value offset) {
    return {entryBatch, row, offset ? add(col, offset) : col};
  }

  SmallVector<Value> qAt(Value row, Value col) { return at(row, col, qOffset); }

  SmallVector<Value> kAt(Value row, Value col) { return at(row, col, kOffset); }

  SmallVector<Value> vAt(Value row, Value col) { return at(row, col, vOffset); }

  SmallVector<Value> outAt(Value row, Value col) {
    return at(row, col, oOffset);
  }

  /// Row `row` of the current super-block as an index into `queryRows`.
  Value inSuperBlock(Value row) {
    return arith::SubIOp::create(b, loc, row, superStart);
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }

  Value f32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }

  Value splat(Value scalar, int64_t lanes) {
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({lanes}, scalar.getType()), scalar);
  }

  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }

  /// `x` as an operand of a product (productOperand).
  Value rounded(Value x) { return productOperand(b, loc, x, products); }

  Type bf16() { return b.getBF16Type(); }

  /// The first visible key of query row `row`; null (0) without a window.
  Value lowerOf(Value row) { return visibleBegin(b, loc, row, window); }

  /// Column chunks of an output row: (offset, lanes) with lanes <=
  /// chunkLanes (one register each).
  SmallVector<std::pair<int64_t, int64_t>> chunks() const {
    return powerOfTwoPieces(width, chunkLanes);
  }

  /// Whether a row may see no key at all (valid_lens <= 0, or below its
  /// window), and so take the mean of v: only with valid_lens (without, a
  /// row sees itself at least).
  bool mayBeEmpty() const { return static_cast<bool>(lens); }

  //===--------------------------------------------------------------------===//
  // bf16 pairs (FlashPairs.cpp): the packing AMX and vdpbf16ps share, and
  // both products on vdpbf16ps (AVX512-BF16 without AMX)
  //===--------------------------------------------------------------------===//
  //
  // The kv head's keys and values are packed once as bf16 pairs in f32
  // slots: kTiles[j / 16, c / 2, j % 16] holds k[j, c & ~1] and k[j, c | 1]
  // (rotated with rope), vTiles (valuePairsAt) v[j & ~1, c] and v[j | 1, c];
  // zero past Tk. With vdpbf16ps the query rows are also kept as bf16
  // (queryPairs), the weights as bf16 (weightPairs); the loop nest and its
  // softmax are the f32 one's. A product's k step is a pair of columns of q
  // (scores) or of keys (p @ v): emitPairStep, vdpbf16ps on each register
  // of slots.

  /// kTiles and vTiles (see packKeysAndValues), zero past Tk.
  void allocatePairs();

  /// Where vTiles keeps the 16 slots of column block `block` (columns
  /// 16 block...) of key pair `pair`.
  SmallVector<Value> valuePairsAt(Value block, Value pair);

  /// `x` (f32, a scalar or a vector) rounded to bf16.
  Value narrowed(Value x);

  /// Row `row` of q or k (`source` at `where`) as one vector of `depth`
  /// lanes, rotated by rope at position `row`, rounded (products).
  Value rowVector(Value source, Value row,
                  function_ref<SmallVector<Value>(Value, Value)> where);

  /// bf16 pairs of an f32 vector as f32 slots (each the bits of two bf16).
  Value pairSlots(Value x);

  /// kTiles and vTiles of the current kv head (rounded, k rotated by rope).
  void packKeysAndValues();

  /// Key j's column c from kTiles (f32 slots of bf16 pairs), widened: the
  /// exact recompute's read.
  Value keyFromTiles(Value c, Value j);

  /// The unscaled scores q kᵀ of `rows` rows against the `lanes` keys from
  /// jt (a multiple of 16 for 16 lanes and more), a vector per row.
  SmallVector<Value> pairScoresOf(ArrayRef<Value> row, Value jt, int64_t lanes);

  /// p = exp(x) for the scores x - m' <= 0 of a row (vector<lanes>), kept
  /// in weightPairs[row, t...] as bf16: 16 lanes at a time as the AMX
  /// loop computes and rounds them (nonPositiveExp16, vcvtneps2bf16); a piece
  /// of fewer keys with math.exp and the exact rounding.
  Value keptPairWeights(Value x, Value row, Value t);

  /// The bf16 pair at `at` of a bf16 memref as vector<1xi32>.
  Value pairAt(Value memref, ValueRange at);

  /// The vectors of `parts` (equal lengths, a power of two of them) end to
  /// end.
  Value concatenated(ValueRange parts);

  /// out[r] = out[r] * alpha[r] + sum_j p[r][j] v[j0 + j, chunk] for the
  /// column chunks of `group` (16 columns each): a k step per pair of keys,
  /// the rows' weight pairs (weightPairs) against a register of vTiles per
  /// chunk. j0 is even (the steps and pieces of keys start at multiples of
  /// 2); an odd span's last pair is (p, 0) against (v, 0).
  void pairWeightedValues(ArrayRef<Value> row, Value j0, int64_t span,
                          ArrayRef<Value> alphas,
                          ArrayRef<std::pair<int64_t, int64_t>> group);

  //===--------------------------------------------------------------------===//
  // AMX: both products on tdpbf16ps tiles (FlashAmx.cpp)
  //===--------------------------------------------------------------------===//
  //
  // Per tile of 16 query rows (qTiles: A tiles of 32 columns), per step of
  // amxKeys keys, against the packed pairs as B tiles (16 rows of 64 bytes):
  //   scores = qTiles x kTiles                   (tdpbf16ps, f32 sums; the
  //                                               next step's are computed
  //                                               before this step's p @ v)
  //   per row: scale, mask, m' = max(m, max s),
  //            p = exp(s - m') (nonPositiveExp16),
  //            weightTiles[row] = p rounded to bf16, the step's sum of p
  //   pv = weightTiles x vTiles                  (tdpbf16ps, from zero)
  //   per row: out = out exp(m - m') + pv, l = l exp(m - m') + sum p
  // and the rows end as finishRow ends them.

  /// The AMX loop's scratch (with allocatePairs).
  void allocateAmxScratch();

  /// Query rows [i0, i0 + count) (count <= 16) of the current head.
  void amxRowTile(Value n, Value i0, int64_t count);

  /// Tile products C(c) = sum_s A(s) x B(c, s) for `columns` C tiles,
  /// each stored by `store` (f32 sums from zero): 4 at a time, independent
  /// accumulators that keep AMX's pipeline full (with an A and a B tile, 6
  /// of the 8 tile registers), each A tile loaded once for the 4.
  void tileProducts(int64_t columns, int64_t steps,
                    function_ref<Value(int64_t)> aTile,
                    function_ref<Value(int64_t, int64_t)> bTile,
                    function_ref<void(int64_t, Value)> store);

  /// An A or B tile (16 rows of 32 bf16) at `at` in `memref`.
  Value pairsTile(Value memref, ValueRange at);

  /// The scores of the step of amxKeys keys from j0: scores = q kᵀ, a C
  /// tile per 16 keys.
  void amxScores(Value j0);

  /// The weights of the step of amxKeys keys from j0, from its scores, for
  /// the tile's rows; `inside`: no row masks any of its keys.
  void amxWeights(Value n, Value i0, int64_t count, Value j0, Value inside);

  /// out = out * exp(m - m') + p @ v for the step of amxKeys keys from j0.
  void amxWeightedValues(int64_t count, Value j0);

  OpBuilder &b;
  Location loc;
  func::FuncOp func;
  Value q, k, v, lens, out, ropeCos, ropeSin, kt, mean, stats, probs, queryRows;

  /// AMX: both products on tdpbf16ps tiles (products(bf16) on an AMX CPU),
  /// `amxKeys` keys a step. The packed pairs hold paddedKeys keys: Tk
  /// rounded up to a multiple of amxKeys (AMX) or of 16 (vdpbf16ps).
  bool amx = false;
  int64_t amxKeys = 0, paddedKeys = 0;

  /// AMX scratch: the kv head's keys and values as B tiles, the query rows
  /// and the weights as A tiles, a step's scores, the output rows.
  Value kTiles, vTiles, qTiles, scores, weightTiles, outTile;

  /// products(bf16) without AMX or vdpbf16ps: the kv head's values, rounded.
  Value roundedValues;

  /// vdpbf16ps: both products on AVX512-BF16 (from kTiles and vTiles), the
  /// query rows and a step's weights as bf16.
  bool dot = false;
  Value queryPairs, weightPairs;

  /// A step's p @ v (then out = out * exp(m - m') + it, by rows); the
  /// rows' sums of weights as vectors, and the step's; the rows' (max,
  /// the step's max, exp(max - step's max)).
  Value products16, sums, stepSums;
  bool causal, lens2d = false;
  /// Masked keys weigh exactly 0 (the op's `exclusive`): exactRow's rule.
  bool exclusive = false;

  /// products(bf16): the type q, k, v and the weights are rounded to.
  FloatType products;

  /// The causal window, when it hides keys (window < Tq).
  std::optional<int64_t> window;
  float scale;
  int64_t rowBlock, keyBlock;

  /// p @ v accumulators kept in registers at once (the rest of the
  /// registers hold a row of v and a weight).
  int64_t maxAccumulators;
  int64_t chunkLanes;

  /// Register blocks of rows that share one pass over the keys (their
  /// blocks of k and v then come from L1).
  int64_t rowBlocksPerSweep;

  /// Key blocks per step of the online softmax (see keyBlockOf).
  int64_t softmaxBlocks;
  int64_t parallelFlops;
  bool parallel;

  /// batch x heads entries of `depth`/`width` columns each; the kv heads
  /// (`groups` = batch x kvHeads entries) serve groupSize query heads each.
  int64_t heads = 1, kvHeads = 1, groupSize = 1, batch = 0, groups = 0,
          queries = 0, depth = 0, keys = 0, width = 0;

  /// The current entry's batch index and column offsets (see groupEntry).
  Value entryBatch, qOffset, kOffset, vOffset, oOffset;

  /// The first row of the current super-block (see superBlockOf).
  Value superStart;
};

} // namespace mlir::attn

#endif // ATTN_CPU_FLASHEMITTER_H
