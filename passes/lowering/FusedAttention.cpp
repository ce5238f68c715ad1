//===- FusedAttention.cpp - causal attention with an online softmax -------===//
//
// The fused form of tlm.cached_attention: for every (batch, query, head) one
// pass over the keys keeps a running max m, a running sum l and a running
// output acc (flash-attention's online softmax), so no scores tensor is ever
// materialised: memory is O(head_dim) per query instead of O(seq²), and the
// past keys are read in place from the position-major cache. Each key costs
// one vector dot product (head_dim lanes), two scalar exps and two vector
// multiply-adds. GQA reads kv head h / G; nothing is copied.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// The running state of one query row.
struct Online {
  Value m, l, acc; ///< f32, f32, vector<dk x f32>
};

/// One key/value source: (keys, values) and how to index row `j` of them.
struct KeySource {
  Value keys, values;
  /// Indices of key `j` for batch `b` and kv head `kvh` (last index 0).
  std::function<SmallVector<Value>(Value j, Value b, Value kvh)> at;
};

/// Folds keys [0, count) of `src` into `state`.
Online foldKeys(OpBuilder &b, Location loc, const KeySource &src, Value count,
                Value batch, Value kvh, Value q, Online state) {
  auto vecType = cast<VectorType>(q.getType());
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  auto reassoc = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  auto loop = scf::ForOp::create(
      b, loc, c0, count, c1, ValueRange{state.m, state.l, state.acc},
      [&](OpBuilder &nb, Location nl, Value j, ValueRange it) {
        SmallVector<Value> idx = src.at(j, batch, kvh);
        SmallVector<bool> inBounds(1, true);
        Value key = vector::TransferReadOp::create(
            nb, nl, vecType, src.keys, idx, pad, inBounds);
        Value s = vector::ReductionOp::create(
            nb, nl, vector::CombiningKind::ADD,
            arith::MulFOp::create(nb, nl, q, key, reassoc), Value(),
            reassoc);
        Value m = it[0], l = it[1], acc = it[2];
        Value mNew = arith::MaximumFOp::create(nb, nl, m, s);
        Value alpha = math::ExpOp::create(
            nb, nl, arith::SubFOp::create(nb, nl, m, mNew));
        Value p = math::ExpOp::create(nb, nl,
                                      arith::SubFOp::create(nb, nl, s, mNew));
        Value lNew = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, l, alpha), p);
        Value value = vector::TransferReadOp::create(
            nb, nl, vecType, src.values, idx, pad, inBounds);
        Value alphaV = vector::BroadcastOp::create(nb, nl, vecType, alpha);
        Value pV = vector::BroadcastOp::create(nb, nl, vecType, p);
        Value accNew = vector::FMAOp::create(
            nb, nl, pV, value, arith::MulFOp::create(nb, nl, acc, alphaV));
        scf::YieldOp::create(nb, nl, ValueRange{mNew, lNew, accNew});
      });
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

} // namespace

Value tlm::fusedCachedAttention(OpBuilder &b, Location loc, Value q,
                                Value kPast, Value vPast, Value k, Value v,
                                int64_t group) {
  // q: (B, S, H, dk); kPast/vPast: (T, B, kvH, dk); k/v: (B, S, kvH, dk).
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t heads = qType.getDimSize(2), dk = qType.getDimSize(3);
  Type f32 = b.getF32Type();
  auto vecType = VectorType::get({dk}, f32);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value seq = tensor::DimOp::create(b, loc, q, 1);
  Value past = tensor::DimOp::create(b, loc, kPast, 0);
  Value hCount = arith::ConstantIndexOp::create(b, loc, heads);
  Value groupV = arith::ConstantIndexOp::create(b, loc, group);
  Value init = emptyTensor(b, loc, sizesOf(b, loc, q), f32);
  Value scale = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(1.0 / std::sqrt(double(dk))));
  // A finite "minus infinity": exp(m - m') must be exactly 0 on the first
  // key without relying on how an approximated exp treats -inf.
  Value lowest = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-3.0e38f));
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value zeroV = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                      vecType, 0.0f));
  SmallVector<bool> inBounds(1, true);

  KeySource pastSrc{kPast, vPast, [&](Value j, Value bb, Value kvh) {
                      return SmallVector<Value>{j, bb, kvh, c0};
                    }};
  KeySource newSrc{k, v, [&](Value j, Value bb, Value kvh) {
                     return SmallVector<Value>{bb, j, kvh, c0};
                   }};

  auto nest = [&](OpBuilder &b1, Location l1, Value bb, Value out1) {
    return scf::ForOp::create(
        b1, l1, c0, seq, c1, ValueRange{out1},
        [&](OpBuilder &b2, Location l2, Value i, ValueRange it2) {
          auto heads = scf::ForOp::create(
              b2, l2, c0, hCount, c1, ValueRange{it2[0]},
              [&](OpBuilder &b3, Location l3, Value h, ValueRange it3) {
                Value kvh = arith::DivUIOp::create(b3, l3, h, groupV);
                Value pad = zeroF;
                Value qRow = vector::TransferReadOp::create(
                    b3, l3, vecType, q, ValueRange{bb, i, h, c0}, pad,
                    inBounds);
                qRow = arith::MulFOp::create(
                    b3, l3, qRow,
                    vector::BroadcastOp::create(b3, l3, vecType, scale));
                Online st{lowest, zeroF, zeroV};
                st = foldKeys(b3, l3, pastSrc, past, bb, kvh, qRow, st);
                // Causal: new query i sees new keys 0..i.
                Value visible = arith::AddIOp::create(b3, l3, i, c1);
                st = foldKeys(b3, l3, newSrc, visible, bb, kvh, qRow, st);
                Value outRow = arith::DivFOp::create(
                    b3, l3, st.acc,
                    vector::BroadcastOp::create(b3, l3, vecType, st.l));
                Value written = vector::TransferWriteOp::create(
                                    b3, l3, outRow, it3[0],
                                    ValueRange{bb, i, h, c0}, inBounds)
                                    .getResult();
                scf::YieldOp::create(b3, l3, written);
              });
          scf::YieldOp::create(b2, l2, heads.getResults());
        });
  };
  auto loop = scf::ForOp::create(
      b, loc, c0, batch, c1, ValueRange{init},
      [&](OpBuilder &b1, Location l1, Value bb, ValueRange it1) {
        scf::YieldOp::create(b1, l1, nest(b1, l1, bb, it1[0]).getResults());
      });
  return loop.getResult(0);
}
