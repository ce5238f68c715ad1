//===- TlmGradOps.cpp - gradient op verifiers -----------------------------===//
//
// A gradient op is valid when its primal operands would make a valid forward
// op, `grad` has the forward result's shape, and each returned gradient has
// the shape of the operand it belongs to. The optimizer's ops keep every
// state tensor in its parameter's shape.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "dialect/Verify.h"

using namespace mlir;
using namespace mlir::tlm;
using namespace mlir::tlm::verify;

namespace {

/// `t`'s shape is compatible with `expected`'s: same rank, each dim equal or
/// dynamic in either.
LogicalResult sameShape(Operation *op, StringRef name, RankedTensorType t,
                        StringRef expectedName, RankedTensorType expected) {
  if (t.getRank() == expected.getRank() &&
      llvm::all_of(llvm::zip(t.getShape(), expected.getShape()), [](auto p) {
        return compatible(std::get<0>(p), std::get<1>(p));
      }))
    return success();
  return op->emitOpError() << "expected " << name << " of the shape of "
                           << expectedName << " " << shapeStr(expected)
                           << ", found " << shapeStr(t);
}

/// Each gradient result has the shape of its primal operand.
LogicalResult
gradientsMatch(Operation *op,
               ArrayRef<std::tuple<StringRef, Value, StringRef, Value>> pairs) {
  for (auto [gradName, grad, primalName, primal] : pairs)
    if (failed(sameShape(op, gradName, ty(grad), primalName, ty(primal))))
      return failure();
  return success();
}

/// `grad` of the shape `y = x · Wᵀ` has: x's leading dims, then d_out.
LogicalResult projectionGrad(Operation *op, Value grad, Value x, Value w,
                             StringRef wName) {
  RankedTensorType in = ty(x), dy = ty(grad), wt = ty(w);
  if (in.getRank() < 1)
    return op->emitOpError("expected input of rank >= 1, found a 0-d tensor");
  if (failed(expectRank(op, wName, wt, 2)) ||
      failed(expectDim(op, wName, wt, 1, in.getDimSize(in.getRank() - 1),
                       "d_in, the input's last dim")) ||
      failed(expectRank(op, "grad", dy, in.getRank())))
    return failure();
  for (int64_t i = 0; i + 1 < in.getRank(); ++i)
    if (failed(expectDim(op, "grad", dy, i, in.getDimSize(i),
                         "batch dim of the input")))
      return failure();
  return expectDim(op, "grad", dy, in.getRank() - 1, wt.getDimSize(0),
                   "d_out, the weight's dim 0");
}

/// The FFNs: W1 (d_ff, d_model), W2 (d_model, d_ff), [W3 like W1]; grad
/// has the input's shape.
LogicalResult ffnGrad(Operation *op, Value grad, Value x, Value w1, Value w2,
                      Value w3) {
  RankedTensorType in = ty(x);
  if (in.getRank() < 1)
    return op->emitOpError("expected input of rank >= 1, found a 0-d tensor");
  int64_t dModel = in.getDimSize(in.getRank() - 1);
  int64_t dFF = ty(w1).getDimSize(0);
  if (failed(expectRank(op, "w1", ty(w1), 2)) ||
      failed(expectDim(op, "w1", ty(w1), 1, dModel, "d_model")) ||
      failed(expectRank(op, "w2", ty(w2), 2)) ||
      failed(expectDim(op, "w2", ty(w2), 0, dModel, "d_model")) ||
      failed(expectDim(op, "w2", ty(w2), 1, dFF, "d_ff, w1's dim 0")) ||
      (w3 && failed(sameShape(op, "w3", ty(w3), "w1", ty(w1)))))
    return failure();
  return sameShape(op, "grad", ty(grad), "input", in);
}

} // namespace

LogicalResult LinearGradOp::verify() {
  if (failed(projectionGrad(*this, getGrad(), getInput(), getWeight(),
                            "weight")))
    return failure();
  return gradientsMatch(*this,
                        {{"input_grad", getInputGrad(), "input", getInput()},
                         {"weight_grad", getWeightGrad(), "weight",
                          getWeight()}});
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType ids = ty(getIds()), dy = ty(getGrad()),
                   table = ty(getTableGrad());
  if (failed(expectRank(*this, "table_grad", table, 2)))
    return failure();
  if (ShapedType::isDynamic(table.getDimSize(0)))
    return emitOpError("expected a static vocab_size (table_grad dim 0)");
  return expectIdsRows(*this, "grad", dy, ids, table.getDimSize(1),
                       "d_model, table_grad's dim 1");
}

LogicalResult RMSNormGradOp::verify() {
  RankedTensorType in = ty(getInput()), g = ty(getWeight());
  if (failed(verifyNormInput(*this, in, getEps().convertToDouble())) ||
      failed(expectGain(*this, g, in)) ||
      failed(sameShape(*this, "grad", ty(getGrad()), "input", in)))
    return failure();
  return gradientsMatch(*this,
                        {{"input_grad", getInputGrad(), "input", getInput()},
                         {"weight_grad", getWeightGrad(), "weight",
                          getWeight()}});
}

LogicalResult SwiGLUGradOp::verify() {
  if (failed(ffnGrad(*this, getGrad(), getInput(), getW1(), getW2(), getW3())))
    return failure();
  return gradientsMatch(*this,
                        {{"input_grad", getInputGrad(), "input", getInput()},
                         {"w1_grad", getW1Grad(), "w1", getW1()},
                         {"w2_grad", getW2Grad(), "w2", getW2()},
                         {"w3_grad", getW3Grad(), "w3", getW3()}});
}

LogicalResult SiLUFFNGradOp::verify() {
  if (failed(ffnGrad(*this, getGrad(), getInput(), getW1(), getW2(), Value())))
    return failure();
  return gradientsMatch(*this,
                        {{"input_grad", getInputGrad(), "input", getInput()},
                         {"w1_grad", getW1Grad(), "w1", getW1()},
                         {"w2_grad", getW2Grad(), "w2", getW2()}});
}

/// `lse` of (batch, num_heads, seq) for q (batch, seq, ...).
static LogicalResult verifyLse(Operation *op, Value lse, Value q,
                               int64_t heads) {
  RankedTensorType l = ty(lse), qt = ty(q);
  if (failed(expectRank(op, "lse", l, 3)) ||
      failed(expectDim(op, "lse", l, 0, qt.getDimSize(0), "batch")) ||
      failed(expectDim(op, "lse", l, 1, heads, "num_heads")) ||
      failed(expectDim(op, "lse", l, 2, qt.getDimSize(1), "seq")))
    return failure();
  return success();
}

int64_t AttentionLseOp::getHeadDim() {
  return ty(getQ()).getDimSize(2) / getNumHeads();
}

std::optional<double> AttentionLseOp::getRopeThetaValue() {
  return thetaValue(getRopeTheta());
}

LogicalResult AttentionLseOp::verify() {
  if (failed(verifyQKV(*this, getQ(), getK(), getV(), getNumHeads(),
                       getNumKvHeads(), getRopeThetaValue())) ||
      failed(sameShape(*this, "result", ty(getResult()), "q", ty(getQ()))))
    return failure();
  return verifyLse(*this, getLse(), getQ(), getNumHeads());
}

int64_t AttentionGradOp::getHeadDim() {
  return ty(getQ()).getDimSize(2) / getNumHeads();
}

std::optional<double> AttentionGradOp::getRopeThetaValue() {
  return thetaValue(getRopeTheta());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyQKV(*this, getQ(), getK(), getV(), getNumHeads(),
                       getNumKvHeads(), getRopeThetaValue())) ||
      failed(sameShape(*this, "grad", ty(getGrad()), "q", ty(getQ()))) ||
      failed(sameShape(*this, "out", ty(getOut()), "q", ty(getQ()))) ||
      failed(verifyLse(*this, getLse(), getQ(), getNumHeads())))
    return failure();
  return gradientsMatch(*this, {{"q_grad", getQGrad(), "q", getQ()},
                                {"k_grad", getKGrad(), "k", getK()},
                                {"v_grad", getVGrad(), "v", getV()}});
}

LogicalResult CrossEntropyGradOp::verify() {
  RankedTensorType logits = ty(getLogits()), targets = ty(getTargets());
  if (logits.getRank() < 1)
    return emitOpError("expected logits of rank >= 1 (..., vocab), found a "
                       "0-d tensor");
  if (failed(expectRank(*this, "grad", ty(getGrad()), 0)) ||
      failed(expectRank(*this, "targets", targets, logits.getRank() - 1)))
    return failure();
  for (int64_t i = 0; i < targets.getRank(); ++i)
    if (failed(expectDim(*this, "targets", targets, i, logits.getDimSize(i),
                         "position dim of logits")))
      return failure();
  return gradientsMatch(
      *this, {{"logits_grad", getLogitsGrad(), "logits", getLogits()}});
}

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("expected at least one tensor");
  return success();
}

LogicalResult AdamWOp::verify() {
  RankedTensorType p = ty(getParam());
  if (failed(sameShape(*this, "grad", ty(getGrad()), "param", p)) ||
      failed(sameShape(*this, "m", ty(getM()), "param", p)) ||
      failed(sameShape(*this, "v", ty(getV()), "param", p)) ||
      failed(gradientsMatch(*this,
                            {{"new_param", getNewParam(), "param", getParam()},
                             {"new_m", getNewM(), "param", getParam()},
                             {"new_v", getNewV(), "param", getParam()}})))
    return failure();
  auto inUnit = [](double x) { return x >= 0.0 && x < 1.0; };
  if (!inUnit(getBeta1().convertToDouble()) ||
      !inUnit(getBeta2().convertToDouble()))
    return emitOpError() << "expected beta1 and beta2 in [0, 1), found "
                         << getBeta1().convertToDouble() << " and "
                         << getBeta2().convertToDouble();
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "expected eps > 0, found "
                         << getEps().convertToDouble();
  if (!(getWeightDecay().convertToDouble() >= 0.0) ||
      !(getMaxNorm().convertToDouble() >= 0.0))
    return emitOpError() << "expected weight_decay >= 0 and max_norm >= 0, "
                            "found "
                         << getWeightDecay().convertToDouble() << " and "
                         << getMaxNorm().convertToDouble();
  return success();
}
