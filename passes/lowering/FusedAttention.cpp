//===- FusedAttention.cpp - causal attention with an online softmax -------===//
//
// The fused form of tlm.cached_attention: for every (batch, query, head) one
// pass over the keys keeps a running max m, a running sum l and a running
// output acc (flash-attention's online softmax), so no scores tensor is ever
// materialised: memory is O(head_dim) per query instead of O(seq²), and the
// past keys are read in place from the position-major cache. Keys go in
// blocks of 16: sixteen dot products make one vector of scores, whose max,
// exps and sum are vector ops, and the state is rescaled once per block;
// the last partial block goes key by key. GQA reads kv head h / G; nothing
// is copied. (batch, head) pairs run as an scf.forall, on every thread.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/FusedAttention.h"
#include "passes/lowering/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// Keys per block of the vectorized key loop: one f32 vector of scores.
constexpr int64_t kKeyBlock = 16;

/// The running state of one query row.
struct Online {
  Value m, l, acc; ///< f32, f32, vector<dk x f32>
};

arith::FastMathFlags reassocContract() {
  return arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
}

/// Row `j` of `rows` (src.keys or src.values) as a vector<dk>.
Value readRow(OpBuilder &b, Location loc, const KeySource &src, Value rows,
              Value j, Value batch, Value kvh, VectorType vecType) {
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  return vector::TransferReadOp::create(b, loc, vecType, rows,
                                        src.at(j, batch, kvh), pad,
                                        SmallVector<bool>{true});
}

/// q · key(j): one vector multiply and a horizontal sum.
Value score(OpBuilder &b, Location loc, const KeySource &src, Value j,
            Value batch, Value kvh, Value q) {
  auto vecType = cast<VectorType>(q.getType());
  Value key = readRow(b, loc, src, src.keys, j, batch, kvh, vecType);
  return vector::ReductionOp::create(
      b, loc, vector::CombiningKind::ADD,
      arith::MulFOp::create(b, loc, q, key, reassocContract()), Value(),
      reassocContract());
}

/// Folds keys [begin, end) into `state` one at a time: the tail after the
/// last whole block.
Online foldKeys(OpBuilder &b, Location loc, const KeySource &src, Value begin,
                Value end, Value batch, Value kvh, Value q, Online state) {
  auto vecType = cast<VectorType>(q.getType());
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, begin, end, c1, ValueRange{state.m, state.l, state.acc},
      [&](OpBuilder &nb, Location nl, Value j, ValueRange it) {
        Value s = score(nb, nl, src, j, batch, kvh, q);
        Value m = it[0], l = it[1], acc = it[2];
        Value mNew = arith::MaximumFOp::create(nb, nl, m, s);
        Value alpha =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, m, mNew));
        Value p =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, s, mNew));
        Value lNew = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, l, alpha), p);
        Value value = readRow(nb, nl, src, src.values, j, batch, kvh, vecType);
        Value alphaV = vector::BroadcastOp::create(nb, nl, vecType, alpha);
        Value pV = vector::BroadcastOp::create(nb, nl, vecType, p);
        Value accNew = vector::FMAOp::create(
            nb, nl, pV, value, arith::MulFOp::create(nb, nl, acc, alphaV));
        scf::YieldOp::create(nb, nl, ValueRange{mNew, lNew, accNew});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

/// Folds `blocks` whole blocks of kKeyBlock keys from key 0 into `state`.
/// Per block: the scores form one vector, so the max, the exps and the sum
/// are vector ops and the running state is rescaled once per block instead
/// of once per key (the per-key form is a serial chain of two exps).
Online foldKeyBlocks(OpBuilder &b, Location loc, const KeySource &src,
                     Value blocks, Value batch, Value kvh, Value q,
                     Online state) {
  auto vecType = cast<VectorType>(q.getType());
  auto blockType = VectorType::get({kKeyBlock}, b.getF32Type());
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value width = arith::ConstantIndexOp::create(b, loc, kKeyBlock);
  auto loop = scf::ForOp::create(
      b, loc, c0, blocks, c1, ValueRange{state.m, state.l, state.acc},
      [&](OpBuilder &nb, Location nl, Value blk, ValueRange it) {
        Value first = arith::MulIOp::create(nb, nl, blk, width);
        SmallVector<Value> keys, scores;
        for (int64_t t = 0; t < kKeyBlock; ++t) {
          keys.push_back(arith::AddIOp::create(
              nb, nl, first, arith::ConstantIndexOp::create(nb, nl, t)));
          scores.push_back(score(nb, nl, src, keys.back(), batch, kvh, q));
        }
        Value s = vector::FromElementsOp::create(nb, nl, blockType, scores);
        Value m = it[0], l = it[1], acc = it[2];
        Value mNew = arith::MaximumFOp::create(
            nb, nl, m,
            vector::ReductionOp::create(nb, nl, vector::CombiningKind::MAXIMUMF,
                                        s));
        Value alpha =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, m, mNew));
        Value p = math::ExpOp::create(
            nb, nl,
            arith::SubFOp::create(
                nb, nl, s,
                vector::BroadcastOp::create(nb, nl, blockType, mNew)));
        Value lNew = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, l, alpha),
            vector::ReductionOp::create(nb, nl, vector::CombiningKind::ADD, p,
                                        Value(), reassocContract()));
        Value accNew = arith::MulFOp::create(
            nb, nl, acc, vector::BroadcastOp::create(nb, nl, vecType, alpha));
        for (int64_t t = 0; t < kKeyBlock; ++t) {
          Value pt = vector::ExtractOp::create(nb, nl, p, t);
          accNew = vector::FMAOp::create(
              nb, nl, vector::BroadcastOp::create(nb, nl, vecType, pt),
              readRow(nb, nl, src, src.values, keys[t], batch, kvh, vecType),
              accNew);
        }
        scf::YieldOp::create(nb, nl, ValueRange{mNew, lNew, accNew});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

/// Folds keys [0, count): whole blocks, then the tail one key at a time.
Online foldAll(OpBuilder &b, Location loc, const KeySource &src, Value count,
               Value batch, Value kvh, Value q, Online state) {
  Value width = arith::ConstantIndexOp::create(b, loc, kKeyBlock);
  Value blocks = arith::DivUIOp::create(b, loc, count, width);
  state = foldKeyBlocks(b, loc, src, blocks, batch, kvh, q, state);
  Value tail = arith::MulIOp::create(b, loc, blocks, width);
  return foldKeys(b, loc, src, tail, count, batch, kvh, q, state);
}

} // namespace

Value tlm::fusedCachedAttention(OpBuilder &b, Location loc, Value q,
                                Value kPast, Value vPast, Value k, Value v,
                                int64_t group, int64_t lanes) {
  // q: (B, S, H, dk); kPast/vPast: (T, B, kvH, dk); k/v: (S, B, kvH, dk),
  // the new keys in the same position-major layout.
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t heads = qType.getDimSize(2), dk = qType.getDimSize(3);
  Type f32 = b.getF32Type();
  auto vecType = VectorType::get({dk}, f32);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value seq = tensor::DimOp::create(b, loc, q, 1);
  Value past = tensor::DimOp::create(b, loc, kPast, 0);
  Value groupV = arith::ConstantIndexOp::create(b, loc, group);
  Value init = emptyTensor(b, loc, sizesOf(b, loc, q), f32);
  Value scale = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(1.0 / std::sqrt(double(dk))));
  // A finite "minus infinity": exp(m - m') must be exactly 0 on the first
  // key without relying on how an approximated exp treats -inf.
  Value lowest = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-3.0e38f));
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value zeroV =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vecType, 0.0f));
  SmallVector<bool> inBounds(1, true);

  // Both sources are position-major: key j of (batch, kv head) at
  // [j, batch, kv head, 0].
  auto rowAt = [&](Value j, Value bb, Value kvh) {
    return SmallVector<Value>{j, bb, kvh, c0};
  };
  KeySource pastSrc{kPast, vPast, rowAt}, newSrc{k, v, rowAt};

  // (batch, head) pairs are independent: an scf.forall, which the CPU
  // pipeline runs on every thread. Each owns the (1, S, 1, dk) slice of the
  // output it writes; its keys and values (one kv head) stay in cache while
  // its queries run in order.
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{batch, b.getIndexAttr(heads)},
      ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bb = forall.getInductionVars()[0], h = forall.getInductionVars()[1];
  Value kvh = arith::DivUIOp::create(b, loc, h, groupV);
  SmallVector<OpFoldResult> offsets{bb, b.getIndexAttr(0), h,
                                    b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), seq, b.getIndexAttr(1),
                                  b.getIndexAttr(dk)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  // Whole blocks of `lanes` query rows together (AttentionBlocks.cpp), the
  // rest (all of a decode step) one row at a time.
  Value full = c0;
  if (dk % lanes == 0) {
    Value width = arith::ConstantIndexOp::create(b, loc, lanes);
    full = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, seq, width), width);
    slice = attentionQueryBlocks(b, loc,
                                 {q, slice, bb, h, kvh, pastSrc, newSrc, past,
                                  full, scale, lowest, lanes});
  }
  // The rest: the pair's past and new keys and values as (keys x dk) views
  // (nothing copied), which one loop over the two sources reads in turn:
  // the key loops' code exists once, not once per source.
  auto rowsType = RankedTensorType::get({ShapedType::kDynamic, dk}, f32);
  OpFoldResult zeroAttr = b.getIndexAttr(0), oneAttr = b.getIndexAttr(1),
               dkAttr = b.getIndexAttr(dk);
  auto view = [&](Value t, ArrayRef<OpFoldResult> corner,
                  ArrayRef<OpFoldResult> size) -> Value {
    return tensor::ExtractSliceOp::create(b, loc, rowsType, t, corner, size,
                                          strides);
  };
  SmallVector<OpFoldResult> at{zeroAttr, bb, kvh, zeroAttr},
      pastSize{past, oneAttr, oneAttr, dkAttr},
      newSize{seq, oneAttr, oneAttr, dkAttr};
  std::array<Value, 2> keyRows{view(kPast, at, pastSize), view(k, at, newSize)};
  std::array<Value, 2> valueRows{view(vPast, at, pastSize),
                                 view(v, at, newSize)};
  Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
  auto rows = scf::ForOp::create(
      b, loc, full, seq, c1, ValueRange{slice},
      [&](OpBuilder &nb, Location nl, Value i, ValueRange it) {
        Value qRow = vector::TransferReadOp::create(
            nb, nl, vecType, q, ValueRange{bb, i, h, c0}, zeroF, inBounds);
        qRow = arith::MulFOp::create(
            nb, nl, qRow, vector::BroadcastOp::create(nb, nl, vecType, scale));
        // Causal: new query i sees all past keys and new keys 0..i.
        Value visible = arith::AddIOp::create(nb, nl, i, c1);
        auto sources = scf::ForOp::create(
            nb, nl, c0, c2, c1, ValueRange{lowest, zeroF, zeroV},
            [&](OpBuilder &sb, Location sl, Value source, ValueRange st) {
              // An scf.if, not a select: the linalg pipeline would turn a
              // select of tensors into an elementwise generic. (Both views
              // have the same layout, (?, 1) strides: the selected buffer
              // keeps its unit stride and the rows load as vectors.)
              Value isPast = arith::CmpIOp::create(
                  sb, sl, arith::CmpIPredicate::eq, source, c0);
              auto pick = scf::IfOp::create(
                  sb, sl, isPast,
                  [&](OpBuilder &tb, Location tl) {
                    scf::YieldOp::create(
                        tb, tl, ValueRange{keyRows[0], valueRows[0], past});
                  },
                  [&](OpBuilder &eb, Location el) {
                    scf::YieldOp::create(
                        eb, el, ValueRange{keyRows[1], valueRows[1], visible});
                  });
              KeySource rowsSrc{pick.getResult(0), pick.getResult(1),
                                [&](Value j, Value, Value) {
                                  return SmallVector<Value>{j, c0};
                                }};
              Value count = pick.getResult(2);
              Online next = foldAll(sb, sl, rowsSrc, count, bb, kvh, qRow,
                                    {st[0], st[1], st[2]});
              scf::YieldOp::create(sb, sl,
                                   ValueRange{next.m, next.l, next.acc});
            });
        Online st{sources.getResult(0), sources.getResult(1),
                  sources.getResult(2)};
        Value outRow = arith::DivFOp::create(
            nb, nl, st.acc, vector::BroadcastOp::create(nb, nl, vecType, st.l));
        Value written =
            vector::TransferWriteOp::create(nb, nl, outRow, it[0],
                                            ValueRange{c0, i, c0, c0}, inBounds)
                .getResult();
        scf::YieldOp::create(nb, nl, written);
      });
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, rows.getResult(0),
                                        forall.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return forall.getResult(0);
}
