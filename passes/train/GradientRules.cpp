//===- GradientRules.cpp - each op's reverse-mode rule --------------------===//
//
// One function per differentiable op: the tlm ops emit their gradient op
// on their own operands (so the backward reads what the forward read), the
// two upstream ops the builder emits between them (the residual
// `arith.addf`, `tensor.cast`) pass the gradient through.
//
//===----------------------------------------------------------------------===//

#include "passes/train/GradientRules.h"

#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

using Grads = SmallVector<Value>;

Grads linearRule(OpBuilder &b, LinearOp op, Value dy) {
  auto g = LinearGradOp::create(b, op.getLoc(), op.getInput().getType(),
                                op.getWeight().getType(), dy, op.getInput(),
                                op.getWeight());
  return {g.getInputGrad(), g.getWeightGrad()};
}

Grads embeddingRule(OpBuilder &b, EmbeddingOp op, Value dy) {
  auto g = EmbeddingGradOp::create(b, op.getLoc(), op.getTable().getType(), dy,
                                   op.getIds());
  return {Value(), g.getTableGrad()};
}

Grads rmsNormRule(OpBuilder &b, RMSNormOp op, Value dy) {
  auto g = RMSNormGradOp::create(b, op.getLoc(), op.getInput().getType(),
                                 op.getWeight().getType(), dy, op.getInput(),
                                 op.getWeight(), op.getEpsAttr());
  return {g.getInputGrad(), g.getWeightGrad()};
}

Grads swigluRule(OpBuilder &b, SwiGLUOp op, Value dy) {
  auto g = SwiGLUGradOp::create(
      b, op.getLoc(),
      TypeRange{op.getInput().getType(), op.getW1().getType(),
                op.getW2().getType(), op.getW3().getType()},
      dy, op.getInput(), op.getW1(), op.getW2(), op.getW3());
  return Grads(g.getResults());
}

Grads siluFfnRule(OpBuilder &b, SiLUFFNOp op, Value dy) {
  auto g = SiLUFFNGradOp::create(b, op.getLoc(),
                                 TypeRange{op.getInput().getType(),
                                           op.getW1().getType(),
                                           op.getW2().getType()},
                                 dy, op.getInput(), op.getW1(), op.getW2());
  return Grads(g.getResults());
}

/// tlm.attention_lse (which tlm-build-train-step puts in place of
/// tlm.attention): its gradient reads its output and row logsumexps.
Grads attentionRule(OpBuilder &b, AttentionLseOp op, Value dy) {
  auto g = AttentionGradOp::create(
      b, op.getLoc(),
      TypeRange{op.getQ().getType(), op.getK().getType(),
                op.getV().getType()},
      dy, op.getQ(), op.getK(), op.getV(), op.getResult(), op.getLse(),
      op.getNumHeadsAttr(), op.getNumKvHeadsAttr(), op.getRopeThetaAttr());
  return Grads{g.getQGrad(), g.getKGrad(), g.getVGrad()};
}

Grads crossEntropyRule(OpBuilder &b, CrossEntropyOp op, Value dl) {
  auto g = CrossEntropyGradOp::create(b, op.getLoc(), op.getLogits().getType(),
                                      dl, op.getLogits(), op.getTargets());
  return {g.getLogitsGrad(), Value()};
}

/// The upstream ops the builder puts between the tlm ops: the residual add
/// hands its gradient to both operands, a cast casts it back; anything else
/// has no rule.
FailureOr<Grads> passThrough(OpBuilder &b, Operation *op, Value dy) {
  return TypeSwitch<Operation *, FailureOr<Grads>>(op)
      .Case([&](arith::AddFOp add) -> FailureOr<Grads> {
        if (add.getLhs().getType() != add.getType() ||
            add.getRhs().getType() != add.getType())
          return add.emitOpError("needs operands of its result's type to be "
                                 "differentiated (no broadcasting)");
        return Grads{dy, dy};
      })
      .Case([&](tensor::CastOp cast) -> FailureOr<Grads> {
        return Grads{tensor::CastOp::create(b, cast.getLoc(),
                                            cast.getSource().getType(), dy)
                         .getResult()};
      })
      .Default([](Operation *o) -> FailureOr<Grads> {
        return o->emitOpError("has no gradient rule in tlm-build-train-step");
      });
}

} // namespace

FailureOr<SmallVector<Value>>
tlm::buildOperandGradients(OpBuilder &b, Operation *op,
                           ArrayRef<Value> resultGrads) {
  // Every rule differentiates through an op's first result (the others,
  // tlm.attention_lse's logsumexps, are read by its gradient only).
  Value dy = resultGrads.empty() ? Value() : resultGrads.front();
  if (!dy || llvm::any_of(resultGrads.drop_front(),
                          [](Value g) { return bool(g); }))
    return op->emitOpError("reaches the loss through a result other than "
                           "its first, which tlm-build-train-step does not "
                           "differentiate");
  FailureOr<Grads> grads =
      TypeSwitch<Operation *, FailureOr<Grads>>(op)
          .Case([&](LinearOp o) { return linearRule(b, o, dy); })
          .Case([&](EmbeddingOp o) { return embeddingRule(b, o, dy); })
          .Case([&](RMSNormOp o) { return rmsNormRule(b, o, dy); })
          .Case([&](SwiGLUOp o) { return swigluRule(b, o, dy); })
          .Case([&](SiLUFFNOp o) { return siluFfnRule(b, o, dy); })
          .Case([&](AttentionLseOp o) { return attentionRule(b, o, dy); })
          .Case([&](CrossEntropyOp o) { return crossEntropyRule(b, o, dy); })
          .Default([&](Operation *o) { return passThrough(b, o, dy); });
  if (failed(grads))
    return failure();
  assert(grads->size() == op->getNumOperands() && "one gradient per operand");
  return grads;
}
