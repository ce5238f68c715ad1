//===- AttentionBlocks.cpp - fused attention, a vector of query rows ------===//
//
// The row form (FusedAttention.cpp) spends most of its time on horizontal
// sums: every score is a dot product of two rows. Here `lanes` query rows
// of one (batch, head) go together (one f32 vector of them: 16 for AVX-512,
// 8 for AVX2, whose 16 registers the 16-lane form spilled), transposed once
// into Qᵀ (dk x lanes, scaled), so the scores of one key against all the
// rows are one vector:
//   Sⱼ = Σ_d key_j[d] · Qᵀ[d]           (a broadcast and an FMA per d)
// and the softmax runs across lanes = rows: the block max, the exps and the
// row sums are plain vector ops. The output is kept transposed too,
//   Oᵀ[d] = α · Oᵀ[d] + Σⱼ value_j[d] · Pⱼ,
// and transposed back when the block is done. Keys go in blocks of `lanes`
// (that many score vectors in registers), read from a copy of the whole blocks'
// rows made once per (batch, head), dk floats apart (in the cache a key's
// stride is known only at run time); the new keys' blocks mask the keys a
// row must not see (none but on the diagonal block) with lane compares; the
// past keys' last partial block goes key by key. No horizontal sum anywhere.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/attention/FusedAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>
#include <tuple>

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// The running state of a block's rows: m and l per lane (row), Oᵀ
/// (dk x lanes).
struct Rows {
  Value m, l, ot;
};

VectorType laneType(OpBuilder &b, int64_t lanes) {
  return VectorType::get({lanes}, b.getF32Type());
}

/// Row `row` of a (dk x lanes) buffer (Qᵀ, Oᵀ): one vector.
Value readLanes(OpBuilder &b, Location loc, Value t, Value row) {
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  int64_t lanes = cast<RankedTensorType>(t.getType()).getDimSize(1);
  return vector::TransferReadOp::create(b, loc, laneType(b, lanes), t,
                                        ValueRange{row, index(b, loc, 0)}, pad,
                                        SmallVector<bool>{true});
}

Value writeLanes(OpBuilder &b, Location loc, Value v, Value t, Value row) {
  return vector::TransferWriteOp::create(b, loc, v, t,
                                         ValueRange{row, index(b, loc, 0)},
                                         SmallVector<bool>{true})
      .getResult();
}

/// Element d of row `j` of `rows` (src.keys or src.values), as a vector of
/// equal lanes.
Value splat(OpBuilder &b, Location loc, const KeySource &src, Value rows,
            Value j, Value d, const QueryBlocks &a) {
  SmallVector<Value> at = src.at(j, a.batch, a.kvHead);
  at.back() = d;
  Value x = tensor::ExtractOp::create(b, loc, rows, at);
  return vector::BroadcastOp::create(b, loc, laneType(b, a.lanes), x);
}

/// Folds keys [first, first + count) (count static: a.lanes or 1) into `st`.
/// With `offset` (the first key's position less the block's first row, for
/// the new keys), key t is visible to lane (row) r only if
/// t + offset <= r: every key of a block before the diagonal one, the
/// causal triangle on it.
Rows fold(OpBuilder &b, Location loc, const KeySource &src, Value first,
          int64_t count, Value offset, Value qt, int64_t dk, Rows st,
          const QueryBlocks &a) {
  VectorType lanes = laneType(b, a.lanes);
  Value zero =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes, 0.0f));
  SmallVector<Value> keys;
  for (int64_t t = 0; t < count; ++t)
    keys.push_back(arith::AddIOp::create(b, loc, first, index(b, loc, t)));

  // Sₜ = Σ_d key_t[d] · Qᵀ[d], one FMA chain per key.
  SmallVector<Value> init(count, zero);
  auto scoreLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, dk), index(b, loc, 1), init,
      [&](OpBuilder &nb, Location nl, Value d, ValueRange s) {
        Value qd = readLanes(nb, nl, qt, d);
        SmallVector<Value> next;
        for (int64_t t = 0; t < count; ++t)
          next.push_back(vector::FMAOp::create(
              nb, nl, splat(nb, nl, src, src.keys, keys[t], d, a), qd, s[t]));
        scf::YieldOp::create(nb, nl, next);
      });
  SmallVector<Value> s(scoreLoop.getResults());
  if (offset) {
    // Lane r sees key t iff r - t >= offset: constant r - t lanes against
    // one broadcast offset (every block of keys shares this code, the
    // diagonal one too: one copy of the block for LLVM to compile).
    Type i32 = b.getI32Type();
    auto laneInts = VectorType::get({a.lanes}, i32);
    Value offsets = vector::BroadcastOp::create(
        b, loc, laneInts, arith::IndexCastOp::create(b, loc, i32, offset));
    Value lowest = vector::BroadcastOp::create(b, loc, lanes, a.lowest);
    for (int64_t t = 0; t < count; ++t) {
      SmallVector<int32_t> rowMinusKey(a.lanes);
      for (int64_t r = 0; r < a.lanes; ++r)
        rowMinusKey[r] = int32_t(r - t);
      Value lanesMinusT = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(laneInts, ArrayRef(rowMinusKey)));
      Value visible = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            lanesMinusT, offsets);
      s[t] = arith::SelectOp::create(b, loc, visible, s[t], lowest);
    }
  }

  // Online softmax across the keys, every lane a row.
  Value mNew = st.m;
  for (Value v : s)
    mNew = arith::MaximumFOp::create(b, loc, mNew, v);
  Value alpha =
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, st.m, mNew));
  SmallVector<Value> p;
  Value sum;
  for (Value v : s) {
    p.push_back(
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, v, mNew)));
    sum = sum ? arith::AddFOp::create(b, loc, sum, p.back()) : p.back();
  }
  Value lNew = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, st.l, alpha), sum);

  // Oᵀ[d] = α · Oᵀ[d] + Σₜ value_t[d] · Pₜ, four d at a time: each d is
  // one chain of `count` dependent FMAs, and four chains in flight hide
  // the FMA latency (the sums are the same: each chain keeps its order).
  int64_t dStep = dk % 4 == 0 ? 4 : 1;
  auto outLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, dk), index(b, loc, dStep),
      ValueRange{st.ot},
      [&](OpBuilder &nb, Location nl, Value d0, ValueRange it) {
        SmallVector<Value> ds, acc;
        for (int64_t u = 0; u < dStep; ++u) {
          ds.push_back(arith::AddIOp::create(nb, nl, d0, index(nb, nl, u)));
          acc.push_back(arith::MulFOp::create(
              nb, nl, readLanes(nb, nl, it[0], ds[u]), alpha));
        }
        for (int64_t t = 0; t < count; ++t)
          for (int64_t u = 0; u < dStep; ++u)
            acc[u] = vector::FMAOp::create(
                nb, nl, splat(nb, nl, src, src.values, keys[t], ds[u], a), p[t],
                acc[u]);
        Value ot = it[0];
        for (int64_t u = 0; u < dStep; ++u)
          ot = writeLanes(nb, nl, acc[u], ot, ds[u]);
        scf::YieldOp::create(nb, nl, ot);
      });
  return {mNew, lNew, outLoop.getResult(0)};
}

/// Folds the past keys after the last whole block, one at a time.
Rows foldPastTail(OpBuilder &b, Location loc, Value begin, Value qt, int64_t dk,
                  Rows st, const QueryBlocks &a) {
  auto loop = scf::ForOp::create(
      b, loc, begin, a.pastCount, index(b, loc, 1),
      ValueRange{st.m, st.l, st.ot},
      [&](OpBuilder &nb, Location nl, Value j, ValueRange it) {
        Rows r = fold(nb, nl, a.past, j, 1, Value(), qt, dk,
                      {it[0], it[1], it[2]}, a);
        scf::YieldOp::create(nb, nl, ValueRange{r.m, r.l, r.ot});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

/// Copies rows [0, count) of `src` (batch a.batch, kv head a.kvHead) into
/// rows [at, at + count) of the (rows x dk) `keys` and `values`.
std::pair<Value, Value> gatherRows(OpBuilder &b, Location loc,
                                   const KeySource &src, Value count, Value at,
                                   Value keys, Value values, int64_t dk,
                                   const QueryBlocks &a) {
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<bool> inBounds{true};
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), count, index(b, loc, 1),
      ValueRange{keys, values},
      [&](OpBuilder &nb, Location nl, Value j, ValueRange it) {
        SmallVector<Value> from = src.at(j, a.batch, a.kvHead);
        Value row = arith::AddIOp::create(nb, nl, at, j);
        SmallVector<Value> to(it);
        for (int64_t c = 0; c < dk; c += a.lanes) {
          from.back() = index(nb, nl, c);
          for (auto [rows, tile] : llvm::zip_equal(
                   std::array<Value, 2>{src.keys, src.values}, to)) {
            Value v = vector::TransferReadOp::create(
                nb, nl, laneType(nb, a.lanes), rows, from, pad, inBounds);
            tile = vector::TransferWriteOp::create(
                       nb, nl, v, tile, ValueRange{row, from.back()}, inBounds)
                       .getResult();
          }
        }
        scf::YieldOp::create(nb, nl, to);
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// Folds the whole blocks of `lanes` keys of `blocks` (the gathered rows:
/// `pastBlocks` blocks of the cache, then the new keys' blocks up to the
/// diagonal of the query block starting at `row0`, `freshBlocks` of them).
Rows foldBlocks(OpBuilder &b, Location loc, const KeySource &blocks,
                Value pastBlocks, Value freshBlocks, Value row0, Value qt,
                int64_t dk, Rows st, const QueryBlocks &a) {
  Value end = arith::AddIOp::create(b, loc, pastBlocks, freshBlocks);
  auto loop = scf::ForOp::create(
      b, loc, index(b, loc, 0), end, index(b, loc, 1),
      ValueRange{st.m, st.l, st.ot},
      [&](OpBuilder &nb, Location nl, Value i, ValueRange it) {
        Value isPast = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult,
                                             i, pastBlocks);
        Value first = arith::MulIOp::create(nb, nl, i, index(nb, nl, a.lanes));
        // Past keys are all visible: r - t >= -lanes holds for every lane. A
        // new key's position is its row less the past blocks' rows.
        Value fresh = arith::SubIOp::create(
            nb, nl, first,
            arith::MulIOp::create(nb, nl, pastBlocks, index(nb, nl, a.lanes)));
        Value offset =
            arith::SelectOp::create(nb, nl, isPast, index(nb, nl, -a.lanes),
                                    arith::SubIOp::create(nb, nl, fresh, row0));
        Rows r = fold(nb, nl, blocks, first, a.lanes, offset, qt, dk,
                      {it[0], it[1], it[2]}, a);
        scf::YieldOp::create(nb, nl, ValueRange{r.m, r.l, r.ot});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

/// The lanes x lanes blocks of a (lanes x dk) <-> (dk x lanes) transpose: reads
/// `from` at (0, c) or (c, 0), writes the transposed block to `to`. A loop
/// over the blocks: one transpose (64 shuffles) of code.
Value transposeInto(OpBuilder &b, Location loc, Value from, Value to,
                    int64_t dk, int64_t lanes, bool toTransposed,
                    Value scale = Value()) {
  auto blockType = VectorType::get({lanes, lanes}, b.getF32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<bool> inBounds{true, true};
  Value c0 = index(b, loc, 0);
  auto loop = scf::ForOp::create(
      b, loc, c0, index(b, loc, dk), index(b, loc, lanes), ValueRange{to},
      [&](OpBuilder &nb, Location nl, Value c, ValueRange it) {
        SmallVector<Value> src{c0, c}, dst{c, c0};
        if (!toTransposed)
          std::swap(src, dst);
        Value block = vector::TransferReadOp::create(nb, nl, blockType, from,
                                                     src, pad, inBounds);
        Value t =
            vector::TransposeOp::create(nb, nl, block, ArrayRef<int64_t>{1, 0});
        if (scale)
          t = arith::MulFOp::create(
              nb, nl, t, vector::BroadcastOp::create(nb, nl, blockType, scale));
        scf::YieldOp::create(
            nb, nl,
            vector::TransferWriteOp::create(nb, nl, t, it[0], dst, inBounds)
                .getResult());
      });
  return loop.getResult(0);
}

} // namespace

namespace {

/// The keys and values of every whole block, in rows of their own.
struct Gathered {
  KeySource src;
  Value pastBlocks; ///< the cache's whole blocks
  Value pastFull;   ///< their keys, the first new key's row
};

/// What every query block of one (batch, head) pair shares.
struct Blocks {
  const QueryBlocks &a;
  int64_t dk;
  RankedTensorType rowsType; ///< a block's rows of q or out: lanes x dk
  Value zero, lowest, c0, c1;
  Gathered gathered;
};

} // namespace

/// Gathers the keys and values of every whole block, dk floats apart.
static Gathered gatherBlocks(OpBuilder &b, Location loc, const QueryBlocks &a,
                             int64_t dk, Value c0) {
  // The keys and values of every whole block, gathered once per (batch,
  // head) into rows of their own: the cache's whole blocks, then the new
  // keys up to the last query block. In the cache consecutive keys are
  // (batch x kv heads x dk) apart, a stride known only at run time, so a
  // block's rows took one pointer each (spilled: the score loop reloaded
  // them from the stack every step); here they are dk apart.
  Value width = index(b, loc, a.lanes);
  Value pastBlocks = arith::DivUIOp::create(b, loc, a.pastCount, width);
  Value pastFull = arith::MulIOp::create(b, loc, pastBlocks, width);
  // Nothing to gather when no query block runs (every decode step).
  Value anyBlock =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, a.full, c0);
  Value pastGathered = arith::SelectOp::create(b, loc, anyBlock, pastFull, c0);
  Value gathered = arith::AddIOp::create(b, loc, pastGathered, a.full);
  auto tileType =
      RankedTensorType::get({ShapedType::kDynamic, dk}, b.getF32Type());
  Value keys = bufferization::AllocTensorOp::create(b, loc, tileType, gathered);
  Value values =
      bufferization::AllocTensorOp::create(b, loc, tileType, gathered);
  std::tie(keys, values) =
      gatherRows(b, loc, a.past, pastGathered, c0, keys, values, dk, a);
  std::tie(keys, values) =
      gatherRows(b, loc, a.fresh, a.full, pastFull, keys, values, dk, a);
  KeySource src{keys, values, [c0](Value j, Value, Value) {
                  return SmallVector<Value>{j, c0};
                }};
  return {src, pastBlocks, pastFull};
}

/// Oᵀ (dk x lanes) set to zero.
static Value zeroLanes(OpBuilder &nb, Location nl, const Blocks &s, Value ot) {
  auto zeroLoop = scf::ForOp::create(
      nb, nl, s.c0, index(nb, nl, s.dk), s.c1, ValueRange{ot},
      [&](OpBuilder &lb, Location ll, Value d, ValueRange it) {
        scf::YieldOp::create(lb, ll, writeLanes(lb, ll, s.zero, it[0], d));
      });
  return zeroLoop.getResult(0);
}

/// Oᵀ / l, in place.
static Value divideLanes(OpBuilder &nb, Location nl, const Blocks &s, Rows st) {
  auto divLoop = scf::ForOp::create(
      nb, nl, s.c0, index(nb, nl, s.dk), s.c1, ValueRange{st.ot},
      [&](OpBuilder &lb, Location ll, Value d, ValueRange ot) {
        Value o =
            arith::DivFOp::create(lb, ll, readLanes(lb, ll, ot[0], d), st.l);
        scf::YieldOp::create(lb, ll, writeLanes(lb, ll, o, ot[0], d));
      });
  return divLoop.getResult(0);
}

/// `out` with Oᵀ transposed back into the block's rows from `i0`.
static Value storeBlock(OpBuilder &nb, Location nl, const Blocks &s, Value ot,
                        Value i0, Value out) {
  SmallVector<OpFoldResult> ones(4, nb.getIndexAttr(1));
  SmallVector<OpFoldResult> offsets{nb.getIndexAttr(0), i0, nb.getIndexAttr(0),
                                    nb.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{nb.getIndexAttr(1),
                                  nb.getIndexAttr(s.a.lanes),
                                  nb.getIndexAttr(1), nb.getIndexAttr(s.dk)};
  Value outRows = tensor::ExtractSliceOp::create(nb, nl, s.rowsType, out,
                                                 offsets, sizes, ones);
  outRows = transposeInto(nb, nl, ot, outRows, s.dk, s.a.lanes,
                          /*toTransposed=*/false);
  return tensor::InsertSliceOp::create(nb, nl, outRows, out, offsets, sizes,
                                       ones);
}

/// Query rows [i0, i0 + lanes): yields `it`'s (out, Qᵀ, Oᵀ) updated.
static void queryBlock(OpBuilder &nb, Location nl, const Blocks &s, Value i0,
                       ValueRange it) {
  const QueryBlocks &a = s.a;
  SmallVector<OpFoldResult> ones(4, nb.getIndexAttr(1));
  Value qRows = tensor::ExtractSliceOp::create(
      nb, nl, s.rowsType, a.q,
      SmallVector<OpFoldResult>{a.batch, i0, a.head, nb.getIndexAttr(0)},
      SmallVector<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(a.lanes),
                                nb.getIndexAttr(1), nb.getIndexAttr(s.dk)},
      ones);
  Value qt = transposeInto(nb, nl, qRows, it[1], s.dk, a.lanes,
                           /*toTransposed=*/true, a.scale);
  Rows st{s.lowest, s.zero, zeroLanes(nb, nl, s, it[2])};
  // Every whole block of past keys, then the new keys' blocks up to
  // this one (masked causally: all visible but on the diagonal), then
  // the past keys after their last whole block. (Order does not
  // matter to the online softmax, up to rounding.)
  Value upTo = arith::AddIOp::create(
      nb, nl, arith::DivUIOp::create(nb, nl, i0, index(nb, nl, a.lanes)), s.c1);
  st = foldBlocks(nb, nl, s.gathered.src, s.gathered.pastBlocks, upTo, i0, qt,
                  s.dk, st, a);
  st = foldPastTail(nb, nl, s.gathered.pastFull, qt, s.dk, st, a);

  // Oᵀ / l, transposed back into the block's output rows.
  Value ot = divideLanes(nb, nl, s, st);
  Value out = storeBlock(nb, nl, s, ot, i0, it[0]);
  scf::YieldOp::create(nb, nl, ValueRange{out, qt, ot});
}

Value tlm::attentionQueryBlocks(OpBuilder &b, Location loc,
                                const QueryBlocks &a) {
  auto outType = cast<RankedTensorType>(a.out.getType());
  int64_t dk = outType.getDimSize(3);
  assert(dk % a.lanes == 0 && "checked by the caller");
  Type f32 = b.getF32Type();
  VectorType lanes = laneType(b, a.lanes);
  Value zero =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lanes, 0.0f));
  Value lowest = vector::BroadcastOp::create(b, loc, lanes, a.lowest);
  // Qᵀ and Oᵀ: one buffer each per (batch, head), reused by every block.
  // alloc_tensor, not tensor.empty: CSE would merge two equal empties, and
  // bufferization then gave both loop-carried tensors the same buffer.
  auto bufType = RankedTensorType::get({dk, a.lanes}, f32);
  Value qtInit =
      bufferization::AllocTensorOp::create(b, loc, bufType, ValueRange{});
  Value otInit =
      bufferization::AllocTensorOp::create(b, loc, bufType, ValueRange{});
  auto rowsType = RankedTensorType::get({a.lanes, dk}, f32);
  Value c0 = index(b, loc, 0), c1 = index(b, loc, 1);
  Gathered gathered = gatherBlocks(b, loc, a, dk, c0);
  Blocks s{a, dk, rowsType, zero, lowest, c0, c1, gathered};

  auto blocks =
      scf::ForOp::create(b, loc, c0, a.full, index(b, loc, a.lanes),
                         ValueRange{a.out, qtInit, otInit},
                         [&](OpBuilder &nb, Location nl, Value i0,
                             ValueRange it) { queryBlock(nb, nl, s, i0, it); });
  return blocks.getResult(0);
}
