//===- ParallelPasses.td - tlm's passes on parallel loops --*- tablegen -*-===//
//
// Included by Passes.td: the passes that decide which parallel loops of the
// CPU pipeline become OpenMP regions.
//
//===----------------------------------------------------------------------===//

def TlmSerializeSmallParallel
    : Pass<"tlm-serialize-small-parallel", "::mlir::func::FuncOp"> {
  let summary = "Run outermost scf.parallel loops too small for threads as "
                "scf.for nests";
  let description = [{
    Each outermost `scf.parallel` becomes an OpenMP parallel region later,
    whose fork and join cost a few microseconds (~3 µs measured with
    Debian's libomp on 2 cores): more than a loop over one token's 768
    activations, or a 64 x 64 projection, takes on one core. This pass
    estimates each loop's work in element operations (every op counts its
    widest vector, or 1, times the trip counts of the loops around it) and
    compares it with `min-work`:

    - at least `min-work`, unknown trip counts taken as 1: left parallel;
    - below it, all trip counts static: a nest of `scf.for`;
    - below it, some trip counts known only at run time (the sequence
      length, the batch): versioned, `scf.if` on the estimate computed in
      front of the loop, the parallel loop when it reaches `min-work` and a
      `scf.for` nest otherwise. A loop of more than `max-versioned-ops`
      operations is left parallel rather than duplicated.

    A bound computed inside the loop from values defined before it, by
    pure ops (a peeled tile's full rows), is computed in front of it too
    (the ops are cloned); so is a branch's condition, and the branch then
    counts the side it takes (otherwise its cheaper side). Trip counts
    whose bounds depend on the loop's induction variables count as 1; a
    call or a `memref.copy` counts as more than any threshold. Loops with
    reductions are left alone. Run after `tlm-serialize-nested-parallel`,
    so only outermost loops remain parallel. Default `min-work` measured on
    2 cores: 32768 slowed cs336-ts's decode ~20%, 524288 its prefill.

    Before (`min-work=1024`):
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %v = vector.transfer_read %a[%i, %c0], %pad : memref<?x8xf32>, vector<8xf32>
      vector.transfer_write %v, %b[%i, %c0] : vector<8xf32>, memref<?x8xf32>
    }
    ```
    After:
    ```mlir
    %work = arith.muli %n, %c17 : index
    %big = arith.cmpi sge, %work, %c1024 : index
    scf.if %big {
      scf.parallel (%i) = (%c0) to (%n) step (%c1) { ... }
    } else {
      scf.for %i = %c0 to %n step %c1 { ... }
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"131072",
           "Element operations below which a loop runs on one thread">,
    Option<"maxVersionedOps", "max-versioned-ops", "int64_t",
           /*default=*/"64",
           "Largest loop body (operations) duplicated for a run-time choice">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TlmSerializeNestedParallel
    : Pass<"tlm-serialize-nested-parallel", "::mlir::func::FuncOp"> {
  let summary = "Run scf.parallel loops nested in another one as scf.for nests";
  let description = [{
    The CPU pipeline turns every `scf.parallel` into an OpenMP parallel
    region (`convert-scf-to-openmp`), nested ones included. A nested region
    only ever runs serialized on the thread that reaches it, yet each entry
    still costs a fork call and a worksharing-loop init in libomp, and
    Debian's libomp formats a debug trace string in every
    `__kmpc_for_static_init` (a vsnprintf, a malloc and a free). Nested in
    the fused attention's (batch, head) loop, such loops ran once per key
    block: cs336-ts decoded ~10x slower on 2 threads than on 1. This pass
    rewrites each `scf.parallel` that has an `scf.parallel` ancestor into a
    nest of `scf.for` (upstream's `parallelForToNestedFors`), leaving the
    outermost ones to become the parallel regions. One with reductions is
    left alone.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      scf.parallel (%j) = (%c0) to (%m) step (%c1) {
        memref.store %x, %buf[%i, %j] : memref<?x?xf32>
      }
    }
    ```
    After:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      scf.for %j = %c0 to %m step %c1 {
        memref.store %x, %buf[%i, %j] : memref<?x?xf32>
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}
