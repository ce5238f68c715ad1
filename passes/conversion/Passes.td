//===- Passes.td - tlm → linalg ----------------------------*- tablegen -*-===//
//
// The conversion of the tlm dialect to linalg on tensors: what each op
// means, identical for every target (target codegen lives in cpu/ and gpu/).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_PASSES_TD
#define TLM_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TlmLowerToLinalg : Pass<"tlm-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower every tlm op to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites each tlm op into upstream ops on tensors, one pattern family
    per file in `passes/conversion/`; the same for every target:

    * `tlm.linear` → `tensor.collapse_shape`, `linalg.matmul` with the
      transposed-B indexing maps, `tensor.expand_shape`;
    * `tlm.swiglu` / `tlm.silu_ffn` → three (two) such matmuls and one
      elementwise `linalg.generic` for `SiLU(a)·b`;
    * `tlm.embedding` → a `linalg.generic` whose body `tensor.extract`s the
      table row;
    * `tlm.rmsnorm`, `tlm.softmax`, `tlm.cross_entropy` → a reduction
      `linalg.generic` (f32 accumulation) and an elementwise one;
    * `tlm.rope` → a cos/sin table generic over the positions and a rotation
      generic over the input viewed as `(..., d/2, 2)` pairs;
    * `tlm.attention` / `tlm.sdpa` → scores generic (`Q·Kᵀ/sqrt(d_k)`), a
      masking generic (causal or explicit mask, `-inf`), softmax, and a
      `P·V` generic. GQA maps query head `h` to kv head `h floordiv G` in
      the indexing maps, so K and V are never copied.

    Before:
    ```mlir
    %y = tlm.linear %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty(%m) : tensor<?x128xf32>
    %z = linalg.fill ins(%cst : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
    %y = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                        affine_map<(d0, d1, d2) -> (d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1)>]
           ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
           outs(%z : tensor<?x128xf32>) -> tensor<?x128xf32>
    ```
  }];
  let options = [
    Option<"attentionByHeads", "attention-by-heads", "bool", "false",
           "tlm.attention and tlm.attention_grad of a static sequence as a "
           "loop over (batch, head) of 2-D projections (AttentionHeads.h)">,
    Option<"attentionBlock", "attention-block", "int64_t", "0",
           "With attention-by-heads, FlashAttention-2 blocks of up to this "
           "many queries and keys (the largest divisor of T up to it, at "
           "least 8); 0: one (T, T) tile a head">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

#endif // TLM_PASSES_CONVERSION_PASSES_TD
