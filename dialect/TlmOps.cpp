//===- TlmOps.cpp - tlm op verifiers --------------------------------------===//
//
// Every shape rule of docs/spec/model.md is checked here, with a message that
// names what was expected and what was found. Dynamic (`?`) dims are
// compatible with anything; the runtime checks them against real sizes.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "dialect/Verify.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tlm;
using namespace mlir::tlm::verify;

LogicalResult mlir::tlm::verifyNonEmptyShapes(Operation *op) {
  auto check = [&](Value v, StringRef kind, unsigned i) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !llvm::is_contained(t.getShape(), 0))
      return success();
    return op->emitOpError() << "expected no dimension of size 0 in " << kind
                             << " #" << i << ", found shape " << shapeStr(t)
                             << " (the lowering needs at least one element)";
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(check(v, "operand", i)))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(check(v, "result", i)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  RankedTensorType in = ty(getInput()), w = ty(getWeight()),
                   out = ty(getResult());
  if (in.getRank() < 1)
    return emitOpError("expected input of rank >= 1, found a 0-d tensor");
  if (failed(weightElementType(*this, "weight", getWeight(),
                               in.getElementType())) ||
      failed(
          sameElementType(*this, "input", getInput(), "result", getResult())))
    return failure();
  int64_t rank = in.getRank();
  if (failed(expectRank(*this, "weight", w, 2)) ||
      failed(expectDim(*this, "weight", w, 1, in.getDimSize(rank - 1),
                       "d_in, the input's last dim")) ||
      failed(expectRank(*this, "result", out, rank)))
    return failure();
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (failed(expectDim(*this, "result", out, i, in.getDimSize(i),
                         "batch dim of the input")))
      return failure();
  return expectDim(*this, "result", out, rank - 1, w.getDimSize(0),
                   "d_out, the weight's dim 0");
}

//===----------------------------------------------------------------------===//
// DequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult DequantizeOp::verify() {
  RankedTensorType q = ty(getValues()), d = ty(getScales()),
                   w = ty(getResult());
  int64_t bits = getBits();
  if (bits != 8 && bits != 4)
    return emitOpError() << "expected bits 8 (q8_0) or 4 (q4_0), found "
                         << bits;
  if (failed(expectRank(*this, "values", q, 2)) ||
      failed(expectRank(*this, "scales", d, 2)) ||
      failed(expectRank(*this, "result", w, 2)))
    return failure();
  if (!w.hasStaticShape())
    return emitOpError() << "expected a static result shape, found "
                         << shapeStr(w);
  int64_t n = w.getDimSize(0), k = w.getDimSize(1);
  if (k % kBlock != 0)
    return emitOpError() << "expected result dim 1 (k) to be a multiple of "
                         << kBlock << " (the block), found " << k;
  return failure(
      failed(expectDim(*this, "values", q, 0, n, "n, the result's dim 0")) ||
      failed(expectDim(*this, "values", q, 1, bits == 8 ? k : k / 2,
                       bits == 8 ? "k, one code a weight"
                                 : "k / 2, two codes a byte")) ||
      failed(expectDim(*this, "scales", d, 0, n, "n, the result's dim 0")) ||
      failed(expectDim(*this, "scales", d, 1, k / kBlock,
                       "k / 32, one scale a block")));
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType ids = ty(getIds()), table = ty(getTable()),
                   out = ty(getResult());
  if (failed(expectRank(*this, "table", table, 2)) ||
      failed(weightElementType(*this, "table", getTable(),
                               out.getElementType())))
    return failure();
  return expectIdsRows(*this, "result", out, ids, table.getDimSize(1),
                       "d_model, the table's dim 1");
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  RankedTensorType in = ty(getInput()), g = ty(getWeight());
  if (failed(verifyNormInput(*this, in, getEps().convertToDouble())) ||
      failed(
          sameElementType(*this, "input", getInput(), "weight", getWeight())))
    return failure();
  return expectGain(*this, g, in);
}

//===----------------------------------------------------------------------===//
// Feed-forward ops
//===----------------------------------------------------------------------===//

/// Shared by SwiGLU and FFN-SiLU: w1/w3 `(d_ff, d_model)`, w2 `(d_model,
/// d_ff)`.
static LogicalResult verifyFFN(Operation *op, Value input, Value w1, Value w2,
                               Value w3) {
  RankedTensorType in = ty(input);
  if (in.getRank() < 1)
    return op->emitOpError("expected input of rank >= 1, found a 0-d tensor");
  for (auto [name, w] :
       {std::pair<StringRef, Value>{"w1", w1}, {"w2", w2}, {"w3", w3}})
    if (w && failed(weightElementType(op, name, w, in.getElementType())))
      return failure();
  int64_t dModel = in.getDimSize(in.getRank() - 1);
  if (failed(expectRank(op, "w1", ty(w1), 2)))
    return failure();
  int64_t dFF = ty(w1).getDimSize(0);
  if (failed(verifyProjection(op, "w1", w1, dModel, dFF, "d_ff")) ||
      failed(verifyProjection(op, "w2", w2, dFF, dModel, "d_model")))
    return failure();
  if (w3 &&
      failed(verifyProjection(op, "w3", w3, dModel, dFF, "d_ff, as in w1")))
    return failure();
  return success();
}

LogicalResult SwiGLUOp::verify() {
  return verifyFFN(*this, getInput(), getW1(), getW2(), getW3());
}

LogicalResult SiLUFFNOp::verify() {
  return verifyFFN(*this, getInput(), getW1(), getW2(), Value());
}

//===----------------------------------------------------------------------===//
// RoPEOp
//===----------------------------------------------------------------------===//

/// Positions are right-aligned with the first `numDims` dims of `input`
/// (those before the rotated one); each dim equals the input's or is 1.
static LogicalResult verifyPositions(Operation *op, Value positions,
                                     RankedTensorType input, int64_t numDims) {
  RankedTensorType p = ty(positions);
  if (p.getRank() < 1 || p.getRank() > numDims)
    return op->emitOpError()
           << "expected positions of rank 1 to " << numDims << ", found rank "
           << p.getRank() << " " << shapeStr(p);
  int64_t shift = numDims - p.getRank();
  for (int64_t i = 0; i < p.getRank(); ++i) {
    int64_t pd = p.getDimSize(i), xd = input.getDimSize(i + shift);
    if (pd != 1 && !compatible(pd, xd))
      return op->emitOpError()
             << "expected positions dim " << i << " to be 1 or " << dimStr(xd)
             << " (input dim " << i + shift << "), found " << dimStr(pd);
  }
  return success();
}

LogicalResult RoPEOp::verify() {
  RankedTensorType in = ty(getInput());
  if (in.getRank() < 2)
    return emitOpError() << "expected input of rank >= 2 (..., seq, d), "
                            "found rank "
                         << in.getRank();
  int64_t d = in.getDimSize(in.getRank() - 1);
  if (ShapedType::isDynamic(d) || d % 2 != 0)
    return emitOpError() << "expected a static, even last dim (rotated "
                            "pairs), found "
                         << dimStr(d);
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError() << "expected theta > 0, found "
                         << getTheta().convertToDouble();
  if (getPositions())
    return verifyPositions(*this, getPositions(), in, in.getRank() - 1);
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// `rope_theta` as a double, when set.

/// The rules tlm.attention and tlm.cached_attention share for this step's
/// `q (B, S, H·d_k)`, `k`, `v (B, S, KV·d_k)`: ranks, element types, head
/// counts, and an even head dim with RoPE.
LogicalResult mlir::tlm::verify::verifyQKV(Operation *op, Value qv, Value kv, Value vv,
                               int64_t heads, int64_t kvHeads,
                               std::optional<double> theta) {
  RankedTensorType q = ty(qv), k = ty(kv), v = ty(vv);
  for (auto [name, t] :
       {std::pair<StringRef, RankedTensorType>{"q", q}, {"k", k}, {"v", v}})
    if (failed(expectRank(op, name, t, 3)))
      return failure();
  if (failed(sameElementType(op, "q", qv, "k", kv)) ||
      failed(sameElementType(op, "q", qv, "v", vv)))
    return failure();
  if (heads % kvHeads != 0)
    return op->emitOpError()
           << "expected num_heads (" << heads
           << ") to be divisible by num_kv_heads (" << kvHeads << ")";
  int64_t dModel = q.getDimSize(2);
  if (ShapedType::isDynamic(dModel))
    return op->emitOpError("expected a static feature dim in q");
  if (dModel % heads != 0)
    return op->emitOpError()
           << "expected q's feature dim (" << dModel
           << ") to be divisible by num_heads (" << heads << ")";
  int64_t dk = dModel / heads;
  for (auto [name, t] :
       {std::pair<StringRef, RankedTensorType>{"k", k}, {"v", v}}) {
    if (failed(expectDim(op, name, t, 0, q.getDimSize(0), "batch")) ||
        failed(expectDim(op, name, t, 1, q.getDimSize(1), "seq")) ||
        failed(expectDim(op, name, t, 2, kvHeads * dk, "num_kv_heads * d_k")))
      return failure();
  }
  if (theta) {
    if (!(*theta > 0.0))
      return op->emitOpError() << "expected rope_theta > 0, found " << *theta;
    if (dk % 2 != 0)
      return op->emitOpError()
             << "expected an even head dim with RoPE, found d_k " << dk << " ("
             << dModel << " / " << heads << ")";
  }
  return success();
}

int64_t AttentionOp::getHeadDim() {
  return ty(getQ()).getDimSize(2) / getNumHeads();
}

std::optional<double> AttentionOp::getRopeThetaValue() {
  return thetaValue(getRopeTheta());
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyQKV(*this, getQ(), getK(), getV(), getNumHeads(),
                       getNumKvHeads(), getRopeThetaValue())))
    return failure();
  if (getPositions()) {
    if (!getRopeTheta())
      return emitOpError("has positions but no rope_theta: positions are "
                         "only used by RoPE");
    return verifyPositions(*this, getPositions(), ty(getQ()), 2);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CachedAttentionOp
//===----------------------------------------------------------------------===//

int64_t CachedAttentionOp::getHeadDim() {
  return ty(getQ()).getDimSize(2) / getNumHeads();
}

std::optional<double> CachedAttentionOp::getRopeThetaValue() {
  return thetaValue(getRopeTheta());
}

LogicalResult CachedAttentionOp::verify() {
  if (failed(verifyQKV(*this, getQ(), getK(), getV(), getNumHeads(),
                       getNumKvHeads(), getRopeThetaValue())))
    return failure();
  RankedTensorType q = ty(getQ()), k = ty(getK());
  int64_t kvDim = getNumKvHeads() * getHeadDim();
  RankedTensorType kp = ty(getKPast());
  for (auto [name, v] : {std::pair<StringRef, Value>{"k_past", getKPast()},
                         {"v_past", getVPast()}})
    if (failed(expectRank(*this, name, ty(v), 3)) ||
        failed(sameElementType(*this, "q", getQ(), name, v)) ||
        failed(expectDim(*this, name, ty(v), 0, kp.getDimSize(0),
                         "past length, as in k_past")) ||
        failed(expectDim(*this, name, ty(v), 1, q.getDimSize(0), "batch")) ||
        failed(expectDim(*this, name, ty(v), 2, kvDim, "num_kv_heads * d_k")))
      return failure();
  if (Value lengths = getLengths())
    if (failed(expectRank(*this, "lengths", ty(lengths), 1)) ||
        failed(expectDim(*this, "lengths", ty(lengths), 0, q.getDimSize(0),
                         "batch")))
      return failure();
  if (getResult().getType() != getQ().getType())
    return emitOpError("expected the result to have the type of q");
  for (auto [name, v] : {std::pair<StringRef, Value>{"k_new", getKNew()},
                         {"v_new", getVNew()}}) {
    RankedTensorType t = ty(v);
    if (failed(expectRank(*this, name, t, 3)) ||
        failed(sameElementType(*this, "q", getQ(), name, v)) ||
        failed(expectDim(*this, name, t, 0, k.getDimSize(1), "seq")) ||
        failed(expectDim(*this, name, t, 1, k.getDimSize(0), "batch")) ||
        failed(expectDim(*this, name, t, 2, kvDim, "num_kv_heads * d_k")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SDPAOp
//===----------------------------------------------------------------------===//

LogicalResult SDPAOp::verify() {
  RankedTensorType q = ty(getQ()), k = ty(getK()), v = ty(getV()),
                   out = ty(getResult());
  int64_t rank = q.getRank();
  if (rank < 2)
    return emitOpError() << "expected q of rank >= 2 (..., seq, d_k), found "
                            "rank "
                         << rank;
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"k", k},
                         {"v", v},
                         {"result", out}})
    if (failed(expectRank(*this, name, t, rank)))
      return failure();
  for (auto [name, val] : {std::pair<StringRef, Value>{"k", getK()},
                           {"v", getV()},
                           {"result", getResult()}})
    if (failed(sameElementType(*this, "q", getQ(), name, val)))
      return failure();
  for (int64_t i = 0; i + 2 < rank; ++i)
    for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"k", k},
                           {"v", v},
                           {"result", out}})
      if (failed(expectDim(*this, name, t, i, q.getDimSize(i), "batch")))
        return failure();
  int64_t sq = q.getDimSize(rank - 2), sk = k.getDimSize(rank - 2);
  if (failed(expectDim(*this, "k", k, rank - 1, q.getDimSize(rank - 1),
                       "d_k, as in q")) ||
      failed(expectDim(*this, "v", v, rank - 2, sk, "keys, as in k")) ||
      failed(expectDim(*this, "result", out, rank - 2, sq, "queries")) ||
      failed(expectDim(*this, "result", out, rank - 1, v.getDimSize(rank - 1),
                       "d_v, as in v")))
    return failure();
  if (!getMask())
    return success();
  if (getCausal())
    return emitOpError("expected either a mask or causal, found both");
  RankedTensorType m = ty(getMask());
  if (failed(expectRank(*this, "mask", m, rank)))
    return failure();
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (failed(expectDim(*this, "mask", m, i, q.getDimSize(i), "batch")))
      return failure();
  if (failed(expectDim(*this, "mask", m, rank - 2, sq, "queries")) ||
      failed(expectDim(*this, "mask", m, rank - 1, sk, "keys")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (ty(getInput()).getRank() < 1)
    return emitOpError("expected input of rank >= 1, found a 0-d tensor");
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType logits = ty(getLogits()), targets = ty(getTargets()),
                   out = ty(getResult());
  if (logits.getRank() < 1)
    return emitOpError("expected logits of rank >= 1 (..., vocab), found a "
                       "0-d tensor");
  if (failed(expectRank(*this, "targets", targets, logits.getRank() - 1)) ||
      failed(expectRank(*this, "result", out, 0)) ||
      failed(
          sameElementType(*this, "logits", getLogits(), "result", getResult())))
    return failure();
  for (int64_t i = 0; i < targets.getRank(); ++i)
    if (failed(expectDim(*this, "targets", targets, i, logits.getDimSize(i),
                         "position dim of logits")))
      return failure();
  return success();
}

#define GET_OP_CLASSES
#include "dialect/TlmOps.cpp.inc"
