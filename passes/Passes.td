//===- Passes.td - tlm passes ------------------------------*- tablegen -*-===//
#ifndef TLM_PASSES_TD
#define TLM_PASSES_TD

include "mlir/Pass/PassBase.td"

def TlmLowerToLinalg : Pass<"tlm-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower every tlm op to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites each tlm op into upstream ops on tensors, one pattern family
    per file in `passes/lowering/`:

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
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TlmMemrefEntry : Pass<"tlm-memref-entry", "::mlir::ModuleOp"> {
  let summary = "Give public functions a destination-passing memref ABI for the JIT";
  let description = [{
    The JIT calls entry points with buffers it owns. This pass rewrites every
    public `func.func` on tensors so that each tensor argument becomes an
    identity-layout memref wrapped by `bufferization.to_tensor restrict`, and
    each tensor result becomes one more memref argument (appended after the
    inputs) filled by `bufferization.materialize_in_destination`. The
    function then returns nothing and (unless `emit-c-interface=false`) gets
    `llvm.emit_c_interface`, so no allocation ever crosses the boundary.

    Before:
    ```mlir
    func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
    ```
    After:
    ```mlir
    func.func @f(%xm: memref<?x4xf32>, %out: memref<?x4xf32>) attributes {llvm.emit_c_interface} {
      %x = bufferization.to_tensor %xm restrict : memref<?x4xf32> to tensor<?x4xf32>
      ...
      bufferization.materialize_in_destination %r in restrict writable %out : (tensor<?x4xf32>, memref<?x4xf32>) -> ()
      return
    }
    ```
  }];
  let options = [
    Option<"emitCInterface", "emit-c-interface", "bool", /*default=*/"true",
           "Mark entries llvm.emit_c_interface (descriptor-pointer wrappers "
           "for C callers); the JIT calls the packed form and turns it off">
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect", "::mlir::memref::MemRefDialect"
  ];
}

#endif // TLM_PASSES_TD
