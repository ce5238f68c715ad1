//===- TlmGradOps.td - gradients of the tlm ops ------------*- tablegen -*-===//
//
// One op per differentiable forward op: it takes the gradient of the
// forward op's result (`grad`, named dy below) and the forward op's operands,
// and returns the gradient of each float operand. `tlm-build-train-step`
// emits them (passes/train/); `tlm-lower-to-linalg` lowers them. Training is
// f32, so every float operand and result here is f32.
//
// What the backward needs from the forward is the forward's operands; what
// the forward computed from them (RMSNorm's rms, the FFN's W1·x and W3·x,
// the cross-entropy's logsumexp) is recomputed by the lowering with the
// same linalg ops as the forward's, which CSE then merges with the
// forward's when both are in one function. Attention instead keeps its
// output and row logsumexps (tlm.attention_lse) for its gradient.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_GRAD_OPS_TD
#define TLM_GRAD_OPS_TD

def Tlm_F32Tensor : RankedTensorOf<[F32]>;

def Tlm_LinearGradOp : Tlm_Op<"linear_grad", [Pure]> {
  let summary = "gradients of tlm.linear: dx = dy · W, dW = Σ_rows dyᵀ · x";
  let description = [{
    For `y = x · Wᵀ` with `x (..., d_in)` and `W (d_out, d_in)`: the input
    gradient `dx (..., d_in)` and the weight gradient `dW (d_out, d_in)`,
    summed (in f32) over every row of the leading dims.

    ```mlir
    %dx, %dw = tlm.linear_grad %dy, %x, %w
        : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$input,
                       Tlm_F32Tensor:$weight);
  let results = (outs Tlm_F32Tensor:$input_grad, Tlm_F32Tensor:$weight_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_EmbeddingGradOp : Tlm_Op<"embedding_grad", [Pure]> {
  let summary = "gradient of tlm.embedding's table: dE[ids[n]] += dy[n]";
  let description = [{
    Scatter-adds each row of `grad (ids..., d_model)` into row `ids[n]` of a
    zero `(vocab_size, d_model)` table gradient. The rows are added in order
    (no atomics), so repeated ids give the same sums on every run.

    ```mlir
    %de = tlm.embedding_grad %dy, %ids : (tensor<?x?x64xf32>, tensor<?x?xi64>) -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_IndexTensor:$ids);
  let results = (outs Tlm_F32Tensor:$table_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_RMSNormGradOp : Tlm_Op<"rmsnorm_grad", [Pure]> {
  let summary = "gradients of tlm.rmsnorm: dx and the gain's dg";
  let description = [{
    With `r = sqrt(mean(x²) + eps)` and `x̂ = x / r` per row:
    `dg = Σ_rows dy · x̂` and, with `u = dy · g`,
    `dx = (u − x̂ · mean(u · x̂)) / r`.

    ```mlir
    %dx, %dg = tlm.rmsnorm_grad %dy, %x, %g {eps = 1.0e-05 : f64}
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$input,
                       Tlm_F32Tensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Tlm_F32Tensor:$input_grad, Tlm_F32Tensor:$weight_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_SwiGLUGradOp : Tlm_Op<"swiglu_grad", [Pure]> {
  let summary = "gradients of tlm.swiglu: dx, dW1, dW2, dW3";
  let description = [{
    With `a = x·W1ᵀ`, `b = x·W3ᵀ`, `h = SiLU(a)·b`: `dW2 = Σ dyᵀ·h`,
    `dh = dy·W2`, `da = dh·b·SiLU'(a)`, `db = dh·SiLU(a)`, `dW1 = Σ daᵀ·x`,
    `dW3 = Σ dbᵀ·x`, `dx = da·W1 + db·W3`, where
    `SiLU'(a) = σ(a)(1 + a(1 − σ(a)))`.

    ```mlir
    %dx, %d1, %d2, %d3 = tlm.swiglu_grad %dy, %x, %w1, %w2, %w3
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>)
        -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$input,
                       Tlm_F32Tensor:$w1, Tlm_F32Tensor:$w2,
                       Tlm_F32Tensor:$w3);
  let results = (outs Tlm_F32Tensor:$input_grad, Tlm_F32Tensor:$w1_grad,
                      Tlm_F32Tensor:$w2_grad, Tlm_F32Tensor:$w3_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_SiLUFFNGradOp : Tlm_Op<"silu_ffn_grad", [Pure]> {
  let summary = "gradients of tlm.silu_ffn: dx, dW1, dW2";
  let description = [{
    tlm.swiglu_grad without the gate: `h = SiLU(a)`, `da = dh·SiLU'(a)`.

    ```mlir
    %dx, %d1, %d2 = tlm.silu_ffn_grad %dy, %x, %w1, %w2
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
        -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$input,
                       Tlm_F32Tensor:$w1, Tlm_F32Tensor:$w2);
  let results = (outs Tlm_F32Tensor:$input_grad, Tlm_F32Tensor:$w1_grad,
                      Tlm_F32Tensor:$w2_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_AttentionLseOp : Tlm_Op<"attention_lse", [Pure]> {
  let summary = "tlm.attention that also returns each query row's logsumexp";
  let description = [{
    The training step's forward attention (tlm-build-train-step puts it in
    place of `tlm.attention`): `result` is `tlm.attention`'s with the same
    attributes (positions `0..seq-1`), and `lse (batch, num_heads, seq)` the
    logsumexp of each query row's scaled, causally masked scores. The
    backward rebuilds the probabilities from it, `P = exp(S − lse)`, one
    elementwise pass, rather than keeping them.

    ```mlir
    %o, %lse = tlm.attention_lse %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
        : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x4x?xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$q, Tlm_F32Tensor:$k, Tlm_F32Tensor:$v,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Tlm_F32Tensor:$result, Tlm_F32Tensor:$lse);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    std::optional<double> getRopeThetaValue();
  }];
}

def Tlm_AttentionGradOp : Tlm_Op<"attention_grad", [Pure]> {
  let summary = "gradients of tlm.attention: dq, dk, dv";
  let description = [{
    For `tlm.attention_lse` with the same attributes, from its output `out`
    and row logsumexps `lse`: per head, with `S = Q·Kᵀ/sqrt(d_k)` (Q, K
    rotated when `rope_theta` is set) and `P = exp(S − lse)` (0 above the
    diagonal): `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `D = rowsum(dO·O)`,
    `dS = P·(dP − D)`, `dQ = dS·K/sqrt(d_k)`, `dK = dSᵀ·Q/sqrt(d_k)`; the
    gradients of rotated Q and K are rotated back by −θ. A kv head's `dK`,
    `dV` sum over the query heads that read it (GQA).

    ```mlir
    %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %lse {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x4x?xf32>)
        -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$q,
                       Tlm_F32Tensor:$k, Tlm_F32Tensor:$v,
                       Tlm_F32Tensor:$out, Tlm_F32Tensor:$lse,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Tlm_F32Tensor:$q_grad, Tlm_F32Tensor:$k_grad,
                      Tlm_F32Tensor:$v_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    std::optional<double> getRopeThetaValue();
  }];
}

def Tlm_CrossEntropyGradOp : Tlm_Op<"cross_entropy_grad", [Pure]> {
  let summary = "gradient of tlm.cross_entropy: (softmax(logits) − onehot) · dl / N";
  let description = [{
    For the mean loss over N positions: `dlogits = dl · (softmax(o) −
    onehot(target)) / N`, with `dl` the 0-d gradient of the loss (1 when the
    loss is what is minimized).

    ```mlir
    %dz = tlm.cross_entropy_grad %dl, %logits, %t
        : (tensor<f32>, tensor<8x5xf32>, tensor<8xi64>) -> tensor<8x5xf32>
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$grad, Tlm_F32Tensor:$logits,
                       Tlm_IndexTensor:$targets);
  let results = (outs Tlm_F32Tensor:$logits_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The optimizer
//===----------------------------------------------------------------------===//

def Tlm_GlobalNormOp : Tlm_Op<"global_norm", [Pure]> {
  let summary = "the L2 norm over every element of every operand";
  let description = [{
    `sqrt(Σ_tensors Σ x²)`, the squares summed in f64 and the result
    rounded once to f32: the norm gradient clipping compares with its
    maximum (CS336 §4.5).

    ```mlir
    %n = tlm.global_norm %g0, %g1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Tlm_F32Tensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Tlm_AdamWOp : Tlm_Op<"adamw", [Pure]> {
  let summary = "one AdamW update of a parameter, after clipping its gradient";
  let description = [{
    With `g` the gradient scaled by `max_norm / (norm + 1e-6)` when `norm`
    (the global norm of every gradient) exceeds `max_norm` (0: no
    clipping), and `t = step` (from 1):
    `m' = β1·m + (1 − β1)·g`, `v' = β2·v + (1 − β2)·g²`, then CS336's
    Algorithm 1: `p' = p − lr·sqrt(1 − β2^t)/(1 − β1^t)·m'/(sqrt(v') + ε)`,
    `p'' = p' − lr·λ·p'`; or with `torch_form` PyTorch's AdamW:
    `p' = p·(1 − lr·λ)`, `p'' = p' − lr/(1 − β1^t)·m'/(sqrt(v')/sqrt(1 − β2^t) + ε)`.
    The scalars are computed in f64, the elementwise update in f32.
    `lr` and `step` are 0-d tensors, runtime values of the step.

    ```mlir
    %p2, %m2, %v2 = tlm.adamw %p, %g, %m, %v, %lr, %t, %n {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64, max_norm = 1.0 : f64}
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    ```
  }];
  let arguments = (ins Tlm_F32Tensor:$param, Tlm_F32Tensor:$grad,
                       Tlm_F32Tensor:$m, Tlm_F32Tensor:$v,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[F32]>:$step,
                       0DTensorOf<[F32]>:$norm,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay, F64Attr:$max_norm,
                       UnitAttr:$torch_form);
  let results = (outs Tlm_F32Tensor:$new_param, Tlm_F32Tensor:$new_m,
                      Tlm_F32Tensor:$new_v);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TLM_GRAD_OPS_TD
