//===- LowerFusedAttention.cpp - Flash attention as one GPU launch --------===//
//
// Lowers attn.fused_attention (on memrefs) to a launch of its own: a block
// per (batch x heads, tile of query rows), a thread per query row (or per
// slice of a wide head's output row), neighbouring rows of one batch entry
// and head in neighbouring threads. The block walks the keys in tiles that
// its threads copy into workgroup memory together, so that each key and
// value is read from global memory once per block instead of once per
// row. Each thread keeps its query row, its output row and the online
// softmax state in registers (vectors of the head width) and never
// materializes a score row:
//
//   len = valid_len (1-D or 2-D; min(., i + 1) when causal), clamped to Tk
//   lo = max(0, i + 1 - window) with a causal window, else 0
//   m = -inf, l = 0, acc = 0
//   for each key tile [j0, j0 + Bc) below the block's longest len and
//   from its first row's lo on:   (every thread, between barriers)
//     copy k[j0 .. j0 + Bc), v[j0 .. j0 + Bc) to workgroup memory; barrier
//     for max(j0, lo) <= j < min(j0 + Bc, len):
//       s = q · k[j] * scale; m' = max(m, s); c = exp(m - m');
//       p = exp(s - m'); l = l c + p; acc = acc c + p v[j]; m = m'
//     barrier
//   out[i] = acc / l, unless len <= lo or the row needs an exact recompute
//     (attn/IR/AttentionMask.h): then the row is marked for the exact launch
//
// With kv_heads(G), query head h reads k and v of kv head h / (H / G) where
// they are (no copy per query head). With rope, the thread rotates its
// query row once, and the block rotates each key row as it copies it
// (Hugging Face Llama's rotate_half, the tables of attn/IR/Rope.h).
//
// Skipping the keys at and past len is exact while exp(-1e6 - m)
// underflows; otherwise (every visible score below -1e6 + 104, or no
// visible key: D2L's uniform row) a pass over every key with D2L's
// replacement gives what D2L computes. That pass is a launch of its own:
// the main launch marks the rows that need it (and does not store them:
// `out` may be `q`'s buffer), then a warp per marked row (a few rows per
// warp in turn) recomputes it, its lanes on the columns l, l + 32, ... of
// the query, key and value rows, so that no thread of the main launch holds the
// registers of a second pass.
//
// A head too wide for one thread's registers (GpuAttentionTile::slices > 1)
// splits each row over neighbouring threads of a warp: each holds its share
// of the query row and of the output row (chunks interleaved with the other
// slices', GpuAttentionTile says why), the partial dot products are
// added with xor shuffles (in the same order in every thread of the row, so
// all see the same score), and, as a shuffle needs the whole warp, every
// thread walks the keys of the block's tiles from its first row's window
// to its longest row, a key its row does not see leaving its state as it
// was.
//
//===----------------------------------------------------------------------===//

#include "attn/Attention/OnlineSoftmax.h"
#include "attn/Attention/RotateHalf.h"
#include "attn/GPU/MmaFragments.h"
#include "attn/GPU/Passes.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPULOWERFUSEDATTENTION
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct Lowering {
  FusedAttentionOp op;
  OpBuilder &b;
  Location loc;
  Value q, k, v, lens, out, ropeCos, ropeSin;
  bool causal;
  float scale;
  int64_t heads, kvHeads, batches, queries, keys, dk, dv;
  /// The causal window, when it hides keys (window < Tq).
  std::optional<int64_t> window;
  /// The block's rows, key tile and slices of an output row.
  GpuAttentionTile tile;
  GpuTargetDescription target;
  /// Which rows the exact pass recomputes (i32 per batch entry, head and
  /// row), set by the main launch, read by the exact one.
  Value exactRows;
  /// products(bf16): the type q, k, v and the weights are rounded to.
  FloatType products;

  Lowering(FusedAttentionOp op, OpBuilder &b,
           const GpuTargetDescription &target)
      : op(op), b(b), loc(op.getLoc()), q(op.getQ()), k(op.getK()),
        v(op.getV()), lens(op.getValidLens()), out(op.getInit()),
        ropeCos(op.getRopeCos()), ropeSin(op.getRopeSin()),
        causal(op.getCausal()), scale(op.getScale().convertToFloat()),
        heads(op.getHeads()), kvHeads(op.getNumKvHeads()) {
    auto qType = cast<MemRefType>(q.getType());
    auto vType = cast<MemRefType>(v.getType());
    batches = qType.getDimSize(0);
    queries = qType.getDimSize(1);
    keys = cast<MemRefType>(k.getType()).getDimSize(1);
    dk = qType.getDimSize(2) / heads;
    dv = vType.getDimSize(2) / kvHeads;
    if (std::optional<uint64_t> w = op.getWindow())
      window = hidingWindow(static_cast<int64_t>(*w), queries);
    tile = attentionTile(target, queries, keys, dk, dv);
    this->target = target;
    if (std::optional<Type> type = op.getProducts())
      products = cast<FloatType>(*type);
  }

  /// `x` as an operand of a product (productOperand).
  Value rounded(Value x) { return productOperand(b, loc, x, products); }

  /// A split row's share of its query row, the chunks of `chunk` columns
  /// at sliceOffset + c0 * slices for c0 = 0, chunk, ... < share (the
  /// interleaving of GpuAttentionTile); with rope, each chunk rotated from
  /// its partner chunk in the other half (a chunk lies within one half).
  Value queryShare(Value batch, Value row, Value qColumn, Value sliceOffset) {
    int64_t chunk = tile.keyChunk;
    auto type = VectorType::get({chunk}, b.getF32Type());
    auto at = [&](Value c) -> Value {
      return vector::LoadOp::create(
          b, loc, type, q,
          ValueRange{batch, row, arith::AddIOp::create(b, loc, qColumn, c)});
    };
    Value share;
    for (int64_t c0 = 0; c0 < tile.share; c0 += chunk) {
      Value column =
          arith::AddIOp::create(b, loc, sliceOffset, index(c0 * tile.slices));
      Value x = at(column);
      if (ropeCos) {
        int64_t half = dk / 2;
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            column, index(half));
        Value partner = at(arith::SelectOp::create(
            b, loc, first, arith::AddIOp::create(b, loc, column, index(half)),
            arith::SubIOp::create(b, loc, column, index(half))));
        Value ropeColumn = arith::SelectOp::create(
            b, loc, first, column,
            arith::SubIOp::create(b, loc, column, index(half)));
        Value cos = vector::LoadOp::create(b, loc, type, ropeCos,
                                           ValueRange{row, ropeColumn});
        Value sin = vector::LoadOp::create(b, loc, type, ropeSin,
                                           ValueRange{row, ropeColumn});
        x = rotateHalf(b, loc, x, partner, cos, sin, first);
      }
      share = append(share, rounded(x));
    }
    return share;
  }

  /// `front` ++ `back` (vectors; front null: back).
  Value append(Value front, Value back) {
    if (!front)
      return back;
    int64_t lanes = cast<VectorType>(front.getType()).getDimSize(0) +
                    cast<VectorType>(back.getType()).getDimSize(0);
    SmallVector<int64_t> both;
    for (int64_t i = 0; i < lanes; ++i)
      both.push_back(i);
    return vector::ShuffleOp::create(b, loc, front, back, both);
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value f32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value splat(float value, int64_t lanes) {
    auto type = VectorType::get({lanes}, b.getF32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }

  /// The end of the visible keys of row `row` of batch entry `batch`
  /// (attn/IR/AttentionMask.h): may be <= 0.
  Value lengthOf(Value batch, Value row) {
    Value len;
    if (lens) {
      bool twoD = cast<MemRefType>(lens.getType()).getRank() == 2;
      Value raw =
          twoD ? memref::LoadOp::create(b, loc, lens, ValueRange{batch, row})
               : memref::LoadOp::create(b, loc, lens, ValueRange{batch});
      len = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
    }
    return visibleEnd(b, loc, len, row, keys, causal);
  }

  /// The first visible key of `row`; null (0) without a window.
  Value lowerOf(Value row) { return visibleBegin(b, loc, row, window); }

  /// `x` (a row of q, vector<dk>) rotated by rope at position `t`: its
  /// halves rotated, end to end.
  Value rotate(Value x, Value t) {
    int64_t half = dk / 2;
    auto halfType = VectorType::get({half}, b.getF32Type());
    Value cos = vector::LoadOp::create(b, loc, halfType, ropeCos,
                                       ValueRange{t, index(0)});
    Value sin = vector::LoadOp::create(b, loc, halfType, ropeSin,
                                       ValueRange{t, index(0)});
    auto [first, second] = rotateHalves(b, loc, lanesOf(x, 0, half),
                                        lanesOf(x, half, half), cos, sin);
    return append(first, second);
  }

  /// Lanes per chunk of a row of `width` a thread walks a few at a time.
  static int64_t chunkLanes(int64_t width) {
    int64_t lanes = std::min<int64_t>(width, 8);
    while (width % lanes != 0)
      lanes /= 2;
    return lanes;
  }

  /// Lanes [c0, c0 + lanes) of `row` (a shuffle: vector.extract_strided_
  /// slice has no NVVM lowering here).
  Value lanesOf(Value row, int64_t c0, int64_t lanes) {
    SmallVector<int64_t> positions;
    for (int64_t c = c0; c < c0 + lanes; ++c)
      positions.push_back(c);
    return vector::ShuffleOp::create(b, loc, row, row, positions);
  }

  /// The online-softmax state (m, l, acc) after one more key, of score `s`;
  /// `values(c0, lanes)` loads lanes [c0, c0 + lanes) of its value slice
  /// (`lanes` at a time: chunkLanes of the slice unless given).
  /// The accumulators are updated a chunk at a time, so that a thread never
  /// holds a whole value row beside them. When `visible` (if given) is
  /// false the state stays as it was: m, and l and acc scaled by 1 plus 0
  /// (selects of scalars, not of the accumulators, which would need both
  /// rows in registers).
  SmallVector<Value> update(ValueRange state, Value s,
                            function_ref<Value(int64_t, int64_t)> values,
                            Value visible = Value(), int64_t lanes = 0) {
    KeyStep key = onlineKeyStep(b, loc, state[0], state[1], s, visible);
    return {key.max, key.sum,
            accumulate(state[2], key.alpha, key.weight, values, lanes)};
  }

  /// acc alpha + weight v, a chunk of `lanes` at a time (see update). The
  /// sum l takes the weight as it is; with products(bf16), p @ v its
  /// rounding.
  Value accumulate(Value acc, Value alpha, Value weight,
                   function_ref<Value(int64_t, int64_t)> values,
                   int64_t lanes = 0) {
    int64_t width = cast<VectorType>(acc.getType()).getDimSize(0);
    if (lanes == 0)
      lanes = chunkLanes(width);
    Value product = rounded(weight);
    Value next;
    for (int64_t c0 = 0; c0 < width; c0 += lanes) {
      Value scaled = rescaled(b, loc, lanesOf(acc, c0, lanes), alpha);
      next =
          append(next, accumulated(b, loc, scaled, product, values(c0, lanes)));
    }
    return next;
  }

  /// Element c of a row at position t rotated by rope, the row's elements
  /// given by `at`: x[c] cos[c mod d/2] -+ x[c +- d/2] sin[c mod d/2], the
  /// first half's partner negated (rotate_half).
  Value rotatedElement(function_ref<Value(Value)> at, Value t, Value c) {
    Value x = at(c);
    int64_t half = dk / 2;
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                        index(half));
    Value column = arith::RemUIOp::create(b, loc, c, index(half));
    Value other = at(arith::SelectOp::create(
        b, loc, first, arith::AddIOp::create(b, loc, c, index(half)), column));
    Value cos = memref::LoadOp::create(b, loc, ropeCos, ValueRange{t, column});
    Value sin = memref::LoadOp::create(b, loc, ropeSin, ValueRange{t, column});
    return rotateHalf(b, loc, x, other, cos, sin, first);
  }

  /// The dot product of `width` lanes of the query and a key row, both
  /// given `lanes` at a time (`queryChunk(c0, lanes)`, `keyChunk(c0)`), so
  /// that a thread holds no more than its query row and a chunk of the key
  /// row at a time (a head of 128 stays within the registers).
  Value dot(function_ref<Value(int64_t, int64_t)> queryChunk, int64_t width,
            int64_t lanes, function_ref<Value(int64_t)> keyChunk) {
    Value dot;
    for (int64_t c0 = 0; c0 < width; c0 += lanes) {
      Value partial = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::ADD,
          arith::MulFOp::create(b, loc, queryChunk(c0, lanes), keyChunk(c0)),
          Value(), arith::FastMathFlags::reassoc);
      dot = dot ? arith::AddFOp::create(b, loc, dot, partial).getResult()
                : partial;
    }
    return dot;
  }

  Value scaled(Value dot) {
    return arith::MulFOp::create(b, loc, dot, f32(scale));
  }

  /// m, l and acc (`width` columns) before the first key.
  SmallVector<Value> initialState(int64_t width) {
    return {f32(-std::numeric_limits<float>::infinity()), f32(0.0f),
            splat(0.0f, width)};
  }

  /// The longest visible length of the block's rows [row0, row0 +
  /// blockRows) (clamped to Tq), the same in every thread: the last row's
  /// without 2-D valid_lens (lengths grow with the row), else the largest.
  Value blockLength(Value batch, Value row0, int64_t blockRows) {
    bool twoD = lens && cast<MemRefType>(lens.getType()).getRank() == 2;
    auto rowAt = [&](int64_t r) -> Value {
      return arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, row0, index(r)),
          index(queries - 1));
    };
    int64_t rows = std::min(blockRows, queries);
    if (!twoD)
      return lengthOf(batch, rowAt(rows - 1));
    Value longest = lengthOf(batch, rowAt(0));
    for (int64_t r = 1; r < rows; ++r)
      longest =
          arith::MaxSIOp::create(b, loc, longest, lengthOf(batch, rowAt(r)));
    return longest;
  }

  /// Copies key rows [j0, j0 + keyRows) of k (rotated, with rope) and v
  /// (the kv head's columns from kColumn0, vColumn0) into the workgroup
  /// tiles, `threads` threads each taking every threads-th element; rows
  /// past Tk copy row Tk - 1 (never read).
  void stageTiles(Value thread, int64_t threads, Value batch, Value j0,
                  Value kColumn0, Value vColumn0, Value kTile, Value vTile) {
    auto copy = [&](int64_t width, function_ref<Value(Value, Value)> element,
                    Value into) {
      int64_t elements = tile.keyRows * width;
      int64_t perThread = llvm::divideCeil(elements, threads);
      // One element of the thread's e-th round.
      auto round = [&](Value e) {
        Value linear = arith::AddIOp::create(
            b, loc, thread, arith::MulIOp::create(b, loc, e, index(threads)));
        OpBuilder::InsertionGuard guard(b);
        if (elements % threads != 0) {
          Value inRange = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, linear, index(elements));
          auto branch = scf::IfOp::create(b, loc, inRange, false);
          b.setInsertionPointToStart(branch.thenBlock());
        }
        Value i = arith::DivUIOp::create(b, loc, linear, index(width));
        Value c = arith::RemUIOp::create(b, loc, linear, index(width));
        Value key = arith::MinSIOp::create(
            b, loc, arith::AddIOp::create(b, loc, j0, i), index(keys - 1));
        memref::StoreOp::create(b, loc, rounded(element(key, c)), into,
                                ValueRange{i, c});
      };
      if (perThread == 1) {
        round(index(0));
        return;
      }
      // A loop, not unrolled: a thread's registers hold its query row and
      // accumulators across the copy, and little else fits beside them.
      auto loop =
          scf::ForOp::create(b, loc, index(0), index(perThread), index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      round(loop.getInductionVar());
    };
    auto at = [&](Value memref, Value key, Value column0, Value c) -> Value {
      return memref::LoadOp::create(
          b, loc, memref,
          ValueRange{batch, key, arith::AddIOp::create(b, loc, column0, c)});
    };
    copy(
        dk,
        [&](Value key, Value c) -> Value {
          auto element = [&](Value cc) -> Value {
            return at(k, key, kColumn0, cc);
          };
          return ropeCos ? rotatedElement(element, key, c) : element(c);
        },
        kTile);
    copy(
        dv,
        [&](Value key, Value c) -> Value { return at(v, key, vColumn0, c); },
        vTile);
  }

  /// The first columns of a head's query row and of its kv head's key and
  /// value rows (query head h reads kv head h / (H / G)).
  struct HeadColumns {
    Value q, k, v;
  };
  HeadColumns headColumns(Value head) {
    Value kvHead =
        kvHeads == heads
            ? head
            : arith::DivUIOp::create(b, loc, head, index(heads / kvHeads));
    Value qColumn = arith::MulIOp::create(b, loc, head, index(dk));
    Value kColumn = kvHeads == heads
                        ? qColumn
                        : arith::MulIOp::create(b, loc, kvHead, index(dk));
    return {qColumn, kColumn, arith::MulIOp::create(b, loc, kvHead, index(dv))};
  }

  /// The first column of query head `head`'s output row in out (its kv
  /// head's value columns, when every head has its own).
  Value outputColumn(Value head, const HeadColumns &columns) {
    return kvHeads == heads
               ? columns.v
               : arith::MulIOp::create(b, loc, head, index(dv)).getResult();
  }

  /// Row `row` of batch entry x head `n` in exactRows.
  Value rowIndex(Value n, Value row) {
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, n, index(queries)), row);
  }

  /// A launch of blocks of one warp, each checking exactRowsPerWarp rows
  /// (of batch entry x head, row) in turn, that recomputes the rows
  /// exactRows marks with D2L's -1e6 for every key, and frees exactRows. Lane l
  /// holds the (rotated) query columns l, l + 32, ... and accumulates the value
  /// columns l, l + 32,
  /// ...; the warp adds its lanes' partial dot products with shuffles, so
  /// every lane has every score. A row not marked walks no key.
  void buildExactLaunch() {
    int64_t warp = target.warpSize;
    int64_t qPerLane = llvm::divideCeil(dk, warp);
    int64_t vPerLane = llvm::divideCeil(dv, warp);
    int64_t rows = batches * heads * queries;
    int64_t rowsPerWarp = exactRowsPerWarp(target, rows);
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, index(llvm::divideCeil(rows, rowsPerWarp)), one, one,
        index(warp), one, one, /*dynamicSharedMemorySize=*/nullptr,
        b.getType<gpu::AsyncTokenType>(), /*asyncDependencies=*/ValueRange{});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&launch.getBody().front());
      Type f32Type = b.getF32Type();
      Value lane = launch.getThreadIds().x;
      // The warp's rows, one after another (a row past the last one reads
      // row 0's mark and is not walked).
      Value firstRow = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                             index(rowsPerWarp));
      auto rowLoop =
          scf::ForOp::create(b, loc, index(0), index(rowsPerWarp), one);
      b.setInsertionPoint(rowLoop.getBody()->getTerminator());
      Value warpRow =
          arith::AddIOp::create(b, loc, firstRow, rowLoop.getInductionVar());
      Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         warpRow, index(rows));
      Value flatRow = arith::SelectOp::create(b, loc, live, warpRow, index(0));
      Value row = arith::RemUIOp::create(b, loc, flatRow, index(queries));
      Value n = arith::DivUIOp::create(b, loc, flatRow, index(queries));
      Value batch = arith::DivUIOp::create(b, loc, n, index(heads));
      Value head = arith::RemUIOp::create(b, loc, n, index(heads));
      HeadColumns columns = headColumns(head);
      Value vColumn = columns.v, outColumn = outputColumn(head, columns);
      Value marked = arith::AndIOp::create(
          b, loc, live,
          arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ne,
              memref::LoadOp::create(b, loc, exactRows, ValueRange{flatRow}),
              arith::ConstantIntOp::create(b, loc, 0, 32)));
      // Column i of this lane's share (l + 32 i) and whether it exists.
      auto column = [&](int64_t i) -> Value {
        return arith::AddIOp::create(b, loc, lane, index(i * warp));
      };
      auto below = [&](Value c, int64_t bound) -> Value {
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     index(bound));
      };
      // Element c of a row of `matrix` (q or k) at position t, rotated
      // with rope; columns past the row read column 0 (their share of the
      // dot product is dropped).
      auto rotated = [&](Value matrix, Value t, Value column0,
                         Value c) -> Value {
        Value safe = arith::SelectOp::create(b, loc, below(c, dk), c, index(0));
        auto at = [&](Value cc) -> Value {
          return memref::LoadOp::create(
              b, loc, matrix,
              ValueRange{batch, t, arith::AddIOp::create(b, loc, column0, cc)});
        };
        return ropeCos ? rotatedElement(at, t, safe) : at(safe);
      };
      SmallVector<Value> query;
      for (int64_t i = 0; i < qPerLane; ++i)
        query.push_back(rounded(rotated(q, row, columns.q, column(i))));
      Value lo = lowerOf(row), len = lengthOf(batch, row);
      Value keysToWalk =
          arith::SelectOp::create(b, loc, marked, index(keys), index(0));
      // Lanes [c0, c0 + lanes) of this lane's share of key j's value row.
      auto valuesOf = [&](Value j, int64_t c0, int64_t lanes) -> Value {
        SmallVector<Value> elements;
        for (int64_t i = c0; i < c0 + lanes; ++i) {
          Value c = column(i);
          Value safe =
              arith::SelectOp::create(b, loc, below(c, dv), c, index(0));
          elements.push_back(rounded(memref::LoadOp::create(
              b, loc, v,
              ValueRange{batch, j,
                         arith::AddIOp::create(b, loc, vColumn, safe)})));
        }
        return vector::FromElementsOp::create(
            b, loc, VectorType::get({lanes}, f32Type), elements);
      };
      SmallVector<Value> result = exactRow(
          b, loc, keysToWalk, ValueRange{splat(0.0f, vPerLane)},
          [&](Value j) -> Value {
            Value partial = f32(0.0f);
            for (int64_t i = 0; i < qPerLane; ++i) {
              Value term = arith::MulFOp::create(
                  b, loc, query[i],
                  rounded(rotated(k, j, columns.k, column(i))));
              if (dk % warp != 0)
                term = arith::SelectOp::create(b, loc, below(column(i), dk),
                                               term, f32(0.0f));
              partial = arith::AddFOp::create(b, loc, partial, term);
            }
            for (int64_t offset = warp / 2; offset >= 1; offset /= 2)
              partial = arith::AddFOp::create(
                  b, loc, partial,
                  gpu::ShuffleOp::create(
                      b, loc, partial, static_cast<int32_t>(offset),
                      static_cast<int32_t>(warp), gpu::ShuffleMode::XOR)
                      .getShuffleResult());
            return maskScore(b, loc, isKeyVisible(b, loc, j, lo, len),
                             scaled(partial));
          },
          /*visibleOf=*/{},
          [&](ValueRange acc, Value alpha, Value weight,
              Value j) -> SmallVector<Value> {
            return {accumulate(acc[0], alpha, weight,
                               [&](int64_t c0, int64_t lanes) {
                                 return valuesOf(j, c0, lanes);
                               })};
          });
      auto stores = scf::IfOp::create(b, loc, marked, false);
      b.setInsertionPointToStart(stores.thenBlock());
      for (int64_t i = 0; i < vPerLane; ++i) {
        Value c = column(i);
        OpBuilder::InsertionGuard inner(b);
        if (dv % warp != 0) {
          auto inside = scf::IfOp::create(b, loc, below(c, dv), false);
          b.setInsertionPointToStart(inside.thenBlock());
        }
        Value acc = vector::ExtractOp::create(b, loc, result[2], i);
        memref::StoreOp::create(
            b, loc, normalized(b, loc, acc, result[1]), out,
            ValueRange{batch, row,
                       arith::AddIOp::create(b, loc, outColumn, c)});
      }
      b.setInsertionPointToEnd(&launch.getBody().front());
      gpu::TerminatorOp::create(b, loc);
    }
    memref::DeallocOp::create(b, loc, exactRows);
  }

  /// exactRows, then the main launch: `blocks` blocks of `threads`
  /// threads with workgroup buffers of `kTileType` and `vTileType`; the
  /// builder is left at the start of its body.
  gpu::LaunchOp mainLaunch(int64_t blocks, int64_t threads,
                           MemRefType kTileType, MemRefType vTileType) {
    exactRows = memref::AllocOp::create(
        b, loc, MemRefType::get({batches * heads * queries}, b.getI32Type()));
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, index(blocks), one, one, index(threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, b.getType<gpu::AsyncTokenType>(),
        /*asyncDependencies=*/ValueRange{}, TypeRange{kTileType, vTileType});
    b.setInsertionPointToStart(&launch.getBody().front());
    return launch;
  }

  /// The attention as a launch of tensor-core tiles (GpuMmaAttentionTile;
  /// the file comment's loop, a warp's 16 rows at a time): per key tile,
  /// S = Q K^T as m16n8k16 mma tiles (Q's fragments held in registers
  /// from the start, K's read from the staged tile), the scores scaled,
  /// masked (a key a row does not see scores -inf: its weight is 0, as when
  /// skipped), the online softmax per row with the row's four lanes'
  /// maxima and sums combined by shuffles, the weights rounded to bf16
  /// and, as the accumulator fragments of S are the A fragments of P (two
  /// n8 tiles of keys are one k16 step), O += P V as mma tiles against the
  /// staged, transposed values. Rows go to the exact launch as in build().
  void buildWithTensorCores(const GpuMmaAttentionTile &mmaTile) {
    Type f32Type = b.getF32Type(), bf16 = b.getBF16Type();
    constexpr int64_t perRegister = 2, depth = mma::depthOf(perRegister);
    int64_t dkPadded = llvm::alignTo(dk, depth);
    int64_t dvPadded = llvm::alignTo(dv, depth);
    int64_t keyRows = mmaTile.keyRows, blockRows = mmaTile.queryRows();
    int64_t rowBlocks = llvm::divideCeil(queries, blockRows);
    int64_t threads = mmaTile.warps * target.warpSize;
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    auto kTileType =
        MemRefType::get({keyRows, dkPadded + mmaTile.padding}, bf16,
                        MemRefLayoutAttrInterface{}, workgroup);
    auto vTileType =
        MemRefType::get({dvPadded, keyRows + mmaTile.padding}, bf16,
                        MemRefLayoutAttrInterface{}, workgroup);
    Value one = index(1);
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch =
        mainLaunch(batches * heads * rowBlocks, threads, kTileType, vTileType);
    Value kTile = launch.getWorkgroupAttributions()[0];
    Value vTile = launch.getWorkgroupAttributions()[1];
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
    auto add = [&](Value x, int64_t y) -> Value {
      return y == 0 ? x : arith::AddIOp::create(b, loc, x, index(y));
    };
    auto below = [&](Value x, int64_t bound) -> Value {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x,
                                   index(bound));
    };
    auto narrow = [&](Value x) -> Value {
      return arith::TruncFOp::create(b, loc, bf16, x);
    };

    // Uniform in the block: its batch entry, head, first row, key tiles.
    Value n = arith::DivUIOp::create(b, loc, block, index(rowBlocks));
    Value row0 = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, block, index(rowBlocks)),
        index(blockRows));
    Value batch = arith::DivUIOp::create(b, loc, n, index(heads));
    Value head = arith::RemUIOp::create(b, loc, n, index(heads));
    HeadColumns columns = headColumns(head);
    Value blockEnd = arith::MaxSIOp::create(
        b, loc, blockLength(batch, row0, blockRows), index(0));
    Value firstTile = index(0);
    if (Value blockLo = lowerOf(row0))
      firstTile = arith::DivUIOp::create(b, loc, blockLo, index(keyRows));
    Value lastTile = arith::DivUIOp::create(b, loc, add(blockEnd, keyRows - 1),
                                            index(keyRows));

    // This lane's rows (group g: rows g and g + 8 of its warp's 16) and
    // its pair t; rows past Tq compute row Tq - 1 and store nothing.
    Value warp = arith::DivUIOp::create(b, loc, thread, index(32));
    Value lane = arith::RemUIOp::create(b, loc, thread, index(32));
    Value group = arith::DivUIOp::create(b, loc, lane, index(4));
    Value pair = arith::RemUIOp::create(b, loc, lane, index(4));
    Value twoPairs = arith::MulIOp::create(b, loc, pair, index(2));
    Value warpRow0 = arith::AddIOp::create(
        b, loc, row0, arith::MulIOp::create(b, loc, warp, index(16)));
    SmallVector<Value, 2> ownRows, rows, lens, los;
    for (int64_t i = 0; i < 2; ++i) {
      ownRows.push_back(add(arith::AddIOp::create(b, loc, warpRow0, group),
                            mma::rowOffsetC(i)));
      rows.push_back(
          arith::MinSIOp::create(b, loc, ownRows[i], index(queries - 1)));
      lens.push_back(lengthOf(batch, rows[i]));
      los.push_back(lowerOf(rows[i]));
    }

    // Q's A fragments, one per 16 of dk (rotated with rope, rounded to
    // bf16, columns past dk 0), read before anything is written: `out` may
    // be `q`'s buffer.
    auto qAt = [&](Value row, Value c) -> Value {
      auto at = [&](Value cc) -> Value {
        return memref::LoadOp::create(
            b, loc, q,
            ValueRange{batch, row,
                       arith::AddIOp::create(b, loc, columns.q, cc)});
      };
      Value safe =
          dk == dkPadded
              ? c
              : arith::SelectOp::create(b, loc, below(c, dk), c, index(0));
      Value x = ropeCos ? rotatedElement(at, row, safe) : at(safe);
      if (dk != dkPadded)
        x = arith::SelectOp::create(b, loc, below(c, dk), x, f32(0.0f));
      return narrow(x);
    };
    auto fragmentType = VectorType::get({mma::kRegistersA, perRegister}, bf16);
    SmallVector<Value> queryFragments;
    for (int64_t kc = 0; kc < dkPadded / depth; ++kc) {
      SmallVector<Value> elements;
      for (int64_t r = 0; r < mma::kRegistersA; ++r)
        for (int64_t e = 0; e < perRegister; ++e)
          elements.push_back(
              qAt(rows[r % 2],
                  add(twoPairs,
                      kc * depth + mma::columnOffsetA(r, perRegister) + e)));
      queryFragments.push_back(
          vector::FromElementsOp::create(b, loc, fragmentType, elements));
    }

    auto accType = VectorType::get({2, 2}, f32Type);
    Value zeros = arith::ConstantOp::create(
        b, loc, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
    float minusInfinity = -std::numeric_limits<float>::infinity();
    // State: m and l of the two rows, then the output fragments.
    SmallVector<Value> init = {f32(minusInfinity), f32(minusInfinity),
                               f32(0.0f), f32(0.0f)};
    int64_t outputTiles = dvPadded / mma::kColumns;
    init.append(outputTiles, zeros);
    auto tiles = scf::ForOp::create(
        b, loc, firstTile, lastTile, one, init,
        [&](OpBuilder &nb, Location, Value t, ValueRange state) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value j0 = arith::MulIOp::create(b, loc, t, index(keyRows));
          stageMmaTiles(thread, threads, batch, j0, columns, keyRows, dkPadded,
                        dvPadded, kTile, vTile);
          gpu::BarrierOp::create(b, loc);
          auto bType = VectorType::get({mma::kRegistersB, perRegister}, bf16);
          auto registerType = VectorType::get({perRegister}, bf16);
          // B's fragment from a staged tile: row `outer` (a key of kTile,
          // a value column of vTile), k from k0 + 2 pair.
          auto fragmentB = [&](Value tileBuffer, Value outer, int64_t k0) {
            SmallVector<Value> registers;
            Value result = arith::ConstantOp::create(
                b, loc, bType, cast<TypedAttr>(b.getZeroAttr(bType)));
            for (int64_t r = 0; r < mma::kRegistersB; ++r)
              result = vector::InsertOp::create(
                  b, loc,
                  vector::LoadOp::create(
                      b, loc, registerType, tileBuffer,
                      ValueRange{
                          outer,
                          add(twoPairs, k0 + mma::rowOffsetB(r, perRegister))}),
                  result, r);
            return result;
          };
          // S, masked and scaled: per n8 tile of keys, per row i and
          // column j, the key j0 + 8 nt + 2 pair + j.
          int64_t keyTiles = keyRows / mma::kColumns;
          SmallVector<SmallVector<Value, 4>> scores(keyTiles);
          SmallVector<Value, 2> tileMax = {f32(minusInfinity),
                                           f32(minusInfinity)};
          for (int64_t nt = 0; nt < keyTiles; ++nt) {
            Value s = zeros;
            Value keyRow = add(group, nt * mma::kColumns);
            for (int64_t kc = 0; kc < dkPadded / depth; ++kc)
              s = nvgpu::MmaSyncOp::create(
                  b, loc, queryFragments[kc],
                  fragmentB(kTile, keyRow, kc * depth), s,
                  ArrayRef<int64_t>{mma::kRows, mma::kColumns, depth});
            for (int64_t i = 0; i < 2; ++i)
              for (int64_t j = 0; j < 2; ++j) {
                Value key = add(arith::AddIOp::create(b, loc, j0, twoPairs),
                                nt * mma::kColumns + mma::columnOffsetC(j));
                Value score = scaled(vector::ExtractOp::create(
                    b, loc, s, ArrayRef<int64_t>{i, j}));
                score = arith::SelectOp::create(
                    b, loc, isKeyVisible(b, loc, key, los[i], lens[i]), score,
                    f32(minusInfinity));
                scores[nt].push_back(score);
                tileMax[i] =
                    arith::MaximumFOp::create(b, loc, tileMax[i], score);
              }
          }
          // A row's four lanes (one group) hold its 2 keys of each n8 tile.
          auto acrossGroup = [&](Value x, bool maximum) {
            for (int32_t offset : {1, 2}) {
              Value other = gpu::ShuffleOp::create(b, loc, x, offset, 32,
                                                   gpu::ShuffleMode::XOR)
                                .getShuffleResult();
              x = maximum
                      ? arith::MaximumFOp::create(b, loc, x, other).getResult()
                      : arith::AddFOp::create(b, loc, x, other).getResult();
            }
            return x;
          };
          SmallVector<Value> next(state.begin(), state.end());
          SmallVector<Value, 2> corrections, newMax;
          for (int64_t i = 0; i < 2; ++i) {
            // No visible key yet: nothing to correct, no weight.
            OnlineStep step = advanceMax(
                b, loc, state[i], acrossGroup(tileMax[i], /*maximum=*/true),
                ScoreMax::Ieee, StepGuard::Seen);
            newMax.push_back(step.newMax);
            corrections.push_back(rescaleFactor(b, loc, step));
            Value sum = f32(0.0f);
            for (int64_t nt = 0; nt < keyTiles; ++nt)
              for (int64_t j = 0; j < 2; ++j) {
                Value &score = scores[nt][2 * i + j];
                score = stepWeight(b, loc, score, step);
                sum = arith::AddFOp::create(b, loc, sum, score);
              }
            next[i] = newMax[i];
            next[2 + i] = advanceSum(b, loc, state[2 + i], corrections[i],
                                     acrossGroup(sum, /*maximum=*/false));
          }
          // O scaled by the rows' corrections, then O += P V.
          Value correction = vector::FromElementsOp::create(
              b, loc, accType,
              ValueRange{corrections[0], corrections[0], corrections[1],
                         corrections[1]});
          SmallVector<Value> weightFragments;
          for (int64_t kc = 0; kc < keyRows / depth; ++kc) {
            SmallVector<Value> elements;
            for (int64_t r = 0; r < mma::kRegistersA; ++r)
              for (int64_t e = 0; e < perRegister; ++e)
                // Register r: row r % 2, keys 8 (r / 2) on: n8 tile
                // 2 kc + r / 2, its element (r % 2, e).
                elements.push_back(
                    narrow(scores[2 * kc + r / 2][2 * (r % 2) + e]));
            weightFragments.push_back(
                vector::FromElementsOp::create(b, loc, fragmentType, elements));
          }
          for (int64_t ot = 0; ot < outputTiles; ++ot) {
            Value o = arith::MulFOp::create(b, loc, state[4 + ot], correction);
            Value valueColumn = add(group, ot * mma::kColumns);
            for (int64_t kc = 0; kc < keyRows / depth; ++kc)
              o = nvgpu::MmaSyncOp::create(
                  b, loc, weightFragments[kc],
                  fragmentB(vTile, valueColumn, kc * depth), o,
                  ArrayRef<int64_t>{mma::kRows, mma::kColumns, depth});
            next[4 + ot] = o;
          }
          // The next tile overwrites these only when every warp is done.
          gpu::BarrierOp::create(b, loc);
          scf::YieldOp::create(b, loc, next);
        });

    for (int64_t i = 0; i < 2; ++i) {
      Value m = tiles.getResult(i), l = tiles.getResult(2 + i);
      Value again = arith::OrIOp::create(
          b, loc, isEmptyRow(b, loc, los[i], lens[i]),
          needsExactRecompute(b, loc, m, los[i], lens[i], keys));
      Value stores = below(ownRows[i], queries);
      {
        // The group's first lane marks the row.
        OpBuilder::InsertionGuard inner(b);
        auto branch = scf::IfOp::create(
            b, loc,
            arith::AndIOp::create(
                b, loc, stores,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pair,
                                      index(0))),
            false);
        b.setInsertionPointToStart(branch.thenBlock());
        memref::StoreOp::create(
            b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), again),
            exactRows, ValueRange{rowIndex(n, rows[i])});
      }
      Value keep = arith::XOrIOp::create(
          b, loc, again, arith::ConstantIntOp::create(b, loc, 1, 1));
      OpBuilder::InsertionGuard inner(b);
      auto branch = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, stores, keep), false);
      b.setInsertionPointToStart(branch.thenBlock());
      Value outColumn = outputColumn(head, columns);
      for (int64_t ot = 0; ot < outputTiles; ++ot)
        for (int64_t j = 0; j < 2; ++j) {
          Value c = add(twoPairs, ot * mma::kColumns + mma::columnOffsetC(j));
          OpBuilder::InsertionGuard column(b);
          if (dv != dvPadded) {
            auto inside = scf::IfOp::create(b, loc, below(c, dv), false);
            b.setInsertionPointToStart(inside.thenBlock());
          }
          Value sum = vector::ExtractOp::create(b, loc, tiles.getResult(4 + ot),
                                                ArrayRef<int64_t>{i, j});
          memref::StoreOp::create(
              b, loc, arith::DivFOp::create(b, loc, sum, l), out,
              ValueRange{batch, rows[i],
                         arith::AddIOp::create(b, loc, outColumn, c)});
        }
    }
    gpu::TerminatorOp::create(b, loc);
  }

  /// Copies key rows [j0, j0 + keyRows) of k (rotated, with rope) into
  /// kTile [key][column] and of v into vTile [column][key], rounded to
  /// bf16, columns past dk (dv) as 0; `threads` threads each take every
  /// threads-th element, consecutive threads consecutive columns of a row
  /// (rows past Tk copy row Tk - 1, whose weights are 0).
  void stageMmaTiles(Value thread, int64_t threads, Value batch, Value j0,
                     const HeadColumns &columns, int64_t keyRows,
                     int64_t dkPadded, int64_t dvPadded, Value kTile,
                     Value vTile) {
    auto copy = [&](Value source, Value column0, int64_t width, int64_t padded,
                    bool rotate, bool transposed, Value into) {
      int64_t rounds = llvm::divideCeil(keyRows * padded, threads);
      auto loop = scf::ForOp::create(b, loc, index(0), index(rounds), index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      Value linear = arith::AddIOp::create(
          b, loc, thread,
          arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                index(threads)));
      if ((keyRows * padded) % threads != 0) {
        auto branch = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear,
                                  index(keyRows * padded)),
            false);
        b.setInsertionPointToStart(branch.thenBlock());
      }
      Value i = arith::DivUIOp::create(b, loc, linear, index(padded));
      Value c = arith::RemUIOp::create(b, loc, linear, index(padded));
      Value key = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, j0, i), index(keys - 1));
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                           index(width));
      Value safe = width == padded
                       ? c
                       : arith::SelectOp::create(b, loc, inside, c, index(0))
                             .getResult();
      auto at = [&](Value cc) -> Value {
        return memref::LoadOp::create(
            b, loc, source,
            ValueRange{batch, key, arith::AddIOp::create(b, loc, column0, cc)});
      };
      Value x = rotate && ropeCos ? rotatedElement(at, key, safe) : at(safe);
      if (width != padded)
        x = arith::SelectOp::create(b, loc, inside, x, f32(0.0f));
      x = arith::TruncFOp::create(b, loc, b.getBF16Type(), x);
      memref::StoreOp::create(b, loc, x, into,
                              transposed ? ValueRange{c, i} : ValueRange{i, c});
    };
    copy(k, columns.k, dk, dkPadded, /*rotate=*/true, /*transposed=*/false,
         kTile);
    copy(v, columns.v, dv, dvPadded, /*rotate=*/false, /*transposed=*/true,
         vTile);
  }

  void build() {
    Type f32Type = b.getF32Type();
    int64_t rowBlocks = llvm::divideCeil(queries, tile.queryRows);
    int64_t threads = tile.threads();
    auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                                gpu::AddressSpace::Workgroup);
    auto kTileType = MemRefType::get({tile.keyRows, dk}, f32Type,
                                     MemRefLayoutAttrInterface{}, workgroup);
    auto vTileType = MemRefType::get({tile.keyRows, dv}, f32Type,
                                     MemRefLayoutAttrInterface{}, workgroup);
    bool split = tile.slices > 1;
    Value one = index(1);
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp launch =
        mainLaunch(batches * heads * rowBlocks, threads, kTileType, vTileType);
    Value kTile = launch.getWorkgroupAttributions()[0];
    Value vTile = launch.getWorkgroupAttributions()[1];
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;

    // Uniform in the block: its batch entry, head and first row.
    Value n = arith::DivUIOp::create(b, loc, block, index(rowBlocks));
    Value row0 = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, block, index(rowBlocks)),
        index(tile.queryRows));
    Value batch = arith::DivUIOp::create(b, loc, n, index(heads));
    Value head = arith::RemUIOp::create(b, loc, n, index(heads));
    HeadColumns columns = headColumns(head);
    Value qColumn = columns.q, kColumn = columns.k, vColumn0 = columns.v;
    // The keys any row of the block sees: tiles [first, last).
    Value blockEnd = arith::MaxSIOp::create(
        b, loc, blockLength(batch, row0, tile.queryRows), index(0));
    Value firstTile = index(0);
    Value blockLo = lowerOf(row0);
    if (blockLo)
      firstTile = arith::DivUIOp::create(b, loc, blockLo, index(tile.keyRows));
    Value lastTile = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, blockEnd, index(tile.keyRows - 1)),
        index(tile.keyRows));

    // This thread's row (rows past Tq compute row Tq - 1 and store
    // nothing: every thread copies tiles) and slice.
    Value slice = arith::RemUIOp::create(b, loc, thread, index(tile.slices));
    Value rowInTile =
        arith::DivUIOp::create(b, loc, thread, index(tile.slices));
    Value ownRow = arith::AddIOp::create(b, loc, row0, rowInTile);
    Value row = arith::MinSIOp::create(b, loc, ownRow, index(queries - 1));
    // A row split over slices: each thread holds its share of the query
    // row and of the output row, interleaved with the row's other slices in
    // chunks (GpuAttentionTile: logical chunk c0 of slice s is column
    // s * chunk + c0 * slices), the threads of a row add their partial dot
    // products with shuffles, so they walk the same keys: all of the
    // block's (its loop bounds the same in every thread, as shuffles need
    // every lane), each key a row does not see leaving its state as it was.
    int64_t share = tile.share;
    Value keyOffset = index(0), valueOffset = index(0);
    if (split) {
      keyOffset = arith::MulIOp::create(b, loc, slice, index(tile.keyChunk));
      valueOffset =
          arith::MulIOp::create(b, loc, slice, index(tile.valueChunk));
    }
    // Column c0 of this thread's share of a key or value row (`offset`:
    // keyOffset, valueOffset), in the head's columns.
    auto shareColumn = [&](Value offset, int64_t c0) -> Value {
      return split ? arith::AddIOp::create(b, loc, offset,
                                           index(c0 * tile.slices))
                         .getResult()
                   : index(c0);
    };
    Value outColumn = outputColumn(head, columns);
    // Read before anything is written: `out` may be `q`'s buffer (the
    // exact launch reads a marked row's again; a split row's stores wait at
    // a barrier for its other slices' reads).
    Value query;
    if (split) {
      query = queryShare(batch, row, qColumn, keyOffset);
    } else {
      Value qRow =
          vector::LoadOp::create(b, loc, VectorType::get({dk}, f32Type), q,
                                 ValueRange{batch, row, qColumn});
      // With rope, the rotated row.
      query = rounded(ropeCos ? rotate(qRow, row) : qRow);
    }
    auto queryLanes = [&](int64_t c0, int64_t lanes) -> Value {
      return lanesOf(query, c0, lanes);
    };
    Value len = lengthOf(batch, row);
    Value lo = lowerOf(row);

    auto accType = VectorType::get({tile.sliceWidth}, f32Type);
    auto tiles = scf::ForOp::create(
        b, loc, firstTile, lastTile, one, initialState(tile.sliceWidth),
        [&](OpBuilder &nb, Location, Value t, ValueRange state) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value j0 = arith::MulIOp::create(b, loc, t, index(tile.keyRows));
          stageTiles(thread, threads, batch, j0, kColumn, vColumn0, kTile,
                     vTile);
          gpu::BarrierOp::create(b, loc);
          // This row's keys of the tile, in order (split: the block's).
          Value rowLo = split ? blockLo : lo;
          Value from = rowLo ? arith::MaxSIOp::create(b, loc, j0, rowLo) : j0;
          Value end = arith::MinSIOp::create(
              b, loc, arith::AddIOp::create(b, loc, j0, index(tile.keyRows)),
              split ? blockEnd : len);
          auto keysOfRow = scf::ForOp::create(
              b, loc, from, end, one, state,
              [&](OpBuilder &kb, Location, Value j, ValueRange current) {
                OpBuilder::InsertionGuard step(b);
                b.setInsertionPoint(kb.getInsertionBlock(),
                                    kb.getInsertionPoint());
                Value jj = arith::SubIOp::create(b, loc, j, j0);
                int64_t lanes = split ? tile.keyChunk : chunkLanes(share);
                Value d =
                    dot(queryLanes, share, lanes, [&](int64_t c0) -> Value {
                      return vector::LoadOp::create(
                          b, loc, VectorType::get({lanes}, f32Type), kTile,
                          ValueRange{jj, shareColumn(keyOffset, c0)});
                    });
                // The row's slices are neighbouring lanes: after the step
                // of offset o each holds the sum of 2o of them.
                for (int64_t offset = 1; offset < tile.slices; offset *= 2)
                  d = arith::AddFOp::create(
                      b, loc, d,
                      gpu::ShuffleOp::create(
                          b, loc, d, static_cast<int32_t>(offset),
                          static_cast<int32_t>(target.warpSize),
                          gpu::ShuffleMode::XOR)
                          .getShuffleResult());
                Value s = scaled(d);
                auto values = [&](int64_t c0, int64_t lanes) -> Value {
                  return vector::LoadOp::create(
                      b, loc, VectorType::get({lanes}, f32Type), vTile,
                      ValueRange{jj, shareColumn(valueOffset, c0)});
                };
                Value visible =
                    split ? isKeyVisible(b, loc, j, lo, len) : Value();
                scf::YieldOp::create(b, loc,
                                     update(current, s, values, visible,
                                            split ? tile.valueChunk : 0));
              });
          // The next tile overwrites these only when every thread is done.
          gpu::BarrierOp::create(b, loc);
          scf::YieldOp::create(b, loc, keysOfRow.getResults());
        });
    SmallVector<Value> first(tiles.getResults());

    // Rows without visible keys go to the exact launch too (a uniform row).
    Value again = arith::OrIOp::create(
        b, loc, isEmptyRow(b, loc, lo, len),
        needsExactRecompute(b, loc, first[0], lo, len, keys));
    // Rows past Tq store nothing.
    Value stores = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         ownRow, index(queries));
    // The row's first slice says whether the exact launch recomputes it;
    // such a row is not stored here (with `out` on `q`'s buffer, its query
    // row stays for the exact launch to read).
    Value marks = arith::AndIOp::create(
        b, loc, stores,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice,
                              index(0)));
    {
      OpBuilder::InsertionGuard inner(b);
      auto branch = scf::IfOp::create(b, loc, marks, false);
      b.setInsertionPointToStart(branch.thenBlock());
      memref::StoreOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), again),
          exactRows, ValueRange{rowIndex(n, row)});
    }
    Value result = arith::DivFOp::create(
        b, loc, first[2],
        vector::BroadcastOp::create(b, loc, accType, first[1]));
    // Split: every thread has read its share of the query row before any
    // output row (maybe the query row, in other columns) is written.
    if (split)
      gpu::BarrierOp::create(b, loc);
    Value keep = arith::XOrIOp::create(
        b, loc, again, arith::ConstantIntOp::create(b, loc, 1, 1));
    {
      OpBuilder::InsertionGuard inner(b);
      auto branch = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, stores, keep), false);
      b.setInsertionPointToStart(branch.thenBlock());
      int64_t lanes = split ? tile.valueChunk : tile.sliceWidth;
      for (int64_t c0 = 0; c0 < tile.sliceWidth; c0 += lanes)
        vector::StoreOp::create(
            b, loc, split ? lanesOf(result, c0, lanes) : result, out,
            ValueRange{batch, row,
                       arith::AddIOp::create(b, loc, outColumn,
                                             shareColumn(valueOffset, c0))});
    }
    gpu::TerminatorOp::create(b, loc);
  }
};

struct AttnGpuLowerFusedAttentionPass
    : mlir::attn::impl::AttnGpuLowerFusedAttentionBase<
          AttnGpuLowerFusedAttentionPass> {
  using AttnGpuLowerFusedAttentionBase::AttnGpuLowerFusedAttentionBase;

  void runOnOperation() override {
    GpuTargetDescription target = describeGpu(chip);
    func::FuncOp func = getOperation();
    SmallVector<FusedAttentionOp> ops;
    func.walk([&](FusedAttentionOp op) { ops.push_back(op); });
    for (FusedAttentionOp op : ops) {
      if (!op.hasBufferSemantics()) {
        op.emitOpError("must be bufferized before attn-gpu-lower-fused-"
                       "attention");
        return signalPassFailure();
      }
      // attn-decompose makes `exclusive` ops for the CPU's decode kernel
      // only.
      if (op.getExclusive()) {
        op.emitOpError("with exclusive has no GPU lowering");
        return signalPassFailure();
      }
      // A launch of its own is host code: at the function's top level.
      if (op->getParentOp() != func.getOperation()) {
        op.emitOpError("must be at the top level of its function for "
                       "attn-gpu-lower-fused-attention (it becomes a launch)");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Lowering lowering(op, b, target);
      if (lowering.tile.keyRows == 0) {
        op.emitOpError() << "has heads of " << lowering.dk << " key and "
                         << lowering.dv << " value columns, whose key and "
                         << "value rows do not fit the " << kAttentionTileBytes
                         << " bytes of shared memory an attention block has";
        return signalPassFailure();
      }
      // bf16 products on tensor cores where the chip has them.
      std::optional<GpuMmaAttentionTile> mmaTile =
          lowering.products && lowering.products.isBF16()
              ? mmaAttentionTile(target, lowering.dk, lowering.dv)
              : std::nullopt;
      if (mmaTile)
        lowering.buildWithTensorCores(*mmaTile);
      else
        lowering.build();
      lowering.buildExactLaunch();
      op.erase();
    }
  }
};

} // namespace
