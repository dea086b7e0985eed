//===- LowerFusedAttention.cpp - Flash-style attention on buffers ---------===//
//
// Lowers attn.fused_attention (on memrefs, after bufferization) to one loop
// nest that never materializes the [N, Tq, Tk] scores:
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
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/Rope.h"
#include "attn/Target/CpuTarget.h"

#include "AmxGemm.h"
#include "Bf16PairStep.h"
#include "PowerOfTwoPieces.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERFUSEDATTENTION
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Fast-math flags of the running max: NaN and the sign of zero do not
/// matter to it (see keyBlockOf).
constexpr arith::FastMathFlags kPlainMax =
    arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;

/// Emits the loop nest of one fused_attention op at the builder's point.
class FlashEmitter {
public:
  /// `schedule` gives the blocking (attentionRows and attentionKeys as
  /// rowBlock and keyBlock, the accumulator budget, the chunk lanes, the
  /// row blocks per sweep, the threads' threshold).
  FlashEmitter(OpBuilder &b, Location loc, FusedAttentionOp op,
               const attn::CpuSchedule &schedule, bool parallel)
      : b(b), loc(loc), func(op->getParentOfType<func::FuncOp>()), q(op.getQ()),
        k(op.getK()), v(op.getV()), lens(op.getValidLens()), out(op.getInit()),
        ropeCos(op.getRopeCos()), ropeSin(op.getRopeSin()),
        causal(op.getCausal()), scale(op.getScale().convertToFloat()),
        rowBlock(schedule.attentionRows), keyBlock(schedule.attentionKeys),
        maxAccumulators(schedule.attentionAccumulators),
        chunkLanes(schedule.attentionChunkLanes),
        rowBlocksPerSweep(schedule.attentionRowBlocksPerSweep),
        softmaxBlocks(std::max<int64_t>(1, schedule.attentionSoftmaxBlocks)),
        parallelFlops(schedule.parallelFlops), parallel(parallel) {
    auto qs = cast<MemRefType>(q.getType()).getShape();
    auto ks = cast<MemRefType>(k.getType()).getShape();
    auto vs = cast<MemRefType>(v.getType()).getShape();
    heads = op.getHeads();
    kvHeads = op.getNumKvHeads();
    groupSize = heads / kvHeads;
    batch = qs[0] * heads;
    groups = qs[0] * kvHeads;
    queries = qs[1];
    depth = qs[2] / heads;
    keys = ks[1];
    width = vs[2] / kvHeads;
    lens2d = lens && cast<MemRefType>(lens.getType()).getRank() == 2;
    if (std::optional<uint64_t> w = op.getWindow())
      window = hidingWindow(static_cast<int64_t>(*w), queries);
    if (std::optional<Type> type = op.getProducts())
      products = cast<FloatType>(*type);
    // Both products on AMX tiles (16 rows of 64 bytes each: a tile is 32
    // columns of q or 16 of out).
    amx = products && schedule.bf16Amx && depth % 32 == 0 && width % 16 == 0;
    if (amx) {
      amxKeys = keys > 32 ? 64 : 32;
      paddedKeys = (keys + amxKeys - 1) / amxKeys * amxKeys;
    }
    // Without AMX, on AVX512-BF16 (bf16Dot): both products on vdpbf16ps,
    // from the same packed pairs, in the loop nest above (key pieces of at
    // most 16 keys are one register of kTiles, output chunks of 16 columns
    // one of vTiles).
    dot = products && !amx && schedule.bf16Dot && depth % 2 == 0 &&
          width % 16 == 0 && keyBlock % 16 == 0 && chunkLanes == 16;
    if (dot)
      paddedKeys = (keys + 15) / 16 * 16;
  }

  void emit() {
    // Threads only pay off past a few microseconds of work.
    if (4 * batch * queries * keys * std::max(depth, width) < parallelFlops)
      parallel = false;
    if (amx) {
      Value granted;
      requestAmxTileStateOnce(b, func, granted);
      auto ifGranted = scf::IfOp::create(b, loc, granted, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifGranted.thenBlock());
      emitEntries();
      return;
    }
    emitEntries();
  }

private:
  void emitEntries() {
    if (!parallel) {
      allocateScratch();
      forRange(0, groups, 1, [&](Value n) { groupEntry(n); });
      freeScratch();
      return;
    }
    // Threads take whole batch entries (with kv_heads: a kv head and its
    // group of query heads), each with its own scratch.
    scf::ParallelOp::create(
        b, loc, ValueRange{index(0)}, ValueRange{index(groups)},
        ValueRange{index(1)}, [&](OpBuilder &nb, Location, ValueRange n) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          allocateScratch();
          groupEntry(n[0]);
          freeScratch();
        });
  }

  void allocateScratch() {
    Type f32 = b.getF32Type();
    if (amx) {
      allocateAmxScratch();
      return;
    }
    if (dot) {
      allocatePairs();
      queryPairs = memref::AllocOp::create(
          b, loc,
          MemRefType::get({rowBlock * rowBlocksPerSweep, depth}, bf16()));
      weightPairs = memref::AllocOp::create(
          b, loc,
          MemRefType::get({rowBlock, keyBlock * softmaxBlocks}, bf16()));
    } else {
      // Blocked rather than [d, Tk]: with Tk a multiple of 1024, the d rows
      // of one key block were 4 KB apart, all in one L1 set.
      kt = memref::AllocOp::create(
          b, loc,
          MemRefType::get({(keys + keyBlock - 1) / keyBlock, depth, keyBlock},
                          f32));
    }
    if (mayBeEmpty())
      mean = memref::AllocOp::create(b, loc, MemRefType::get({width}, f32));
    stats = memref::AllocOp::create(
        b, loc, MemRefType::get({2, rowBlock * rowBlocksPerSweep}, f32));
    probs = memref::AllocOp::create(
        b, loc, MemRefType::get({rowBlock, keyBlock * softmaxBlocks}, f32));
    queryRows = memref::AllocOp::create(
        b, loc, MemRefType::get({rowBlock * rowBlocksPerSweep, depth}, f32));
    // products(bf16): the kv head's values rounded once, not at each read.
    if (products && !dot)
      roundedValues =
          memref::AllocOp::create(b, loc, MemRefType::get({keys, width}, f32));
  }

  void freeScratch() {
    if (amx) {
      for (Value buffer : {kTiles, vTiles, qTiles, scores, weightTiles, outTile,
                           products16, sums, stepSums, stats, queryRows})
        memref::DeallocOp::create(b, loc, buffer);
      if (mean)
        memref::DeallocOp::create(b, loc, mean);
      return;
    }
    if (dot)
      for (Value buffer : {kTiles, vTiles, queryPairs, weightPairs})
        memref::DeallocOp::create(b, loc, buffer);
    else
      memref::DeallocOp::create(b, loc, kt);
    if (mean)
      memref::DeallocOp::create(b, loc, mean);
    memref::DeallocOp::create(b, loc, stats);
    memref::DeallocOp::create(b, loc, probs);
    memref::DeallocOp::create(b, loc, queryRows);
    if (roundedValues)
      memref::DeallocOp::create(b, loc, roundedValues);
  }

  void groupEntry(Value n) {
    // Entry n is kv head n % G of batch entry n / G: its columns of k
    // start at (n % G) * dk, those of v at (n % G) * dv. Its query heads
    // are h = (n % G) * (H / G) + r, with columns h * dk of q, h * dv of
    // out.
    entryBatch = n;
    kOffset = vOffset = Value();
    Value kvHead;
    if (heads > 1) {
      entryBatch = arith::DivUIOp::create(b, loc, n, index(kvHeads));
      kvHead = arith::RemUIOp::create(b, loc, n, index(kvHeads));
      kOffset = arith::MulIOp::create(b, loc, kvHead, index(depth));
      vOffset = arith::MulIOp::create(b, loc, kvHead, index(width));
    }
    if (amx || dot) {
      packKeysAndValues();
    } else {
      transposeKeys(n);
      if (roundedValues)
        roundValues();
    }
    if (mayBeEmpty())
      meanOfValues(n);
    auto queryHead = [&](Value head) {
      qOffset = oOffset = Value();
      if (head) {
        qOffset = arith::MulIOp::create(b, loc, head, index(depth));
        oOffset = arith::MulIOp::create(b, loc, head, index(width));
      }
      if (amx) {
        int64_t full = queries / 16, left = queries % 16;
        forRange(0, full * 16, 16, [&](Value i0) { amxRowTile(n, i0, 16); });
        if (left)
          amxRowTile(n, index(full * 16), left);
        return;
      }
      int64_t super = rowBlock * rowBlocksPerSweep;
      int64_t full = queries / super, left = queries % super;
      forRange(0, full * super, super,
               [&](Value s0) { superBlockOf(n, s0, super); });
      if (left)
        superBlockOf(n, index(full * super), left);
    };
    if (groupSize == 1) {
      queryHead(kvHead);
      return;
    }
    Value first = arith::MulIOp::create(b, loc, kvHead, index(groupSize));
    forRange(0, groupSize, 1, [&](Value r) { queryHead(add(first, r)); });
  }

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

  /// Copies row `row` of q or k (`source` at `where`) to `store(column,
  /// value)`: as it is, or rotated by rope at position `row` (Hugging Face
  /// Llama: element c < d/2 pairs with c + d/2).
  void copyRow(Value source, Value row,
               function_ref<SmallVector<Value>(Value, Value)> where,
               function_ref<void(Value, Value)> store) {
    if (!ropeCos) {
      forRange(0, depth, 1, [&](Value c) {
        store(c,
              rounded(memref::LoadOp::create(b, loc, source, where(row, c))));
      });
      return;
    }
    int64_t half = depth / 2;
    forRange(0, half, 1, [&](Value c) {
      Value partner = add(c, index(half));
      Value x1 = memref::LoadOp::create(b, loc, source, where(row, c));
      Value x2 = memref::LoadOp::create(b, loc, source, where(row, partner));
      Value cos = memref::LoadOp::create(b, loc, ropeCos, ValueRange{row, c});
      Value sin = memref::LoadOp::create(b, loc, ropeSin, ValueRange{row, c});
      Value x1Cos = arith::MulFOp::create(b, loc, x1, cos);
      Value x2Cos = arith::MulFOp::create(b, loc, x2, cos);
      Value x1Sin = arith::MulFOp::create(b, loc, x1, sin);
      Value x2Sin = arith::MulFOp::create(b, loc, x2, sin);
      // x1 cos + (-x2) sin and x2 cos + x1 sin, rounded as torch does.
      store(c, rounded(arith::SubFOp::create(b, loc, x1Cos, x2Sin)));
      store(partner, rounded(arith::AddFOp::create(b, loc, x2Cos, x1Sin)));
    });
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

  /// for (i = begin; i < end; i += step) body(i), at the builder's point.
  void forRange(int64_t begin, int64_t end, int64_t step,
                function_ref<void(Value)> body) {
    if (end <= begin)
      return;
    auto loop =
        scf::ForOp::create(b, loc, index(begin), index(end), index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// Where kt keeps key j's column c: kt[j / W, c, j % W].
  SmallVector<Value> ktIndex(Value c, Value j) {
    Value width = index(keyBlock);
    return {arith::DivUIOp::create(b, loc, j, width), c,
            arith::RemUIOp::create(b, loc, j, width)};
  }

  /// kt[j / W, c, j % W] = k[n, j, c] (rotated with rope)
  void transposeKeys(Value n) {
    forRange(0, keys, 1, [&](Value j) {
      copyRow(
          k, j, [&](Value row, Value c) { return kAt(row, c); },
          [&](Value c, Value x) {
            memref::StoreOp::create(b, loc, x, kt, ktIndex(c, j));
          });
    });
  }

  /// roundedValues[j, c] = v[n, j, c] rounded (products).
  void roundValues() {
    forRange(0, keys, 1, [&](Value j) {
      for (auto [c0, lanes] : chunks()) {
        Value x = vector::LoadOp::create(
            b, loc, VectorType::get({lanes}, b.getF32Type()), v,
            vAt(j, index(c0)));
        vector::StoreOp::create(b, loc, rounded(x), roundedValues,
                                ValueRange{j, index(c0)});
      }
    });
  }

  /// mean[c] = sum_j v[n, j, c] / Tk: the output row of a fully masked row.
  void meanOfValues(Value n) {
    forRange(0, width, 1, [&](Value c) {
      memref::StoreOp::create(b, loc, f32(0.0f), mean, ValueRange{c});
    });
    forRange(0, keys, 1, [&](Value j) {
      forRange(0, width, 1, [&](Value c) {
        Value x = rounded(memref::LoadOp::create(b, loc, v, vAt(j, c)));
        Value acc = memref::LoadOp::create(b, loc, mean, ValueRange{c});
        memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, acc, x),
                                mean, ValueRange{c});
      });
    });
    Value count = f32(static_cast<float>(keys));
    forRange(0, width, 1, [&](Value c) {
      Value acc = memref::LoadOp::create(b, loc, mean, ValueRange{c});
      memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, acc, count),
                              mean, ValueRange{c});
    });
  }

  //===--------------------------------------------------------------------===//
  // AMX: both products on tdpbf16ps tiles
  //===--------------------------------------------------------------------===//
  //
  // Per kv head, its keys and values are packed once as B tiles of bf16
  // pairs in f32 slots (16 rows of 64 bytes): slot kTiles[j / 16, c / 2,
  // j % 16] holds k[j, c & ~1] and k[j, c | 1] (rotated with rope), slot
  // vTiles[c / 16, j / 2, c % 16] v[j & ~1, c] and v[j | 1, c] (valuePairsAt);
  // zero past Tk. Per tile of 16 query rows (qTiles: A tiles of 32 columns),
  // per step of amxKeys keys:
  //   scores = qTiles x kTiles                   (tdpbf16ps, f32 sums; the
  //                                               next step's are computed
  //                                               before this step's p @ v)
  //   per row: scale, mask, m' = max(m, max s), p = exp(s - m') (weightOf),
  //            weightTiles[row] = p rounded to bf16, the step's sum of p
  //   pv = weightTiles x vTiles                  (tdpbf16ps, from zero)
  //   per row: out = out exp(m - m') + pv, l = l exp(m - m') + sum p
  // and the rows end as finishRow ends them.

  Type bf16() { return b.getBF16Type(); }

  void allocateAmxScratch() {
    Type f32Type = b.getF32Type();
    auto alloc = [&](ArrayRef<int64_t> shape, Type element) -> Value {
      return memref::AllocOp::create(b, loc, MemRefType::get(shape, element),
                                     b.getI64IntegerAttr(64));
    };
    allocatePairs();
    qTiles = alloc({depth / 32, 16, 32}, bf16());
    scores = alloc({16, amxKeys}, f32Type);
    weightTiles = alloc({amxKeys / 32, 16, 32}, bf16());
    outTile = alloc({16, width}, f32Type);
    stats = alloc({3, 16}, f32Type);
    products16 = alloc({16, width}, f32Type);
    sums = alloc({16, 16}, f32Type);
    stepSums = alloc({16, 16}, f32Type);
    queryRows = alloc({16, depth}, f32Type);
    if (mayBeEmpty())
      mean = alloc({width}, f32Type);
  }

  /// kTiles and vTiles (see packKeysAndValues), zero past Tk.
  void allocatePairs() {
    Type f32Type = b.getF32Type();
    auto alloc = [&](ArrayRef<int64_t> shape) -> Value {
      return memref::AllocOp::create(b, loc, MemRefType::get(shape, f32Type),
                                     b.getI64IntegerAttr(64));
    };
    kTiles = alloc({paddedKeys / 16, depth / 2, 16});
    // AMX reads a column block's pairs as tiles; vdpbf16ps a pair's
    // column blocks together (one stream of v, not dv / 16 streams
    // paddedKeys * 32 bytes apart, in the same L1 sets).
    vTiles = dot ? alloc({paddedKeys / 2, width})
                 : alloc({width / 16, paddedKeys / 2, 16});
    // The keys past Tk stay zero: their scores are masked, their weights 0
    // (a NaN of stale memory would still reach the sums through 0 x NaN).
    if (paddedKeys == keys)
      return;
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({16}, f32Type), 0.0f));
    forRange(0, paddedKeys / 16, 1, [&](Value t) {
      forRange(0, depth / 2, 1, [&](Value p) {
        vector::StoreOp::create(b, loc, zero, kTiles,
                                ValueRange{t, p, index(0)});
      });
    });
    forRange(0, width / 16, 1, [&](Value t) {
      forRange(0, paddedKeys / 2, 1, [&](Value p) {
        vector::StoreOp::create(b, loc, zero, vTiles, valuePairsAt(t, p));
      });
    });
  }

  /// Where vTiles keeps the 16 slots of column block `block` (columns
  /// 16 block...) of key pair `pair`.
  SmallVector<Value> valuePairsAt(Value block, Value pair) {
    if (dot)
      return {pair, arith::MulIOp::create(b, loc, block, index(16))};
    return {block, pair, index(0)};
  }

  Value narrowed(Value x) {
    Type type = bf16();
    if (auto vector = dyn_cast<VectorType>(x.getType()))
      type = vector.clone(type);
    return arith::TruncFOp::create(b, loc, type, x);
  }

  /// Row `row` of q or k (`source` at `where`) as one vector of `depth`
  /// lanes, rotated by rope at position `row`, rounded (products).
  Value rowVector(Value source, Value row,
                  function_ref<SmallVector<Value>(Value, Value)> where) {
    auto load = [&](Value memref, ArrayRef<Value> at, int64_t lanes) {
      return vector::LoadOp::create(
          b, loc, VectorType::get({lanes}, b.getF32Type()), memref, at);
    };
    if (!ropeCos)
      return rounded(load(source, where(row, index(0)), depth));
    int64_t half = depth / 2;
    Value x1 = load(source, where(row, index(0)), half);
    Value x2 = load(source, where(row, index(half)), half);
    Value cos = load(ropeCos, {row, index(0)}, half);
    Value sin = load(ropeSin, {row, index(0)}, half);
    // x1 cos + (-x2) sin and x2 cos + x1 sin, as copyRow rounds them.
    Value first =
        arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, x1, cos),
                              arith::MulFOp::create(b, loc, x2, sin));
    Value second =
        arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x2, cos),
                              arith::MulFOp::create(b, loc, x1, sin));
    SmallVector<int64_t> both;
    for (int64_t i = 0; i < depth; ++i)
      both.push_back(i);
    return rounded(vector::ShuffleOp::create(b, loc, first, second, both));
  }

  /// bf16 pairs of an f32 vector as f32 slots (each the bits of two bf16).
  Value pairSlots(Value x) {
    auto type = cast<VectorType>(x.getType());
    return vector::BitCastOp::create(
        b, loc, VectorType::get({type.getDimSize(0) / 2}, b.getF32Type()),
        narrowed(x));
  }

  /// kTiles and vTiles of the current kv head (rounded, k rotated by rope).
  void packKeysAndValues() {
    Value c16 = index(16);
    forRange(0, keys, 1, [&](Value j) {
      Value tile = arith::DivUIOp::create(b, loc, j, c16);
      Value slot = arith::RemUIOp::create(b, loc, j, c16);
      Value pairs = pairSlots(
          rowVector(k, j, [&](Value row, Value c) { return kAt(row, c); }));
      // Pair p of key j is row p of its tile: a 32-bit transpose.
      for (int64_t p = 0; p < depth / 2; ++p)
        memref::StoreOp::create(b, loc,
                                vector::ExtractOp::create(b, loc, pairs, p),
                                kTiles, ValueRange{tile, index(p), slot});
    });
    // Values: keys 2p and 2p + 1 interleaved, 16 columns at a time.
    SmallVector<int64_t> interleave;
    for (int64_t i = 0; i < 16; ++i) {
      interleave.push_back(i);
      interleave.push_back(i + 16);
    }
    auto chunkType = VectorType::get({16}, b.getF32Type());
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(chunkType, 0.0f));
    auto packPair = [&](Value j, bool second) {
      Value pair = arith::DivUIOp::create(b, loc, j, index(2));
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        Value even = rounded(
            vector::LoadOp::create(b, loc, chunkType, v, vAt(j, index(c0))));
        Value odd =
            second
                ? rounded(vector::LoadOp::create(
                      b, loc, chunkType, v, vAt(add(j, index(1)), index(c0))))
                : zero;
        Value both = vector::ShuffleOp::create(b, loc, even, odd, interleave);
        vector::StoreOp::create(b, loc, pairSlots(both), vTiles,
                                valuePairsAt(index(c0 / 16), pair));
      }
    };
    forRange(0, keys / 2 * 2, 2, [&](Value j) { packPair(j, true); });
    if (keys % 2 != 0)
      packPair(index(keys - 1), false);
  }

  /// Key j's column c from kTiles (f32 slots of bf16 pairs), widened: the
  /// exact recompute's read.
  Value keyFromTiles(Value c, Value j) {
    Value c16 = index(16), c2 = index(2);
    Value slot = memref::LoadOp::create(
        b, loc, kTiles,
        ValueRange{arith::DivUIOp::create(b, loc, j, c16),
                   arith::DivUIOp::create(b, loc, c, c2),
                   arith::RemUIOp::create(b, loc, j, c16)});
    Value pair = vector::BitCastOp::create(
        b, loc, VectorType::get({2}, bf16()),
        vector::BroadcastOp::create(
            b, loc, VectorType::get({1}, b.getF32Type()), slot));
    Value x = vector::ExtractOp::create(
        b, loc, pair,
        ArrayRef<OpFoldResult>{
            OpFoldResult(arith::RemUIOp::create(b, loc, c, c2).getResult())});
    return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  }

  /// Query rows [i0, i0 + count) (count <= 16) of the current head.
  void amxRowTile(Value n, Value i0, int64_t count) {
    Type f32Type = b.getF32Type();
    auto vecType = VectorType::get({16}, f32Type);
    superStart = i0;
    // Copies first: `out` may be `q`'s buffer.
    forRange(0, count, 1, [&](Value r) {
      Value x = rowVector(q, add(i0, r),
                          [&](Value row, Value c) { return qAt(row, c); });
      vector::StoreOp::create(b, loc, x, queryRows, ValueRange{r, index(0)});
      for (int64_t c0 = 0; c0 < depth; c0 += 32) {
        Value chunk =
            vector::LoadOp::create(b, loc, VectorType::get({32}, f32Type),
                                   queryRows, ValueRange{r, index(c0)});
        vector::StoreOp::create(b, loc, narrowed(chunk), qTiles,
                                ValueRange{index(c0 / 32), r, index(0)});
      }
    });
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, 0.0f));
    // Every row of the state, the tile's missing rows too (their lanes go
    // through the vector steps).
    vector::StoreOp::create(
        b, loc,
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(vecType,
                                   std::numeric_limits<float>::lowest())),
        stats, ValueRange{index(0), index(0)});
    forRange(0, 16, 1, [&](Value r) {
      vector::StoreOp::create(b, loc, zeros, sums, ValueRange{r, index(0)});
      for (int64_t c0 = 0; c0 < width; c0 += 16)
        vector::StoreOp::create(b, loc, zeros, outTile,
                                ValueRange{r, index(c0)});
    });
    // The longest and shortest row, the highest window start.
    auto bounds = scf::ForOp::create(
        b, loc, index(0), index(count), index(1),
        ValueRange{index(0), index(keys), index(0)},
        [&](OpBuilder &nb, Location, Value r, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value row = add(i0, r);
          Value len = lengthOf(n, row);
          Value lo = window ? lowerOf(row) : index(0);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::MaxSIOp::create(b, loc, acc[0], len),
                         arith::MinSIOp::create(b, loc, acc[1], len),
                         arith::MaxSIOp::create(b, loc, acc[2], lo)});
        });
    Value maxLen = bounds.getResult(0), minLen = bounds.getResult(1),
          maxLo = bounds.getResult(2);
    // Steps from the one holding the first row's window (the lowest) to
    // the longest row's end.
    Value step = index(amxKeys);
    Value first = index(0);
    if (window)
      first = arith::DivUIOp::create(b, loc, lowerOf(i0), step);
    Value last = arith::DivUIOp::create(
        b, loc,
        add(arith::MaxSIOp::create(b, loc, maxLen, index(0)),
            index(amxKeys - 1)),
        step);
    // The scores of the next step are computed before this step's p @ v:
    // the weights' vector stores drain meanwhile (a tile load right after
    // them waits for them).
    {
      auto any = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first, last),
          false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(any.thenBlock());
      amxScores(arith::MulIOp::create(b, loc, first, step));
    }
    auto loop = scf::ForOp::create(b, loc, first, last, index(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value it = loop.getInductionVar();
      Value j0 = arith::MulIOp::create(b, loc, it, step);
      // A step inside every row's visible keys needs no mask.
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                add(j0, index(amxKeys)), minLen),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j0, maxLo));
      amxWeights(n, i0, count, j0, inside);
      {
        Value next = add(it, index(1));
        auto more = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next,
                                  last),
            false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(more.thenBlock());
        amxScores(arith::MulIOp::create(b, loc, next, step));
      }
      amxWeightedValues(count, j0);
    }
    forRange(0, count, 1, [&](Value r) {
      Value row = add(i0, r);
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        Value o = vector::LoadOp::create(b, loc, vecType, outTile,
                                         ValueRange{r, index(c0)});
        vector::StoreOp::create(b, loc, o, out, outAt(row, index(c0)));
      }
      Value rowMax =
          memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
      Value rowSum = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD,
          vector::LoadOp::create(b, loc, vecType, sums,
                                 ValueRange{r, index(0)}));
      finishRow(n, row, lengthOf(n, row), lowerOf(row), rowMax, rowSum);
    });
  }

  /// Tile products C(c) = sum_s A(s) x B(c, s) for `columns` C tiles,
  /// each stored by `store` (f32 sums from zero): 4 at a time, independent
  /// accumulators that keep AMX's pipeline full (with an A and a B tile, 6
  /// of the 8 tile registers), each A tile loaded once for the 4.
  void tileProducts(int64_t columns, int64_t steps,
                    function_ref<Value(int64_t)> aTile,
                    function_ref<Value(int64_t, int64_t)> bTile,
                    function_ref<void(int64_t, Value)> store) {
    auto accType = amx::TileType::get({16, 16}, b.getF32Type());
    for (int64_t c0 = 0; c0 < columns; c0 += 4) {
      int64_t count = std::min<int64_t>(4, columns - c0);
      SmallVector<Value> acc;
      for (int64_t c = 0; c < count; ++c)
        acc.push_back(amx::TileZeroOp::create(b, loc, accType));
      for (int64_t s = 0; s < steps; ++s) {
        Value a = aTile(s);
        for (int64_t c = 0; c < count; ++c)
          acc[c] = amx::TileMulFOp::create(b, loc, accType, a, bTile(c0 + c, s),
                                           acc[c]);
      }
      for (int64_t c = 0; c < count; ++c)
        store(c0 + c, acc[c]);
    }
  }

  /// An A or B tile (16 rows of 32 bf16) at `at` in `memref`.
  Value pairsTile(Value memref, ValueRange at) {
    return amx::TileLoadOp::create(b, loc, amx::TileType::get({16, 32}, bf16()),
                                   memref, at);
  }

  /// The scores of the step of amxKeys keys from j0: scores = q kᵀ, a C
  /// tile per 16 keys.
  void amxScores(Value j0) {
    Value keyTile0 = arith::DivUIOp::create(b, loc, j0, index(16));
    tileProducts(
        amxKeys / 16, depth / 32,
        [&](int64_t s) {
          return pairsTile(qTiles, {index(s), index(0), index(0)});
        },
        [&](int64_t t, int64_t s) {
          return pairsTile(kTiles,
                           {add(keyTile0, index(t)), index(16 * s), index(0)});
        },
        [&](int64_t t, Value acc) {
          amx::TileStoreOp::create(b, loc, scores,
                                   ValueRange{index(0), index(16 * t)}, acc);
        });
  }

  /// exp(x) of a vector<16xf32> x <= 0 (or NaN), for the weights of the AMX
  /// and vdpbf16ps loops: Cephes' expf polynomial on x - k ln 2, scaled by 2^k
  /// with vscalefps (AVX-512), 0 for x < ln(2^-126) (a result below f32's
  /// smallest normal: an absolute error below 1.2e-38, and no subnormal for
  /// vcvtneps2bf16 to flush); NaN stays NaN. A third of the instructions of
  /// the general math.exp expansion, which handles every input.
  Value weightOf(Value x) {
    Type f32Type = b.getF32Type();
    auto vecType = VectorType::get({16}, f32Type);
    auto constant = [&](float value) -> Value {
      return arith::ConstantOp::create(b, loc,
                                       DenseElementsAttr::get(vecType, value));
    };
    auto fma = [&](Value a, Value c, Value d) -> Value {
      return vector::FMAOp::create(b, loc, a, c, d);
    };
    // k = round(x / ln 2); r = x - k ln 2 in two steps (Cody and Waite).
    Value k = math::RoundEvenOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, x, constant(1.44269504088896341f)));
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

  /// The weights of the step of amxKeys keys from j0, from its scores, for
  /// the tile's rows; `inside`: no row masks any of its keys.
  void amxWeights(Value n, Value i0, int64_t count, Value j0, Value inside) {
    auto vecType = VectorType::get({16}, b.getF32Type());
    // The online softmax, a row at a time: the step's max (stats[1]), its
    // weights rounded into weightTiles, their sum as a vector (sums) added
    // to the row's below.
    SmallVector<int32_t> lanes;
    for (int32_t j = 0; j < 16; ++j)
      lanes.push_back(j);
    Value laneIndex = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({16}, b.getI32Type()),
                               ArrayRef(lanes)));
    Value firstKey =
        splat(arith::IndexCastOp::create(b, loc, b.getI32Type(), j0), 16);
    auto rowStep = [&](Value r, bool masked) {
      Value row = add(i0, r);
      Value len, lo;
      if (masked) {
        len = lengthOf(n, row);
        lo = lowerOf(row);
      }
      SmallVector<Value> s;
      Value blockMax;
      for (int64_t t = 0; t < amxKeys / 16; ++t) {
        Value x = vector::LoadOp::create(b, loc, vecType, scores,
                                         ValueRange{r, index(16 * t)});
        x = arith::MulFOp::create(b, loc, x, splat(f32(scale), 16));
        if (masked) {
          Value key = arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc, firstKey, laneIndex),
              splat(
                  arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16 * t),
                  16));
          Value visible = isKeyVisible(b, loc, key, lo, len, [&](Value bound) {
            return splat(
                arith::IndexCastOp::create(b, loc, b.getI32Type(), bound), 16);
          });
          x = maskScore(b, loc, visible, x);
          if (paddedKeys != keys) {
            // Keys past Tk are not keys at all: weight 0.
            Value real =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key,
                                      splat(arith::ConstantIntOp::create(
                                                b, loc, b.getI32Type(), keys),
                                            16));
            x = arith::SelectOp::create(
                b, loc, real, x,
                splat(f32(-std::numeric_limits<float>::infinity()), 16));
          }
        }
        s.push_back(x);
        blockMax =
            blockMax ? arith::MaxNumFOp::create(b, loc, blockMax, x, kPlainMax)
                           .getResult()
                     : x;
      }
      Value oldMax =
          memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
      Value newMax = arith::MaxNumFOp::create(
          b, loc, oldMax,
          vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXNUMF,
                                      blockMax, kPlainMax),
          kPlainMax);
      Value sum;
      for (int64_t t = 0; t < amxKeys / 16; ++t) {
        Value p =
            weightOf(arith::SubFOp::create(b, loc, s[t], splat(newMax, 16)));
        sum = sum ? arith::AddFOp::create(b, loc, sum, p).getResult() : p;
        // vcvtneps2bf16 rounds to nearest even; p is never subnormal (its
        // inputs would be flushed).
        vector::StoreOp::create(
            b, loc,
            x86vector::CvtPackedF32ToBF16Op::create(
                b, loc, VectorType::get({16}, bf16()), p),
            weightTiles, ValueRange{index(t / 2), r, index(16 * (t % 2))});
      }
      memref::StoreOp::create(b, loc, newMax, stats, ValueRange{index(1), r});
      vector::StoreOp::create(b, loc, sum, stepSums, ValueRange{r, index(0)});
    };
    // Without a mask, unless some row's keys end or start inside the step.
    bool everyKeyVisible = !lens && !causal && !window && paddedKeys == keys;
    if (everyKeyVisible) {
      forRange(0, count, 1, [&](Value r) { rowStep(r, false); });
    } else {
      scf::IfOp::create(
          b, loc, inside,
          [&](OpBuilder &nb, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            forRange(0, count, 1, [&](Value r) { rowStep(r, false); });
            scf::YieldOp::create(b, loc);
          },
          [&](OpBuilder &nb, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            forRange(0, count, 1, [&](Value r) { rowStep(r, true); });
            scf::YieldOp::create(b, loc);
          });
    }
    // The rows' rescaling exp(m - m') as one vector.
    Value oldMax = vector::LoadOp::create(b, loc, vecType, stats,
                                          ValueRange{index(0), index(0)});
    Value newMax = vector::LoadOp::create(b, loc, vecType, stats,
                                          ValueRange{index(1), index(0)});
    vector::StoreOp::create(
        b, loc,
        math::ExpOp::create(b, loc,
                            arith::SubFOp::create(b, loc, oldMax, newMax)),
        stats, ValueRange{index(2), index(0)});
    vector::StoreOp::create(b, loc, newMax, stats,
                            ValueRange{index(0), index(0)});
  }

  /// out = out * exp(m - m') + p @ v for the step of amxKeys keys from j0.
  void amxWeightedValues(int64_t count, Value j0) {
    auto vecType = VectorType::get({16}, b.getF32Type());
    // p @ v: a C tile per 16 columns, from zero (a tile load of out,
    // just written by vector stores, would wait for them).
    Value pair0 = arith::DivUIOp::create(b, loc, j0, index(2));
    tileProducts(
        width / 16, amxKeys / 32,
        [&](int64_t t) {
          return pairsTile(weightTiles, {index(t), index(0), index(0)});
        },
        [&](int64_t c, int64_t t) {
          return pairsTile(vTiles,
                           {index(c), add(pair0, index(16 * t)), index(0)});
        },
        [&](int64_t c, Value acc) {
          amx::TileStoreOp::create(b, loc, products16,
                                   ValueRange{index(0), index(16 * c)}, acc);
        });
    // out = out * exp(m - m') + p @ v, and the sums alike, by rows.
    forRange(0, count, 1, [&](Value r) {
      Value alpha = splat(
          memref::LoadOp::create(b, loc, stats, ValueRange{index(2), r}), 16);
      auto rescale = [&](Value into, Value from, Value at) {
        Value o =
            vector::LoadOp::create(b, loc, vecType, into, ValueRange{r, at});
        Value x =
            vector::LoadOp::create(b, loc, vecType, from, ValueRange{r, at});
        vector::StoreOp::create(b, loc,
                                vector::FMAOp::create(b, loc, o, alpha, x),
                                into, ValueRange{r, at});
      };
      for (int64_t c0 = 0; c0 < width; c0 += 16)
        rescale(outTile, products16, index(c0));
      rescale(sums, stepSums, index(0));
    });
  }

  /// The end of query row `row`'s visible keys (attn/IR/AttentionMask.h).
  /// May be <= 0.
  Value lengthOf(Value n, Value row) {
    Value len;
    if (lens) {
      Value raw =
          lens2d ? memref::LoadOp::create(b, loc, lens,
                                          ValueRange{entryBatch, row})
                 : memref::LoadOp::create(b, loc, lens, ValueRange{entryBatch});
      len = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
    }
    return visibleEnd(b, loc, len, row, keys, causal);
  }

  /// The first visible key of query row `row`; null (0) without a window.
  Value lowerOf(Value row) { return visibleBegin(b, loc, row, window); }

  /// Column chunks of an output row: (offset, lanes) with lanes <=
  /// chunkLanes (one register each).
  SmallVector<std::pair<int64_t, int64_t>> chunks() const {
    return powerOfTwoPieces(width, chunkLanes);
  }

  /// The rows of a register block [i0, i0 + rows) and their lengths.
  void rowsOf(Value n, Value i0, int64_t rows, SmallVectorImpl<Value> &row,
              SmallVectorImpl<Value> &len, SmallVectorImpl<Value> &lo) {
    for (int64_t r = 0; r < rows; ++r) {
      row.push_back(add(i0, index(r)));
      len.push_back(lengthOf(n, row.back()));
      lo.push_back(lowerOf(row.back()));
    }
  }

  /// Register blocks of rowBlock rows covering [s0, s0 + count), the last
  /// one possibly shorter: body(first row, rows).
  void forRowBlocks(Value s0, int64_t count,
                    function_ref<void(Value, int64_t)> body) {
    int64_t full = count / rowBlock, left = count % rowBlock;
    if (full) {
      auto loop = scf::ForOp::create(b, loc, index(0), index(full * rowBlock),
                                     index(rowBlock));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      body(add(s0, loop.getInductionVar()), rowBlock);
    }
    if (left)
      body(add(s0, index(full * rowBlock)), left);
  }

  /// `rows` query rows from s0 that share each block of keys: the block of
  /// k and v is read from L1 by every register block of rows, instead of
  /// streaming all of k and v once per register block. The running max
  /// and sum of each row live in `stats` between key blocks.
  void superBlockOf(Value n, Value s0, int64_t rows) {
    // The super-block's query rows are read from a copy: `out` may be `q`'s
    // buffer (attention in place), and its rows are written from here on.
    superStart = s0;
    forRange(0, rows, 1, [&](Value r) {
      copyRow(
          q, add(s0, r), [&](Value row, Value c) { return qAt(row, c); },
          [&](Value c, Value x) {
            memref::StoreOp::create(b, loc, x, queryRows, ValueRange{r, c});
            if (dot)
              memref::StoreOp::create(b, loc, narrowed(x), queryPairs,
                                      ValueRange{r, c});
          });
    });
    auto init = scf::ForOp::create(
        b, loc, index(0), index(rows), index(1), ValueRange{index(0)},
        [&](OpBuilder &nb, Location, Value r, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value row = add(s0, r);
          memref::StoreOp::create(b, loc,
                                  f32(std::numeric_limits<float>::lowest()),
                                  stats, ValueRange{index(0), r});
          memref::StoreOp::create(b, loc, f32(0.0f), stats,
                                  ValueRange{index(1), r});
          for (auto [c0, lanes] : chunks())
            vector::StoreOp::create(
                b, loc,
                arith::ConstantOp::create(
                    b, loc,
                    DenseElementsAttr::get(
                        VectorType::get({lanes}, b.getF32Type()), 0.0f)),
                out, outAt(row, index(c0)));
          scf::YieldOp::create(b, loc,
                               ValueRange{arith::MaxSIOp::create(
                                   b, loc, acc[0], lengthOf(n, row))});
        });
    Value maxLen = init.getResult(0);

    // One step of keys (`blocks` blocks of `lanes`) for every register
    // block of the super-block.
    auto sweep = [&](Value j0, int64_t lanes, int64_t blocks) {
      forRowBlocks(s0, rows, [&](Value i0, int64_t count) {
        SmallVector<Value> row, len, lo, state;
        rowsOf(n, i0, count, row, len, lo);
        // With a window, a register block of rows skips the keys that none
        // of its rows sees: the work per row grows with the window, not Tk.
        OpBuilder::InsertionGuard guard(b);
        if (window) {
          Value blockLen = len[0];
          for (int64_t r = 1; r < count; ++r)
            blockLen = arith::MaxSIOp::create(b, loc, blockLen, len[r]);
          Value end = add(j0, index(lanes * blocks));
          Value seen = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j0,
                                    blockLen),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, end,
                                    lo[0]));
          auto ifOp = scf::IfOp::create(b, loc, seen, /*withElseRegion=*/false);
          b.setInsertionPointToStart(ifOp.thenBlock());
        }
        Value first = arith::SubIOp::create(b, loc, i0, s0);
        for (int64_t which = 0; which < 2; ++which)
          for (int64_t r = 0; r < count; ++r)
            state.push_back(memref::LoadOp::create(
                b, loc, stats, ValueRange{index(which), add(first, index(r))}));
        SmallVector<Value> next =
            keyBlockOf(n, row, len, lo, j0, lanes, blocks, state);
        for (int64_t which = 0; which < 2; ++which)
          for (int64_t r = 0; r < count; ++r)
            memref::StoreOp::create(
                b, loc, next[which * count + r], stats,
                ValueRange{index(which), add(first, index(r))});
      });
    };

    // Full key blocks up to the longest row (past it every key of every row
    // is masked): softmaxBlocks at a time, then the rest one at a time.
    // With a window, keys below the first row's window (the lowest) are
    // skipped too: from the block that holds it.
    int64_t fullBlocks = keys / keyBlock, leftKeys = keys % keyBlock;
    int64_t fullSteps = fullBlocks / softmaxBlocks;
    Value firstBlock = index(0), firstStep = index(0);
    if (window) {
      firstBlock = arith::MinUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lowerOf(s0), index(keyBlock)),
          index(fullBlocks));
      firstStep =
          arith::DivUIOp::create(b, loc, firstBlock, index(softmaxBlocks));
    }
    if (fullBlocks) {
      Value wanted = arith::DivUIOp::create(
          b, loc, add(maxLen, index(keyBlock - 1)), index(keyBlock));
      Value blocks = arith::MinUIOp::create(b, loc, wanted, index(fullBlocks));
      Value steps = arith::MinUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, blocks, index(softmaxBlocks)),
          index(fullSteps));
      if (fullSteps) {
        auto loop = scf::ForOp::create(b, loc, firstStep, steps, index(1));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        sweep(arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                    index(keyBlock * softmaxBlocks)),
              keyBlock, softmaxBlocks);
      }
      // Blocks the steps leave: past fullSteps, or past the longest row.
      if (softmaxBlocks > 1) {
        Value first = arith::MaxUIOp::create(
            b, loc, arith::MulIOp::create(b, loc, steps, index(softmaxBlocks)),
            firstBlock);
        auto loop = scf::ForOp::create(b, loc, first, blocks, index(1));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        sweep(arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                    index(keyBlock)),
              keyBlock, 1);
      }
    }
    // The leftover keys, in blocks of powers of two (see powerOfTwoPieces),
    // each only if some row reaches it.
    for (auto [offset, lanes] : powerOfTwoPieces(leftKeys, keyBlock)) {
      Value start = index(fullBlocks * keyBlock + offset);
      Value needed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                           maxLen, start);
      auto ifOp = scf::IfOp::create(b, loc, needed, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      sweep(start, lanes, 1);
    }

    forRange(0, rows, 1, [&](Value r) {
      Value row = add(s0, r);
      Value rowMax =
          memref::LoadOp::create(b, loc, stats, ValueRange{index(0), r});
      Value rowSum =
          memref::LoadOp::create(b, loc, stats, ValueRange{index(1), r});
      finishRow(n, row, lengthOf(n, row), lowerOf(row), rowMax, rowSum);
    });
  }

  /// One step of the online softmax for every row of the block: `blocks`
  /// blocks of `lanes` keys from j0; returns the updated (max..., sum...).
  /// The scores of each block are computed in registers and kept in
  /// `probs`; the maximum, the rescaling of the output rows (alpha) and the
  /// sums then happen once per step, not once per block.
  SmallVector<Value> keyBlockOf(Value n, ArrayRef<Value> row,
                                ArrayRef<Value> len, ArrayRef<Value> lo,
                                Value j0, int64_t lanes, int64_t blocks,
                                ValueRange state) {
    int64_t rows = row.size();
    int64_t span = lanes * blocks;
    auto vecType = VectorType::get({lanes}, b.getF32Type());
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, 0.0f));
    SmallVector<int32_t> offsets;
    for (int64_t j = 0; j < lanes; ++j)
      offsets.push_back(static_cast<int32_t>(j));
    auto i32Vec = VectorType::get({lanes}, b.getI32Type());
    Value laneIndex = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(i32Vec, ArrayRef(offsets)));

    // The scaled, masked scores of the `lanes` keys from jt, a vector per
    // row: s[r] = sum_c q[n, row r, c] * kt[key block, c, lanes].
    auto productsOf = [&](Value jt) -> SmallVector<Value> {
      if (dot)
        return pairScoresOf(row, jt, lanes);
      SmallVector<Value> where = ktIndex(index(0), jt);
      auto loop = scf::ForOp::create(
          b, loc, index(0), index(depth), index(1),
          SmallVector<Value>(rows, zero),
          [&](OpBuilder &nb, Location, Value c, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            Value keyColumn = vector::LoadOp::create(
                b, loc, vecType, kt, ValueRange{where[0], c, where[2]});
            SmallVector<Value> next;
            for (int64_t r = 0; r < rows; ++r) {
              Value x = memref::LoadOp::create(
                  b, loc, queryRows, ValueRange{inSuperBlock(row[r]), c});
              next.push_back(vector::FMAOp::create(b, loc, splat(x, lanes),
                                                   keyColumn, acc[r]));
            }
            scf::YieldOp::create(b, loc, next);
          });
      return SmallVector<Value>(loop.getResults());
    };
    auto scoresOf = [&](Value jt) {
      SmallVector<Value> products = productsOf(jt);
      // Key indices jt + [0, lanes) as i32, to compare with the lengths.
      Value keyIndex = arith::AddIOp::create(
          b, loc, laneIndex,
          splat(arith::IndexCastOp::create(b, loc, b.getI32Type(), jt), lanes));
      SmallVector<Value> scores;
      for (int64_t r = 0; r < rows; ++r) {
        Value s = arith::MulFOp::create(b, loc, products[r],
                                        splat(f32(scale), lanes));
        Value visible =
            isKeyVisible(b, loc, keyIndex, lo[r], len[r], [&](Value bound) {
              return splat(
                  arith::IndexCastOp::create(b, loc, b.getI32Type(), bound),
                  lanes);
            });
        scores.push_back(maskScore(b, loc, visible, s));
      }
      return scores;
    };
    // One block per step (AVX-512's 64 keys): its scores stay in registers.
    // Several: each block's wait in probs[r, t * lanes + j].
    SmallVector<Value> inRegisters;
    if (blocks == 1)
      inRegisters = scoresOf(j0);
    else
      forRange(0, blocks, 1, [&](Value t) {
        Value first = arith::MulIOp::create(b, loc, t, index(lanes));
        for (auto [r, s] : llvm::enumerate(scoresOf(add(j0, first))))
          vector::StoreOp::create(b, loc, s, probs,
                                  ValueRange{index(r), first});
      });

    // Per row, a loop over the step's blocks for the maximum, another for
    // the exps and their sum: one block of scores live at a time (unrolled,
    // the blocks of every row were live at once and spilled).
    SmallVector<Value> maxes, sums, alphas;
    auto overBlocks = [&](int64_t r, Value init,
                          function_ref<Value(Value, Value, Value)> body) {
      if (blocks == 1)
        return body(index(0), inRegisters[r], init);
      auto loop = scf::ForOp::create(
          b, loc, index(0), index(span), index(lanes), ValueRange{init},
          [&](OpBuilder &nb, Location, Value t, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            Value s = vector::LoadOp::create(b, loc, vecType, probs,
                                             ValueRange{index(r), t});
            scf::YieldOp::create(b, loc, body(t, s, acc[0]));
          });
      return loop.getResult(0);
    };
    for (int64_t r = 0; r < rows; ++r) {
      // A plain max (vmaxps): a NaN score still reaches the output
      // through exp and the sum, without IEEE maximum's NaN and -0 fix-ups
      // (about 50 instructions per row and block).
      Value lanesMax = overBlocks(
          r, splat(f32(std::numeric_limits<float>::lowest()), lanes),
          [&](Value, Value s, Value acc) -> Value {
            return arith::MaxNumFOp::create(b, loc, acc, s, kPlainMax);
          });
      Value blockMax = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::MAXNUMF, lanesMax, kPlainMax);
      Value oldMax = state[r];
      Value newMax =
          arith::MaxNumFOp::create(b, loc, oldMax, blockMax, kPlainMax);
      Value lanesSum =
          overBlocks(r, zero, [&](Value t, Value s, Value acc) -> Value {
            Value x = arith::SubFOp::create(b, loc, s, splat(newMax, lanes));
            Value p;
            if (dot) {
              p = keptPairWeights(x, index(r), t);
            } else {
              p = math::ExpOp::create(b, loc, x);
              vector::StoreOp::create(b, loc, rounded(p), probs,
                                      ValueRange{index(r), t});
            }
            return arith::AddFOp::create(b, loc, acc, p);
          });
      // An odd step (the last key) pairs its weight with a zero, as vTiles
      // pairs its row of v with zeros.
      if (dot && span % 2 != 0)
        memref::StoreOp::create(
            b, loc,
            arith::ConstantOp::create(b, loc, b.getFloatAttr(bf16(), 0.0)),
            weightPairs, ValueRange{index(r), index(span)});
      Value alpha = math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, oldMax, newMax));
      Value blockSum = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD, lanesSum);
      sums.push_back(arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, state[rows + r], alpha),
          blockSum));
      maxes.push_back(newMax);
      alphas.push_back(alpha);
    }

    // out[r] = out[r] * alpha[r] + sum_j p[r][j] * v[n, j0 + j, :] as a
    // small GEMM: the weights go through `probs` so that each p[r][j] is a
    // broadcast load, not a lane shuffle. Per group of column chunks, the
    // rows' accumulators stay in registers over a loop on the keys that
    // loads each row of v once and each weight once (unrolled over the
    // keys, LLVM kept every broadcast weight as a whole vector on the
    // stack).
    SmallVector<std::pair<int64_t, int64_t>> all = chunks();
    int64_t perGroup = std::max<int64_t>(1, maxAccumulators / rows);
    for (size_t g0 = 0; g0 < all.size(); g0 += perGroup) {
      ArrayRef<std::pair<int64_t, int64_t>> group =
          ArrayRef(all).slice(g0, std::min<size_t>(perGroup, all.size() - g0));
      if (dot) {
        pairWeightedValues(row, j0, span, alphas, group);
        continue;
      }
      SmallVector<Value> acc;
      for (auto [c0, chunk] : group)
        for (int64_t r = 0; r < rows; ++r) {
          Value o = vector::LoadOp::create(
              b, loc, VectorType::get({chunk}, b.getF32Type()), out,
              outAt(row[r], index(c0)));
          acc.push_back(
              arith::MulFOp::create(b, loc, o, splat(alphas[r], chunk)));
        }
      auto keysLoop = scf::ForOp::create(
          b, loc, index(0), index(span), index(1), acc,
          [&](OpBuilder &nb, Location, Value j, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            SmallVector<Value> weight, next;
            for (int64_t r = 0; r < rows; ++r)
              weight.push_back(memref::LoadOp::create(b, loc, probs,
                                                      ValueRange{index(r), j}));
            for (auto [i, piece] : llvm::enumerate(group)) {
              auto [c0, chunk] = piece;
              auto chunkType = VectorType::get({chunk}, b.getF32Type());
              Value key = add(j0, j);
              Value valueRow =
                  roundedValues
                      ? vector::LoadOp::create(b, loc, chunkType, roundedValues,
                                               ValueRange{key, index(c0)})
                            .getResult()
                      : vector::LoadOp::create(b, loc, chunkType, v,
                                               vAt(key, index(c0)))
                            .getResult();
              for (int64_t r = 0; r < rows; ++r)
                next.push_back(
                    vector::FMAOp::create(b, loc, splat(weight[r], chunk),
                                          valueRow, acc[i * rows + r]));
            }
            scf::YieldOp::create(b, loc, next);
          });
      for (auto [i, piece] : llvm::enumerate(group))
        for (int64_t r = 0; r < rows; ++r)
          vector::StoreOp::create(b, loc, keysLoop.getResult(i * rows + r), out,
                                  outAt(row[r], index(piece.first)));
    }
    SmallVector<Value> next(maxes);
    next.append(sums);
    return next;
  }

  //===--------------------------------------------------------------------===//
  // vdpbf16ps: both products on AVX512-BF16 without AMX
  //===--------------------------------------------------------------------===//
  //
  // The kv head's keys and values are packed as for AMX (kTiles, vTiles:
  // f32 slots of bf16 pairs) and the query rows also kept as bf16
  // (queryPairs), the weights as bf16 (weightPairs); the loop nest and its
  // softmax are the f32 one's. A product's k step is a pair of columns of
  // q (scores) or of keys (p @ v): emitPairStep, vdpbf16ps on each register
  // of slots.

  /// The unscaled scores q kᵀ of `rows` rows against the `lanes` keys from
  /// jt (a multiple of 16 for 16 lanes and more), a vector per row.
  SmallVector<Value> pairScoresOf(ArrayRef<Value> row, Value jt,
                                  int64_t lanes) {
    int64_t rows = row.size();
    int64_t pieceLanes = std::min<int64_t>(lanes, 16);
    int64_t pieces = lanes / pieceLanes;
    auto pieceType = VectorType::get({pieceLanes}, b.getF32Type());
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(pieceType, 0.0f));
    Value tile = arith::DivUIOp::create(b, loc, jt, index(16));
    Value slot = arith::RemUIOp::create(b, loc, jt, index(16));
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(depth / 2), index(1),
        SmallVector<Value>(rows * pieces, zero),
        [&](OpBuilder &nb, Location, Value p, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> slots, lhsPairs;
          for (int64_t t = 0; t < pieces; ++t)
            slots.push_back(vector::LoadOp::create(
                b, loc, pieceType, kTiles,
                ValueRange{add(tile, index(t)), p, slot}));
          Value column = arith::MulIOp::create(b, loc, p, index(2));
          for (Value i : row)
            lhsPairs.push_back(
                pairAt(queryPairs, ValueRange{inSuperBlock(i), column}));
          scf::YieldOp::create(
              b, loc,
              emitPairStep(b, loc, pieceLanes >= 4, slots, lhsPairs, acc));
        });
    SmallVector<Value> scores;
    for (int64_t r = 0; r < rows; ++r)
      scores.push_back(concatenated(
          ValueRange(loop.getResults()).slice(r * pieces, pieces)));
    return scores;
  }

  /// p = exp(x) for the scores x - m' <= 0 of a row (vector<lanes>), kept
  /// in weightPairs[row, t...] as bf16: 16 lanes at a time as the AMX
  /// loop computes and rounds them (weightOf, vcvtneps2bf16); a piece of
  /// fewer keys with math.exp and the exact rounding.
  Value keptPairWeights(Value x, Value row, Value t) {
    int64_t lanes = cast<VectorType>(x.getType()).getNumElements();
    if (lanes % 16 != 0) {
      Value p = math::ExpOp::create(b, loc, x);
      vector::StoreOp::create(b, loc, narrowed(p), weightPairs,
                              ValueRange{row, t});
      return p;
    }
    SmallVector<Value> pieces;
    for (int64_t i = 0; i < lanes; i += 16) {
      Value p = weightOf(vector::ExtractStridedSliceOp::create(
          b, loc, x, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{16},
          ArrayRef<int64_t>{1}));
      vector::StoreOp::create(b, loc,
                              x86vector::CvtPackedF32ToBF16Op::create(
                                  b, loc, VectorType::get({16}, bf16()), p),
                              weightPairs, ValueRange{row, add(t, index(i))});
      pieces.push_back(p);
    }
    return concatenated(pieces);
  }

  /// The bf16 pair at `at` of a bf16 memref as vector<1xi32>.
  Value pairAt(Value memref, ValueRange at) {
    Value pair = vector::LoadOp::create(b, loc, VectorType::get({2}, bf16()),
                                        memref, at);
    return vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
  }

  /// The vectors of `parts` (equal lengths, a power of two of them) end to
  /// end.
  Value concatenated(ValueRange parts) {
    SmallVector<Value> level(parts.begin(), parts.end());
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i < level.size(); i += 2) {
        int64_t lanes = cast<VectorType>(level[i].getType()).getNumElements();
        SmallVector<int64_t> both;
        for (int64_t j = 0; j < 2 * lanes; ++j)
          both.push_back(j);
        next.push_back(
            vector::ShuffleOp::create(b, loc, level[i], level[i + 1], both));
      }
      level = std::move(next);
    }
    return level[0];
  }

  /// out[r] = out[r] * alpha[r] + sum_j p[r][j] v[j0 + j, chunk] for the
  /// column chunks of `group` (16 columns each): a k step per pair of keys,
  /// the rows' weight pairs (weightPairs) against a register of vTiles per
  /// chunk. j0 is even (the steps and pieces of keys start at multiples of
  /// 2); an odd span's last pair is (p, 0) against (v, 0).
  void pairWeightedValues(ArrayRef<Value> row, Value j0, int64_t span,
                          ArrayRef<Value> alphas,
                          ArrayRef<std::pair<int64_t, int64_t>> group) {
    int64_t rows = row.size(), pieces = group.size();
    auto chunkType = VectorType::get({16}, b.getF32Type());
    SmallVector<Value> acc;
    for (int64_t r = 0; r < rows; ++r)
      for (auto [c0, chunk] : group) {
        Value o = vector::LoadOp::create(b, loc, chunkType, out,
                                         outAt(row[r], index(c0)));
        acc.push_back(arith::MulFOp::create(b, loc, o, splat(alphas[r], 16)));
      }
    Value firstPair = arith::DivUIOp::create(b, loc, j0, index(2));
    auto loop = scf::ForOp::create(
        b, loc, index(0), index((span + 1) / 2), index(1), acc,
        [&](OpBuilder &nb, Location, Value i, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> slots, lhsPairs;
          Value pair = add(firstPair, i);
          for (auto [c0, chunk] : group)
            slots.push_back(vector::LoadOp::create(
                b, loc, chunkType, vTiles, valuePairsAt(index(c0 / 16), pair)));
          Value key = arith::MulIOp::create(b, loc, i, index(2));
          for (int64_t r = 0; r < rows; ++r)
            lhsPairs.push_back(pairAt(weightPairs, ValueRange{index(r), key}));
          scf::YieldOp::create(
              b, loc, emitPairStep(b, loc, /*dot=*/true, slots, lhsPairs, acc));
        });
    for (int64_t r = 0; r < rows; ++r)
      for (auto [g, piece] : llvm::enumerate(group))
        vector::StoreOp::create(b, loc, loop.getResult(r * pieces + g), out,
                                outAt(row[r], index(piece.first)));
  }

  /// out[row] /= sum, or the mean of v for a fully masked row; a row whose
  /// visible scores all lie where masked keys still count is recomputed
  /// exactly. Its visible keys are [lo, len) (lo null: 0).
  void finishRow(Value n, Value row, Value len, Value lo, Value rowMax,
                 Value rowSum) {
    Value empty = mayBeEmpty() ? isEmptyRow(b, loc, lo, len) : Value();
    Value exact = needsExactRecompute(b, loc, rowMax, lo, len, keys);
    auto divideOrRecompute = [&] {
      scf::IfOp::create(
          b, loc, exact,
          [&](OpBuilder &nb, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            exactRow(n, row, len, lo);
            scf::YieldOp::create(b, loc);
          },
          [&](OpBuilder &nb, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            for (auto [c0, chunk] : chunks()) {
              auto chunkType = VectorType::get({chunk}, b.getF32Type());
              Value col = index(c0);
              Value o = vector::LoadOp::create(b, loc, chunkType, out,
                                               outAt(row, col));
              o = arith::DivFOp::create(b, loc, o, splat(rowSum, chunk));
              vector::StoreOp::create(b, loc, o, out, outAt(row, col));
            }
            scf::YieldOp::create(b, loc);
          });
    };
    // Without valid_lens every row sees a key at least (causal: itself).
    if (!mayBeEmpty()) {
      divideOrRecompute();
      return;
    }
    scf::IfOp::create(
        b, loc, empty,
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          forRange(0, width, 1, [&](Value c) {
            Value x = memref::LoadOp::create(b, loc, mean, ValueRange{c});
            memref::StoreOp::create(b, loc, x, out, outAt(row, c));
          });
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          divideOrRecompute();
          scf::YieldOp::create(b, loc);
        });
  }

  /// Whether a row may see no key at all (valid_lens <= 0, or below its
  /// window), and so take the mean of v: only with valid_lens (without, a
  /// row sees itself at least).
  bool mayBeEmpty() const { return static_cast<bool>(lens); }

  /// score(j) of `row`, with D2L's replacement for j >= len or j < lo.
  Value scoreOf(Value n, Value row, Value len, Value lo, Value j) {
    auto sum = scf::ForOp::create(
        b, loc, index(0), index(depth), index(1), ValueRange{f32(0.0f)},
        [&](OpBuilder &nb, Location, Value c, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value x = memref::LoadOp::create(b, loc, queryRows,
                                           ValueRange{inSuperBlock(row), c});
          Value y = amx || dot
                        ? keyFromTiles(c, j)
                        : memref::LoadOp::create(b, loc, kt, ktIndex(c, j))
                              .getResult();
          scf::YieldOp::create(
              b, loc, ValueRange{math::FmaOp::create(b, loc, x, y, acc[0])});
        });
    Value s = arith::MulFOp::create(b, loc, sum.getResult(0), f32(scale));
    return maskScore(b, loc, isKeyVisible(b, loc, j, lo, len), s);
  }

  /// The exact softmax over all keys of one row (three scalar passes).
  void exactRow(Value n, Value row, Value len, Value lo) {
    auto reduceKeys = [&](Value init,
                          function_ref<Value(Value j, Value acc)> step) {
      auto loop = scf::ForOp::create(
          b, loc, index(0), index(keys), index(1), ValueRange{init},
          [&](OpBuilder &nb, Location, Value j, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            scf::YieldOp::create(b, loc, ValueRange{step(j, acc[0])});
          });
      return loop.getResult(0);
    };
    Value rowMax = reduceKeys(f32(std::numeric_limits<float>::lowest()),
                              [&](Value j, Value acc) {
                                return arith::MaximumFOp::create(
                                    b, loc, acc, scoreOf(n, row, len, lo, j));
                              });
    Value rowSum = reduceKeys(f32(0.0f), [&](Value j, Value acc) {
      Value e = math::ExpOp::create(
          b, loc,
          arith::SubFOp::create(b, loc, scoreOf(n, row, len, lo, j), rowMax));
      return arith::AddFOp::create(b, loc, acc, e);
    });
    forRange(0, width, 1, [&](Value c) {
      memref::StoreOp::create(b, loc, f32(0.0f), out, outAt(row, c));
    });
    forRange(0, keys, 1, [&](Value j) {
      Value weight = rounded(arith::DivFOp::create(
          b, loc,
          math::ExpOp::create(b, loc,
                              arith::SubFOp::create(
                                  b, loc, scoreOf(n, row, len, lo, j), rowMax)),
          rowSum));
      forRange(0, width, 1, [&](Value c) {
        Value x = rounded(memref::LoadOp::create(b, loc, v, vAt(j, c)));
        Value acc = memref::LoadOp::create(b, loc, out, outAt(row, c));
        memref::StoreOp::create(b, loc,
                                math::FmaOp::create(b, loc, weight, x, acc),
                                out, outAt(row, c));
      });
    });
  }

  OpBuilder &b;
  Location loc;
  func::FuncOp func;
  Value q, k, v, lens, out, ropeCos, ropeSin, kt, mean, stats, probs, queryRows;
  /// AMX: both products on tdpbf16ps tiles (products(bf16) on an AMX CPU),
  /// `amxKeys` keys a step, the keys padded to a multiple of it.
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

struct AttnLowerFusedAttentionPass
    : mlir::attn::impl::AttnLowerFusedAttentionBase<
          AttnLowerFusedAttentionPass> {
  using AttnLowerFusedAttentionBase::AttnLowerFusedAttentionBase;

  void runOnOperation() override {
    SmallVector<FusedAttentionOp> ops;
    getOperation().walk([&](FusedAttentionOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    // The target's schedule; row-block, key-block and softmax-blocks
    // override it.
    FailureOr<attn::CpuSchedule> schedule = attn::cpuScheduleOf(getOperation());
    if (failed(schedule))
      return signalPassFailure();
    if (rowBlock)
      schedule->attentionRows = rowBlock;
    if (keyBlock)
      schedule->attentionKeys = keyBlock;
    if (softmaxBlocks)
      schedule->attentionSoftmaxBlocks = softmaxBlocks;
    for (FusedAttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before attn-lower-fused-attention");
        return signalPassFailure();
      }
      OpBuilder builder(op);
      FlashEmitter(builder, op.getLoc(), op, *schedule, parallel).emit();
      op.erase();
    }
  }
};

} // namespace
