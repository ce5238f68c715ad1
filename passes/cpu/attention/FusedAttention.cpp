//===- FusedAttention.cpp - causal attention with an online softmax -------===//
//
// The fused form of tlm.cached_attention: no scores tensor of the whole
// sequence is ever materialised, and the past keys are read in place from
// the position-major cache. Whole blocks of `lanes` query rows of one
// (batch, head) pair go together with a flash-attention online softmax
// (AttentionBlocks.cpp); the other rows (every decode step) go one at a
// time, key-major over chunks of heads (AttentionRows.cpp). GQA reads kv
// head h / G; nothing is copied. Both parts are scf.foralls, run on every
// thread.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/attention/FusedAttention.h"
#include "passes/common/Builders.h"
#include "passes/cpu/Strategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::tlm;

Value tlm::sequencePast(OpBuilder &b, Location loc, Value lengths,
                        Value batchIndex, Value past) {
  if (!lengths)
    return past;
  Value n = tensor::ExtractOp::create(b, loc, lengths, ValueRange{batchIndex});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), n);
}

Value tlm::fusedCachedAttention(OpBuilder &b, Location loc, Value q,
                                Value kPast, Value vPast, Value k, Value v,
                                Value lengths, int64_t group, int64_t lanes,
                                int64_t threads) {
  // q: (B, S, H, dk); kPast/vPast: (T, B, kvH, dk); k/v: (S, B, kvH, dk),
  // the new keys in the same position-major layout.
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t heads = qType.getDimSize(2), dk = qType.getDimSize(3);
  Type f32 = b.getF32Type();
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value seq = tensor::DimOp::create(b, loc, q, 1);
  Value past = tensor::DimOp::create(b, loc, kPast, 0);
  Value out = emptyTensor(b, loc, sizesOf(b, loc, q), f32);
  Value scale = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(1.0 / std::sqrt(double(dk))));
  // A finite "minus infinity": exp(x - m) must be exactly 0 for it without
  // relying on how an approximated exp treats -inf.
  Value lowest = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-3.0e38f));

  // Both sources are position-major: key j of (batch, kv head) at
  // [j, batch, kv head, 0].
  auto rowAt = [&](Value j, Value bb, Value kvh) {
    return SmallVector<Value>{j, bb, kvh, c0};
  };
  KeySource pastSrc{kPast, vPast, rowAt}, newSrc{k, v, rowAt};

  // Whole blocks of `lanes` query rows, per (batch, head) pair: an
  // scf.forall, which the CPU pipeline runs on every thread. Each pair owns
  // the (1, full, 1, dk) slice of the output it writes; its keys and values
  // (one kv head) stay in cache while its query blocks run in order.
  Value full = c0;
  if (dk % lanes == 0) {
    Value width = arith::ConstantIndexOp::create(b, loc, lanes);
    full = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, seq, width), width);
    // A decode step (fewer rows than `lanes`) has no block: skip the
    // forall, whose empty iterations would still fork and join the threads
    // once a layer.
    Value anyBlock =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, full, c0);
    auto ifBlocks = scf::IfOp::create(b, loc, TypeRange{out.getType()},
                                      anyBlock, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifBlocks.elseBlock());
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointToStart(ifBlocks.thenBlock());
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{batch, b.getIndexAttr(heads)},
        ValueRange{out}, std::nullopt);
    b.setInsertionPointAfter(forall);
    scf::YieldOp::create(b, loc, forall.getResult(0));
    b.setInsertionPointToStart(forall.getBody());
    Value bb = forall.getInductionVars()[0], h = forall.getInductionVars()[1];
    Value kvh = arith::DivUIOp::create(
        b, loc, h, arith::ConstantIndexOp::create(b, loc, group));
    SmallVector<OpFoldResult> offsets{bb, b.getIndexAttr(0), h,
                                      b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), full, b.getIndexAttr(1),
                                    b.getIndexAttr(dk)};
    SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    slice = attentionQueryBlocks(
        b, loc,
        {q, slice, bb, h, kvh, pastSrc, newSrc,
         sequencePast(b, loc, lengths, bb, past), full, scale, lowest, lanes});
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, slice, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    out = ifBlocks.getResult(0);
  }
  // The rest (all of a decode step): one row at a time, key-major.
  return attentionRows(b, loc,
                       {q, out, pastSrc, newSrc, past, lengths, full, scale,
                        lowest, group, headChunk(heads, threads)});
}
