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
    adds `@train_step` (`step-function`) with the same arguments, returning the loss and the
    gradient of the loss with respect to every f32 argument, in argument
    order. The forward is cloned into it; the pass then walks it backwards
    from the loss, seeded with 1, applying each op's rule
    (GradientRules.cpp): a tlm op's rule emits its gradient op
    (dialect/TlmGradOps.td) on the op's own operands, `arith.addf` passes
    its gradient to both sides, `tensor.cast` casts it back. Where a value
    feeds several ops (the residual stream, a tied embedding table) the
    gradients are summed with `arith.addf`.

    What the backward reads of the forward is the forward ops' operands;
    values the forward computed from them are rebuilt by the gradient ops'
    lowering with the forward's own ops, which CSE merges with the
    forward's (so RMSNorm's rms, the FFN's W1·x and W3·x and the
    cross-entropy's logsumexp are computed once). Attention is replaced in
    the step by `tlm.attention_lse`, whose output and row logsumexps its
    gradient reads: it rebuilds the probabilities, never keeps them.

    With `recompute` (the default), cheap elementwise values the backward
    reads are computed again there instead of kept alive from the forward
    (passes/common/Recompute.h): an RMSNorm output read by a Linear's
    gradient gets a copy of the norm, marked `tlm.recompute`, next to its
    first backward reader; the FFN gradients and attention's are marked so
    that their lowering computes the gate product SiLU(W1·x)·W3·x and the
    rotated Q and K again. The mark keeps CSE from merging them back.

    With `optimizer=adamw` the step also updates the parameters (every f32
    argument): it takes, after the loss function's arguments, the first
    moment `m` of each parameter, then the second moment `v` of each, then
    the learning rate and the step number (from 1) as `tensor<f32>`; it
    returns the loss, the global norm of the gradients before clipping
    (`tlm.global_norm`), the gradients, then the updated parameters, `m`
    and `v` (one `tlm.adamw` each, which clips by `max-norm` first). The
    caller may pass each parameter's and moment's buffer as both its input
    and its output: the update reads and writes each element once, after
    every gradient is known.

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
    Option<"optimizer", "optimizer", "std::string", "\"none\"",
           "none: return the gradients; adamw: clip them and update the "
           "parameters and moments too">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's β1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW's β2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's ε">,
    Option<"weightDecay", "weight-decay", "double", "0.01",
           "AdamW's decoupled weight decay λ">,
    Option<"maxNorm", "max-norm", "double", "1.0",
           "clip the gradients' global L2 norm to this (0: no clipping)">,
    Option<"torchForm", "torch-form", "bool", "false",
           "PyTorch's AdamW (decay first, ε added to sqrt(v̂)) instead of "
           "CS336's Algorithm 1">,
    Option<"recompute", "recompute", "bool", "true",
           "compute cheap elementwise values again in the backward (norm "
           "outputs, the FFN's gate product, the rotated Q and K) instead "
           "of keeping them from the forward">,
    Option<"decayVectors", "decay-vectors", "bool", "true",
           "decay 1-D parameters (the norm gains) too, as CS336 does; "
           "nanoGPT and llm.c do not">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::tlm::TlmDialect"
  ];
}

#endif // TLM_PASSES_TRAIN_PASSES_TD
