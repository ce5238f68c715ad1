//===- Passes.td - training passes -------------------------*- tablegen -*-===//
//
// Reverse-mode differentiation at the tlm level: one rule per op
// (GradientRules.cpp) emitting the gradient ops of dialect/TlmGradOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_TRAIN_PASSES_TD
#define TLM_PASSES_TRAIN_PASSES_TD

include "mlir/Pass/PassBase.td"

def TlmBuildTrainStep : Pass<"tlm-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Differentiate a loss function into a training-step function";
  let description = [{
    Takes the function named `loss` (its one result a 0-d f32 loss; no
    calls, one block: the builder emits the model inline for training) and
    adds `@train_step` with the same arguments, returning the loss and the
    gradient of the loss with respect to every f32 argument, in argument
    order. The forward is cloned into it; the pass then walks it backwards
    from the loss, seeded with 1, applying each op's rule
    (GradientRules.cpp): a tlm op's rule emits its gradient op
    (dialect/TlmGradOps.td) on the op's own operands, `arith.addf` passes
    its gradient to both sides, `tensor.cast` casts it back. Where a value
    feeds several ops (the residual stream, a tied embedding table) the
    gradients are summed with `arith.addf`.

    What the backward reads of the forward is the forward ops' operands;
    values the forward computed from them are recomputed by the gradient
    ops' lowering with the forward's own ops, which CSE merges with the
    forward's (so RMSNorm's rms, the FFN's W1·x and W3·x and attention's
    probabilities are computed once).

    Before:
    ```mlir
    func.func @loss(%x: tensor<4x8xf32>, %w: tensor<5x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
      %y = tlm.linear %x, %w : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
      %l = tlm.cross_entropy %y, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (besides `@loss`):
    ```mlir
    func.func @train_step(%x: tensor<4x8xf32>, %w: tensor<5x8xf32>, %t: tensor<4xi64>)
        -> (tensor<f32>, tensor<4x8xf32>, tensor<5x8xf32>) {
      %y = tlm.linear %x, %w : ...
      %l = tlm.cross_entropy %y, %t : ...
      %one = arith.constant dense<1.000000e+00> : tensor<f32>
      %dy = tlm.cross_entropy_grad %one, %y, %t : ...
      %dx, %dw = tlm.linear_grad %dy, %x, %w : ...
      return %l, %dx, %dw : tensor<f32>, tensor<4x8xf32>, tensor<5x8xf32>
    }
    ```
  }];
  let options = [
    Option<"lossFunction", "loss-function", "std::string", "\"loss\"",
           "The function to differentiate">,
    Option<"stepFunction", "step-function", "std::string", "\"train_step\"",
           "The name of the function to build">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::tlm::TlmDialect"
  ];
}

#endif // TLM_PASSES_TRAIN_PASSES_TD
