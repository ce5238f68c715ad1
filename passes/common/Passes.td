//===- Passes.td - passes either pipeline runs -------------*- tablegen -*-===//
//
// Target-neutral passes: the JIT's entry ABI, dims resolution for
// bufferization, polynomial math, and dropping the builder's no-inline marks.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_PASSES_TD
#define TLM_PASSES_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

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

    Entries are also marked `alwaysinline` with `linkonce_odr` linkage: their
    wrappers (the C interface, the JIT's packed one) would otherwise call
    them with every descriptor field as an argument, over 1000 for a
    12-layer model, and instruction selection of that one call took a
    large share of LLVM's compile time. Inlined into its wrapper, the
    entry's own copy is unused and dropped.

    Before:
    ```mlir
    func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
    ```
    After:
    ```mlir
    func.func @f(%xm: memref<?x4xf32>, %out: memref<?x4xf32>) attributes {llvm.emit_c_interface, llvm.linkage = #llvm.linkage<linkonce_odr>, passthrough = ["alwaysinline"]} {
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
    "::mlir::bufferization::BufferizationDialect", "::mlir::memref::MemRefDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def TlmResolveDims : Pass<"tlm-resolve-dims", "::mlir::func::FuncOp"> {
  let summary = "Rewrite tensor.dim of intermediate tensors as dims of the "
                "values they were computed from";
  let description = [{
    One-shot bufferization proves that an `insert_slice` writes back the
    subset its `extract_slice` read with `ValueBoundsConstraintSet`, which
    walks the backward slice of every offset and size before it compares
    anything. A size read off an intermediate tensor (`tensor.dim` of a
    loop's result, of a `collapse_shape` of another loop's result, ...)
    reaches back through every loop before it, each adding a nested
    comparison: on small.json those queries dominated the
    bufferization's time. This pass rewrites each `tensor.dim` (and only
    them: no whole-function folding) with upstream's patterns: a result's
    dim from the op's operands (`ReifyRankedShapedTypeOpInterface`: linalg
    inits, reshapes, `tensor.empty` sizes), a loop result's or iter_arg's dim
    from its init when the loop keeps the shape, until it reaches a
    function argument or a value computed outside the tensors.

    Before:
    ```mlir
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x)
        -> (tensor<?x64xf32>) { ... }
    %c = tensor.collapse_shape %r [[0, 1]]
        : tensor<?x64xf32> into tensor<?xf32>
    %d = tensor.dim %c, %c0 : tensor<?xf32>
    ```
    After:
    ```mlir
    %d0 = tensor.dim %x, %c0 : tensor<?x64xf32>
    %d = arith.muli %d0, %c64 : index
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def TlmApproximateMath : Pass<"tlm-approximate-math"> {
  let summary = "Replace chosen math ops by polynomial approximations";
  let description = [{
    Rewrites the math ops named in `ops` (default `exp`, as used by softmax
    and SiLU) into upstream's polynomial approximations: range reduction,
    a minimax polynomial and exponent bit manipulation, all in `arith`, so
    that loops containing them vectorize (LLVM would call libm once per
    lane). f32 only; the error stays within the conformance tolerances
    (checked by the conformance and numerics tests, which run this pass).
    `sin`/`cos` are left to libm by default: RoPE's angles grow with the
    position, where a polynomial's range reduction loses accuracy.

    Before:
    ```mlir
    %e = math.exp %x : vector<16xf32>
    ```
    After: a sequence of `arith.mulf`, `arith.addf`, `math.fma`,
    `arith.fptosi`, `arith.shli`, `arith.bitcast` and `arith.select` ops
    computing `2^n · p(r)` with `x = n·ln2 + r`.
  }];
  let options = [
    Option<"ops", "ops", "std::string", /*default=*/"\"exp\"",
           "Comma-separated math op names to approximate (e.g. exp,tanh)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def TlmAllowInlining : Pass<"tlm-allow-inlining", "::mlir::ModuleOp"> {
  let summary = "Drop the no_inline marks the model builder puts on blocks";
  let description = [{
    The model builder keeps the per-layer function out of line (`no_inline`
    and LLVM `noinline`) because the CPU JIT compiles one copy faster than
    one per layer. The GPU pipeline wants the opposite: after inlining, the
    entry is one function, bufferization never passes a buffer across a
    call, and every buffer's lifetime is static (no ownership flags
    evaluated on the host). This pass removes both marks; `inline` follows.

    Before:
    ```mlir
    func.func private @block(...) attributes {no_inline, passthrough = ["noinline"]}
    ```
    After:
    ```mlir
    func.func private @block(...)
    ```
  }];
}

#endif // TLM_PASSES_COMMON_PASSES_TD
