//===- AttentionRows.cpp - attention rows one at a time, key-major --------===//
//
// The query rows the vector blocks (AttentionBlocks.cpp) leave: every
// decode step's one row, a prefill's last rows, every row when the head
// size is not a multiple of the lanes. For each row the heads of a chunk go
// together over the keys in position order, so the position-major cache
// (key j's heads side by side) is read start to end, one sequential stream
// the hardware prefetchers keep up with. Head by head instead, each key's
// row of one head (256 bytes in small.json) sat 3 KB after the previous
// one, a stride the prefetchers did not follow: in a C model of the two
// loops over small.json's cache, key by key read it much faster
// (docs/cpu-codegen.md#rows-one-at-a-time).
//
// Three passes per row, over a chunk's heads:
//   1. scores: S[h, j] = q_h · k_j for every key j, past then new (S is
//      heads x keys: a few KB per head; the keys are read once);
//   2. softmax of each head's scores in vectors of kBlock (the row padded
//      to whole vectors with a finite "minus infinity"), the sums kept;
//   3. values: acc[h] += S[h, j] · v_j, key by key over the heads (the
//      values are read once), then out[h] = acc[h] / sum[h].
// GQA reads kv head h / G; nothing is copied. (batch, head chunk) pairs
// are an scf.forall, so the rows run on every thread, each reading its
// heads' part of every key.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/attention/FusedAttention.h"
#include "passes/common/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// Scores per vector of the softmax pass.
constexpr int64_t kBlock = 16;

arith::FastMathFlags reassocContract() {
  return arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
}

/// What every loop of one row needs.
struct Row {
  const AttentionRows &a;
  Value batch, firstHead, query; ///< the pair and the row
  VectorType rowType;            ///< vector<dk x f32>
  Value c0, c1;

  /// Query head `firstHead + hh` and the kv head it reads.
  std::pair<Value, Value> heads(OpBuilder &b, Location loc, Value hh) const {
    Value h = arith::AddIOp::create(b, loc, firstHead, hh);
    Value kvh = arith::DivUIOp::create(b, loc, h, index(b, loc, a.group));
    return {h, kvh};
  }
  Value read(OpBuilder &b, Location loc, Value source,
             ArrayRef<Value> indices) const {
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
    return vector::TransferReadOp::create(b, loc, rowType, source, indices, pad,
                                          SmallVector<bool>{true});
  }

  /// Keys [0, count) in order, each over the chunk's heads: `body(j, col,
  /// hh, state)` (col = offset + j, the key's column of S) returns the
  /// next state.
  Value keysByHeads(
      OpBuilder &b, Location loc, Value count, Value offset, Value init,
      function_ref<Value(OpBuilder &, Location, Value, Value, Value, Value)>
          body) const {
    auto keys = scf::ForOp::create(
        b, loc, c0, count, c1, ValueRange{init},
        [&](OpBuilder &kb, Location kl, Value j, ValueRange it) {
          Value col = arith::AddIOp::create(kb, kl, offset, j);
          auto perHead = scf::ForOp::create(
              kb, kl, c0, index(kb, kl, a.headChunk), c1, ValueRange{it[0]},
              [&](OpBuilder &hb, Location hl, Value hh, ValueRange st) {
                scf::YieldOp::create(hb, hl, body(hb, hl, j, col, hh, st[0]));
              });
          scf::YieldOp::create(kb, kl, perHead.getResult(0));
        });
    return keys.getResult(0);
  }

  /// Pass 1 over `count` keys of `src`: S[hh, offset + j] = q_h · k_j.
  Value scores(OpBuilder &b, Location loc, const KeySource &src, Value count,
               Value offset, Value s) const {
    return keysByHeads(
        b, loc, count, offset, s,
        [&](OpBuilder &hb, Location hl, Value j, Value col, Value hh,
            Value state) -> Value {
          auto [h, kvh] = heads(hb, hl, hh);
          Value q = read(hb, hl, a.q, {batch, query, h, c0});
          Value key = read(hb, hl, src.keys, src.at(j, batch, kvh));
          Value dot = vector::ReductionOp::create(
              hb, hl, vector::CombiningKind::ADD,
              arith::MulFOp::create(hb, hl, q, key, reassocContract()), Value(),
              reassocContract());
          return tensor::InsertOp::create(hb, hl, dot, state,
                                          ValueRange{hh, col});
        });
  }

  /// Pass 2 for head `hh`: S[hh, 0..n) becomes exp(scale·(S - max)), the
  /// padding up to `padded` exp of "minus infinity", 0. Returns (S, sum).
  std::pair<Value, Value> softmax(OpBuilder &b, Location loc, Value hh, Value n,
                                  Value padded, Value s) const {
    auto blockType = VectorType::get({kBlock}, b.getF32Type());
    auto pad = scf::ForOp::create(
        b, loc, n, padded, c1, ValueRange{s},
        [&](OpBuilder &pb, Location pl, Value j, ValueRange it) {
          scf::YieldOp::create(pb, pl,
                               tensor::InsertOp::create(pb, pl, a.lowest, it[0],
                                                        ValueRange{hh, j})
                                   .getResult());
        });
    s = pad.getResult(0);
    Value width = index(b, loc, kBlock);
    auto readBlock = [&](OpBuilder &rb, Location rl, Value t, Value blk) {
      Value zero = arith::ConstantOp::create(rb, rl, rb.getF32FloatAttr(0.0));
      return vector::TransferReadOp::create(rb, rl, blockType, t,
                                            ValueRange{hh, blk}, zero,
                                            SmallVector<bool>{true})
          .getResult();
    };
    Value lowestV = vector::BroadcastOp::create(b, loc, blockType, a.lowest);
    auto max = scf::ForOp::create(
        b, loc, c0, padded, width, ValueRange{lowestV},
        [&](OpBuilder &mb, Location ml, Value blk, ValueRange it) {
          scf::YieldOp::create(mb, ml,
                               arith::MaximumFOp::create(
                                   mb, ml, it[0], readBlock(mb, ml, s, blk))
                                   .getResult());
        });
    Value m = vector::ReductionOp::create(
        b, loc, vector::CombiningKind::MAXIMUMF, max.getResult(0));
    Value mV = vector::BroadcastOp::create(b, loc, blockType, m);
    Value scaleV = vector::BroadcastOp::create(b, loc, blockType, a.scale);
    Value zeroV = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(blockType, 0.0f));
    auto exps = scf::ForOp::create(
        b, loc, c0, padded, width, ValueRange{s, zeroV},
        [&](OpBuilder &eb, Location el, Value blk, ValueRange it) {
          // scale·s - max(scale·s) as scale·(s - max s): scale > 0.
          Value p = math::ExpOp::create(
              eb, el,
              arith::MulFOp::create(
                  eb, el,
                  arith::SubFOp::create(eb, el, readBlock(eb, el, it[0], blk),
                                        mV),
                  scaleV));
          Value t = vector::TransferWriteOp::create(eb, el, p, it[0],
                                                    ValueRange{hh, blk},
                                                    SmallVector<bool>{true})
                        .getResult();
          scf::YieldOp::create(
              eb, el, ValueRange{t, arith::AddFOp::create(eb, el, it[1], p)});
        });
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            exps.getResult(1), Value(),
                                            reassocContract());
    return {exps.getResult(0), sum};
  }

  /// Pass 3 over `count` values of `src`: acc[hh] += S[hh, offset + j] · v_j.
  Value values(OpBuilder &b, Location loc, const KeySource &src, Value count,
               Value offset, Value s, Value acc) const {
    return keysByHeads(
        b, loc, count, offset, acc,
        [&](OpBuilder &hb, Location hl, Value j, Value col, Value hh,
            Value state) -> Value {
          Value kvh = heads(hb, hl, hh).second;
          Value p = tensor::ExtractOp::create(hb, hl, s, ValueRange{hh, col});
          Value value = read(hb, hl, src.values, src.at(j, batch, kvh));
          Value sum = vector::FMAOp::create(
              hb, hl, vector::BroadcastOp::create(hb, hl, rowType, p), value,
              read(hb, hl, state, {hh, c0}));
          return vector::TransferWriteOp::create(hb, hl, sum, state,
                                                 ValueRange{hh, c0},
                                                 SmallVector<bool>{true})
              .getResult();
        });
  }
};

/// `v` rounded up to a multiple of kBlock.
Value roundUp(OpBuilder &b, Location loc, Value v) {
  Value width = arith::ConstantIndexOp::create(b, loc, kBlock);
  Value less = arith::ConstantIndexOp::create(b, loc, kBlock - 1);
  return arith::MulIOp::create(
      b, loc,
      arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, v, less),
                             width),
      width);
}

} // namespace

namespace {

/// What every row of one (batch, head chunk) pair shares.
struct ChunkRows {
  const AttentionRows &a;
  Value batch, firstHead; ///< the pair
  Value pastCount;        ///< this sequence's past keys
  VectorType rowType;     ///< vector<dk x f32>
  Value c0, c1, chunkV;
  Value zeroV; ///< a zero row
};

} // namespace

/// Pass 2 on each head of the chunk, acc[hh] zeroed: a loop of (S, sums, acc).
static scf::ForOp softmaxHeads(OpBuilder &rb, Location rl, const ChunkRows &c,
                               const Row &row, Value n, Value padded,
                               ValueRange state) {
  SmallVector<bool> inBounds{true};
  return scf::ForOp::create(
      rb, rl, c.c0, c.chunkV, c.c1, state,
      [&](OpBuilder &hb, Location hl, Value hh, ValueRange st) {
        auto [t, sum] = row.softmax(hb, hl, hh, n, padded, st[0]);
        Value sums =
            tensor::InsertOp::create(hb, hl, sum, st[1], ValueRange{hh});
        Value acc = vector::TransferWriteOp::create(
                        hb, hl, c.zeroV, st[2], ValueRange{hh, c.c0}, inBounds)
                        .getResult();
        scf::YieldOp::create(hb, hl, ValueRange{t, sums, acc});
      });
}

/// `out` with row `i`'s out[i, hh] = acc[hh] / sum[hh] written.
static Value divideHeads(OpBuilder &rb, Location rl, const ChunkRows &c,
                         const Row &row, Value i, Value sums, Value acc,
                         Value out) {
  SmallVector<bool> inBounds{true};
  Value at = arith::SubIOp::create(rb, rl, i, c.a.full);
  auto loop = scf::ForOp::create(
      rb, rl, c.c0, c.chunkV, c.c1, ValueRange{out},
      [&](OpBuilder &hb, Location hl, Value hh, ValueRange st) {
        Value sum = tensor::ExtractOp::create(hb, hl, sums, ValueRange{hh});
        Value o = arith::DivFOp::create(
            hb, hl, row.read(hb, hl, acc, {hh, c.c0}),
            vector::BroadcastOp::create(hb, hl, c.rowType, sum));
        scf::YieldOp::create(
            hb, hl,
            vector::TransferWriteOp::create(
                hb, hl, o, st[0], ValueRange{c.c0, at, hh, c.c0}, inBounds)
                .getResult());
      });
  return loop.getResult(0);
}

/// Query row `i`, with (out, S, sums, acc) in `it`: yields them updated.
static void attendRow(OpBuilder &rb, Location rl, const ChunkRows &c, Value i,
                      ValueRange it) {
  const AttentionRows &a = c.a;
  Row row{a, c.batch, c.firstHead, i, c.rowType, c.c0, c.c1};
  // Causal: row i sees every past key and new keys 0..i.
  Value fresh = arith::AddIOp::create(rb, rl, i, c.c1);
  Value n = arith::AddIOp::create(rb, rl, c.pastCount, fresh);
  Value padded = roundUp(rb, rl, n);
  Value s = row.scores(rb, rl, a.past, c.pastCount, c.c0, it[1]);
  s = row.scores(rb, rl, a.fresh, fresh, c.pastCount, s);
  // Per head: the softmax, and acc[hh] back to zero.
  auto soft =
      softmaxHeads(rb, rl, c, row, n, padded, ValueRange{s, it[2], it[3]});
  s = soft.getResult(0);
  Value sums = soft.getResult(1);
  Value acc =
      row.values(rb, rl, a.past, c.pastCount, c.c0, s, soft.getResult(2));
  acc = row.values(rb, rl, a.fresh, fresh, c.pastCount, s, acc);
  // out[i, hh] = acc[hh] / sum[hh].
  Value out = divideHeads(rb, rl, c, row, i, sums, acc, it[0]);
  scf::YieldOp::create(rb, rl, ValueRange{out, s, sums, acc});
}

/// Rows [full, seq) of one pair into its `slice` of the output.
static Value attendChunk(OpBuilder &b, Location loc, ChunkRows c, Value slice,
                         Value seq, Value maxKeys) {
  int64_t chunk = c.a.headChunk, dk = c.rowType.getDimSize(0);
  Type f32 = b.getF32Type();
  // The chunk's scores, softmax sums and weighted value sums, reused by
  // every row.
  Value s0 = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(chunk), maxKeys}, f32);
  Value sums0 = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{chunk}, f32);
  Value acc0 =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{chunk, dk}, f32);
  c.zeroV = arith::ConstantOp::create(b, loc,
                                      DenseElementsAttr::get(c.rowType, 0.0f));
  auto rowLoop = scf::ForOp::create(
      b, loc, c.a.full, seq, c.c1, ValueRange{slice, s0, sums0, acc0},
      [&](OpBuilder &rb, Location rl, Value i, ValueRange it) {
        attendRow(rb, rl, c, i, it);
      });
  return rowLoop.getResult(0);
}

Value tlm::attentionRows(OpBuilder &b, Location loc, const AttentionRows &a) {
  auto qType = cast<RankedTensorType>(a.q.getType());
  int64_t heads = qType.getDimSize(2), dk = qType.getDimSize(3);
  assert(heads % a.headChunk == 0 && "head chunks must divide the heads");
  auto rowType = VectorType::get({dk}, b.getF32Type());
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value chunkV = arith::ConstantIndexOp::create(b, loc, a.headChunk);
  Value batch = tensor::DimOp::create(b, loc, a.q, 0);
  Value seq = tensor::DimOp::create(b, loc, a.q, 1);
  // The last row sees every key: its padded count sizes S for all rows.
  Value maxKeys =
      roundUp(b, loc, arith::AddIOp::create(b, loc, a.pastCount, seq));

  auto forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{batch, b.getIndexAttr(heads / a.headChunk)},
      ValueRange{a.out}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bb = forall.getInductionVars()[0];
  // This sequence's past keys (the most, a.pastCount, sized the scores).
  Value pastCount = sequencePast(b, loc, a.lengths, bb, a.pastCount);
  Value firstHead =
      arith::MulIOp::create(b, loc, forall.getInductionVars()[1], chunkV);
  Value rows = arith::SubIOp::create(b, loc, seq, a.full);
  SmallVector<OpFoldResult> offsets{bb, a.full, firstHead, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{
      b.getIndexAttr(1), rows, b.getIndexAttr(a.headChunk), b.getIndexAttr(dk)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  ChunkRows c{a, bb, firstHead, pastCount, rowType, c0, c1, chunkV, Value()};
  Value done = attendChunk(b, loc, c, slice, seq, maxKeys);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, done, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  return forall.getResult(0);
}
