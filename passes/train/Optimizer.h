//===- Optimizer.h - clipping and AdamW as tlm ops --------------*- C++ -*-===//
//
// The update tlm-build-train-step appends to a step (optimizer=adamw), and
// which the compiler also builds on its own as `@apply_step` for gradients
// summed outside the step (gradient accumulation, data parallelism):
// tlm.global_norm of the gradients, then one tlm.adamw a parameter.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_TRAIN_OPTIMIZER_H
#define TLM_PASSES_TRAIN_OPTIMIZER_H

#include "mlir/IR/Builders.h"

namespace mlir::tlm {

struct AdamWSettings {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  double maxNorm = 1.0;
  bool torchForm = false;
  /// Decay 1-D parameters too.
  bool decayVectors = true;
};

struct AdamWUpdate {
  /// The gradients' global norm before clipping (0-d f32).
  Value norm;
  SmallVector<Value> params, m, v;
};

/// At `b`'s insertion point: the clipped AdamW update of `params` by
/// `grads` with moments `m` and `v`, learning rate `lr` and step number
/// `step` (0-d f32 tensors).
AdamWUpdate buildAdamW(OpBuilder &b, Location loc, ValueRange params,
                       ValueRange grads, ValueRange m, ValueRange v, Value lr,
                       Value step, const AdamWSettings &settings);

} // namespace mlir::tlm

#endif // TLM_PASSES_TRAIN_OPTIMIZER_H
