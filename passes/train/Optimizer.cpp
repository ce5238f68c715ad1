//===- Optimizer.cpp - clipping and AdamW as tlm ops -----------------------===//

#include "passes/train/Optimizer.h"

#include "dialect/TlmDialect.h"

using namespace mlir;
using namespace mlir::tlm;

AdamWUpdate tlm::buildAdamW(OpBuilder &b, Location loc, ValueRange params,
                            ValueRange grads, ValueRange m, ValueRange v,
                            Value lr, Value step,
                            const AdamWSettings &settings) {
  AdamWUpdate out;
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  out.norm = GlobalNormOp::create(b, loc, scalarType, grads);
  for (size_t i = 0; i < params.size(); ++i) {
    Value p = params[i];
    bool vector = cast<RankedTensorType>(p.getType()).getRank() <= 1;
    double decay =
        vector && !settings.decayVectors ? 0.0 : settings.weightDecay;
    auto update = AdamWOp::create(
        b, loc, TypeRange{p.getType(), p.getType(), p.getType()}, p, grads[i],
        m[i], v[i], lr, step, out.norm, b.getF64FloatAttr(settings.beta1),
        b.getF64FloatAttr(settings.beta2), b.getF64FloatAttr(settings.eps),
        b.getF64FloatAttr(decay), b.getF64FloatAttr(settings.maxNorm),
        settings.torchForm ? b.getUnitAttr() : UnitAttr());
    out.params.push_back(update.getNewParam());
    out.m.push_back(update.getNewM());
    out.v.push_back(update.getNewV());
  }
  return out;
}
