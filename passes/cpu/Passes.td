//===- Passes.td - CPU codegen -----------------------------*- tablegen -*-===//
//
// The CPU pipeline's own passes: fused attention, projection fusion and
// register-blocked projections, vectorized elementwise ops, and the choice of
// which parallel loops become OpenMP regions. Every heuristic they take as an
// option is decided in Strategy.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_PASSES_TD
#define TLM_PASSES_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TlmFuseAttention : Pass<"tlm-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Lower f32 tlm.cached_attention to fused online-softmax loop nests";
  let description = [{
    The CPU's form of `tlm.cached_attention` (f32; others are left to
    `tlm-lower-to-linalg`, which runs after it). The heads are split, RoPE
    applied and the new keys and values laid out position-major as in the
    conversion; then, instead of a scores tensor, a softmax and P·V:

    * query rows in whole blocks of `lanes` per (batch, head), when head_dim
      is a multiple of `lanes`: Qᵀ and Oᵀ blocks with one row per vector
      lane, keys in blocks of `lanes`, an online softmax;
    * the other rows (every decode step) one at a time, key-major over a
      chunk of heads: the scores of every head of the chunk against each key
      in position order, the softmax per head, then the values key by key,
      so the position-major cache is read start to end. The chunks split the
      heads for `threads` threads.

    The loop nests are in docs/cpu-codegen.md.

    Before:
    ```mlir
    %o, %kn, %vn = tlm.cached_attention %q, %k, %v, %kp, %vp {num_heads = 4 : i64, num_kv_heads = 2 : i64} : ...
    ```
    After:
    ```mlir
    %blocks = scf.forall (%b, %h) in (%batch, 4) shared_outs(%out = %init) -> (tensor<?x?x4x16xf32>) {
      // query rows in blocks of `lanes`, online softmax over the keys
    }
    %rows = scf.forall (%c) in (%chunks) shared_outs(%out = %blocks) -> (tensor<?x?x4x16xf32>) {
      // the remaining rows one at a time, key-major over the chunk's heads
    }
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 vector lanes: query rows per block (16: AVX-512, 8: AVX2)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Threads the one-row form splits the heads for">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

def TlmFuseProjections : Pass<"tlm-fuse-projections", "::mlir::func::FuncOp"> {
  let summary = "Fuse projections of one input into one over concatenated weights";
  let description = [{
    Horizontal fusion: the projections `tlm-lower-to-linalg` makes for
    `tlm.linear` and the FFNs (`out[rows..., n] = x[rows..., k] · w[n, k]`,
    see `tlm-tile-matmuls`) that read the same `x`, start from zero (a
    `linalg.fill 0` of a `tensor.empty`) and sit in one block become one
    projection over `tensor.concat` of their weights along `n`; each old
    result is a slice of the new one. In the model these are Q/K/V and
    SwiGLU's W1/W3: one loop nest (one OpenMP fork/join, one copy of the
    GEMM kernel to compile) instead of three and two.

    `tlm-tile-matmuls` reads the concatenation's parts in place, choosing
    the part per panel of columns; anything else would copy the weights at
    every call, which is why the CPU pipeline runs this pass only with
    `tile-matmuls`. A projection that accumulates into its output (not
    fused: its result is not the projection alone), one with another input,
    other loops or payload, or in another block is left alone.

    With `fuse-residual-adds`, an elementwise add `r + P` of a projection P that
    starts from zero and that only the add reads (in the block: the residual
    add after the attention's output projection) becomes P accumulating into
    `r`: the tiled projection starts its sums from the residual and the add,
    a pass over three activations, is gone. A sum the function returns stays
    an add: accumulated in place into the residual, the returned buffer
    would alias an argument and be copied out.

    Before:
    ```mlir
    %q = linalg.generic {...} ins(%x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>)
           outs(%zq : tensor<?x?x64xf32>) {...}
    %k = linalg.generic {...} ins(%x, %wk : tensor<?x?x64xf32>, tensor<32x64xf32>)
           outs(%zk : tensor<?x?x32xf32>) {...}
    ```
    After:
    ```mlir
    %w = tensor.concat dim(0) %wq, %wk
           : (tensor<64x64xf32>, tensor<32x64xf32>) -> tensor<96x64xf32>
    %qk = linalg.generic {...} ins(%x, %w : tensor<?x?x64xf32>, tensor<96x64xf32>)
            outs(%z : tensor<?x?x96xf32>) {...}
    %q = tensor.extract_slice %qk[0, 0, 0] [%b, %s, 64] [1, 1, 1]
    %k = tensor.extract_slice %qk[0, 0, 64] [%b, %s, 32] [1, 1, 1]
    ```
  }];
  let options = [
    Option<"fuseProjections", "fuse-projections", "bool", /*default=*/"true",
           "Fuse the projections of one input (the horizontal fusion)">,
    Option<"fuseResidualAdds", "fuse-residual-adds", "bool", /*default=*/"true",
           "Fold residual adds into the projection they add">
  ];
  let dependentDialects = [
    "::mlir::tensor::TensorDialect", "::mlir::linalg::LinalgDialect"
  ];
}

def TlmTileMatmuls : Pass<"tlm-tile-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Register-block and vectorize the projections (x · Wᵀ) on tensors";
  let description = [{
    Matches the contractions `tlm-lower-to-linalg` makes for `tlm.linear` and
    the FFNs, `out[rows..., n] += x[rows..., k] · w[n, k]` with dynamic rows,
    static `n` and `k` and f32 data, and rewrites each into register-blocked
    vector code on tensors; other contractions are left alone. The rows are
    peeled into full tiles and a one-row remainder (every decode step):

    * full row tiles whose `n` splits into panels of `pack-cols` take the
      packed form (`pack-projections`): each panel of W is transposed into a
      buffer once, and `pack-rows x pack-cols / lanes` accumulator vectors
      take one broadcast of x per row and k (an outer product, no horizontal
      sums); otherwise split-k `row-tile x col-tile` blocks;
    * the remaining rows run one at a time in `1 x gemv-columns` split-k
      blocks against W itself;
    * with `fold-rmsnorm`, an RMSNorm scaling that only this projection reads
      is folded into the packed panels (the gain) and the sums (`1 / rms`);
    * with `fuse-swiglu`, SwiGLU's `silu(a) · b` on the two halves of a
      fused W1/W3 projection runs on the packed tiles' sums, so the
      projection's own output is never written;
    * with `threads > 1`, the columns are split into block-aligned chunks by
      one `scf.forall` (an OpenMP loop later).

    A projection that starts from `linalg.fill 0` and whose blocks all sum in
    registers overwrites its output instead of reading it. The steps and the
    block arithmetic are in docs/cpu-codegen.md.

    Before:
    ```mlir
    %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                        affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>]
           ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
           outs(%z : tensor<?x128xf32>) -> tensor<?x128xf32>
    ```
    After (packed main part; the remainder is the same nest with
    `vector<1x8x16xf32>` split-k blocks):
    ```mlir
    %r:2 = scf.for %c = %c0 to %c128 step %c32
        iter_args(%o = %z, %buf = %empty) -> (tensor<?x128xf32>, tensor<64x32xf32>) {
      // W's panel transposed into %buf with vector.transpose of 16x16 blocks
      scf.for %i = %c0 to %full step %c8 iter_args(%o1 = %o) {
        %acc:16 = scf.for %k = %c0 to %c64 step %c1 iter_args(...) -> (vector<16xf32>, ...) {
          %w0 = vector.transfer_read %p[%k, %c0] : tensor<64x32xf32>, vector<16xf32>
          %xv = vector.broadcast %xi : f32 to vector<16xf32>
          %a0 = vector.fma %xv, %w0, %acc0 : vector<16xf32>
          ...
        }
        ... vector.transfer_write %acc#0, %o1[%i, %c] ...
      }
    }
    ```
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"8",
           "Rows per split-k block of the main part">,
    Option<"colTile", "col-tile", "int64_t", /*default=*/"2",
           "Output columns per split-k block of the main part">,
    Option<"xTileBytes", "x-tile-bytes", "int64_t", /*default=*/"32768",
           "Most bytes of x one row tile may span (above: fewer rows, more columns)">,
    Option<"colPanel", "col-panel", "int64_t", /*default=*/"128",
           "Columns per panel of W the rows run against (0: no panels)">,
    Option<"gemvColumns", "gemv-columns", "int64_t", /*default=*/"8",
           "Output columns per block of the one-row remainder (decode's GEMV)">,
    Option<"prefetchCodes", "prefetch-codes", "bool", /*default=*/"false",
           "One-column GEMV blocks on q8_0/q4_0 codes (split-k, lookup, "
           "int8) prefetch the codes of the row prefetch-distance bytes "
           "ahead (they stream W)">,
    Option<"prefetchDistance", "prefetch-distance", "int64_t",
           /*default=*/"8192",
           "With prefetch-codes, how many bytes of codes ahead">,
    Option<"lookupNibbles", "lookup-nibbles", "bool", /*default=*/"false",
           "One-column GEMV blocks on q4_0 codes look the nibbles up in a "
           "register of their centred values (vpermps: AVX-512, lanes=16, k "
           "a multiple of 128), x permuted to match once per row">,
    Option<"fmaChains", "fma-chains", "int64_t", /*default=*/"8",
           "Independent FMA chains a split-k block keeps at least (consecutive "
           "k steps get accumulators of their own)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 vector lanes along k (16: AVX-512, 8: AVX2, 4: SSE/NEON)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Split the output columns into chunks for this many threads">,
    Option<"vectorize", "vectorize", "bool", /*default=*/"true",
           "Vectorize the blocks (off: tiling only, for inspection)">,
    Option<"packProjections", "pack-projections", "bool", /*default=*/"true",
           "Packed form for the full row tiles (off: split-k blocks)">,
    Option<"packRows", "pack-rows", "int64_t", /*default=*/"8",
           "Rows per tile of the packed form">,
    Option<"foldRMSNorm", "fold-rmsnorm", "bool", /*default=*/"true",
           "Fold an RMSNorm scaling only this projection reads into the packed form">,
    Option<"packCols", "pack-cols", "int64_t", /*default=*/"32",
           "Columns per packed panel of W (a multiple of lanes)">,
    Option<"fuseSwiGLU", "fuse-swiglu", "bool", /*default=*/"true",
           "Run SwiGLU's silu(a)·b on the fused W1/W3 projection's packed tiles">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "Packed tiles in bf16: x and the packed W rounded to bf16, "
           "multiplied pairwise by x86vector.avx512.dot (AVX512-BF16's "
           "vdpbf16ps) into f32 sums; needs lanes=16">,
    Option<"int8Dot", "int8-dot", "bool", /*default=*/"false",
           "q8_0 / q4_0 W in int8: x quantized per block of 32, four-byte "
           "dot products (tlm.dot_u8s8, AVX512-VNNI's vpdpbusd) summed in "
           "i32 per block, then scaled into f32; in the packed tiles and "
           "in the GEMV rows (decode's); needs lanes=16">
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::affine::AffineDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::math::MathDialect", "::mlir::tlm::TlmDialect",
    "::mlir::x86vector::X86VectorDialect"
  ];
}

def TlmFuseElementwise : Pass<"tlm-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse chains of elementwise linalg.generic ops into one";
  let description = [{
    An elementwise `linalg.generic` whose result only one other elementwise
    generic reads is fused into that reader (upstream's elementwise fusion,
    linalg::populateElementwiseOpsFusionPatterns): one pass over memory
    instead of two, and no intermediate tensor. The training step's backward
    is made of such chains (SwiGLU's, RMSNorm's and RoPE's backward, the
    sums of a value's gradients where it fans out, the cross-entropy's
    softmax − onehot). Each element's arithmetic is the same, in the same
    order: results are bit for bit those of the unfused ops.

    Left apart, so the passes after it still find their forms: a reader of
    a projection (a residual add folded into it, SwiGLU on the W1/W3 tiles),
    RMSNorm's scaling (folded into the packed projection), RoPE's rotation
    (vectorized with shuffles), reductions (tlm-vectorize-elementwise's row
    form), ops in loops, and a value with more than one reader (fusing it
    would compute it twice).

    Before:
    ```mlir
    %t = linalg.generic {...["parallel", "parallel"]} ins(%a, %b) outs(%e) {
      arith.mulf }
    %u = linalg.generic {...["parallel", "parallel"]} ins(%t, %c) outs(%e) {
      arith.addf }
    ```
    After:
    ```mlir
    %u = linalg.generic {...["parallel", "parallel"]} ins(%a, %b, %c)
           outs(%e) { arith.mulf, arith.addf }
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "Elements per vector (RoPE's rotation form is recognized at it)">
  ];
}

def TlmVectorizeElementwise
    : Pass<"tlm-vectorize-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Vectorize elementwise linalg.generic ops with dynamic rows";
  let description = [{
    Takes every `linalg.generic` on tensors whose loops are all parallel,
    whose operands are indexed by projected permutations and whose innermost
    loop is static and a multiple of `lanes` (SiLU·gate, residual adds, the
    norms' scaling), tiles every other loop by 1 and the innermost by
    `lanes`, and vectorizes the static block; with `threads > 1` the blocks
    are one `scf.forall`. Ops already inside a loop, reductions and ops with a
    ragged innermost dim are left alone. An output the payload does not read
    becomes a fresh `tensor.empty`, so bufferization does not copy it first.

    Four shapes get forms of their own (docs/cpu-codegen.md#elementwise-ops):
    a row sum or max (RMSNorm's Σ x², the cross-entropy's statistics) fused
    with the one op that reads it; a column sum (the RMSNorm gain's
    gradient), a row at a time in vectors of columns; a `linalg.transpose`
    that keeps the innermost dim (the new cache rows); and RoPE's rotation,
    computed `lanes` elements at a time with a shuffle of the pairs, bit for
    bit the payload's result.

    Before:
    ```mlir
    %y = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%a, %b : tensor<?x64xf32>, tensor<?x64xf32>)
           outs(%e : tensor<?x64xf32>) { arith.addf ... }
    ```
    After:
    ```mlir
    %y = scf.for %i = %c0 to %rows step %c1 iter_args(%o = %e) {
      %r = scf.for %j = %c0 to %c64 step %c16 iter_args(%o1 = %o) {
        %va = vector.transfer_read %a[%i, %j] ... : vector<1x16xf32>
        %vb = vector.transfer_read %b[%i, %j] ... : vector<1x16xf32>
        %s = arith.addf %va, %vb : vector<1x16xf32>
        %w = vector.transfer_write %s, %o1[%i, %j] ...
      }
    }
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "Elements per vector (16 f32 = one AVX-512 register)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Above 1, the blocks are one scf.forall (an OpenMP loop later)">
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

def TlmSerializeSmallParallel
    : Pass<"tlm-serialize-small-parallel", "::mlir::func::FuncOp"> {
  let summary = "Run outermost scf.parallel loops too small for threads as "
                "scf.for nests";
  let description = [{
    Each outermost `scf.parallel` becomes an OpenMP parallel region later,
    whose fork and join cost a few microseconds with Debian's libomp: more
    than a loop over one token's 768 activations, or a 64 x 64 projection,
    takes on one core. This pass estimates each loop's work in element
    operations (every op counts its widest vector, or 1, times the trip
    counts of the loops around it) and compares it with `min-work`:

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
    so only outermost loops remain parallel. The default `min-work` was
    chosen on 2 cores: a smaller one (32768) slowed cs336-ts's decode, a
    larger one (524288) its prefill (docs/cpu-codegen.md#threads).

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

def TlmLowerLookup : Pass<"tlm-lower-lookup"> {
  let summary = "tlm.lookup and tlm.dot_u8s8 as their AVX-512 intrinsics";
  let description = [{
    Rewrites every `tlm.lookup` (made by `tlm-tile-matmuls{lookup-nibbles}`
    only for AVX-512 targets) into a call of
    `llvm.x86.avx512.permvar.sf.512`, which selects `vpermps`, and every
    `tlm.dot_u8s8` into `llvm.x86.avx512.vpdpbusd.512` (AVX512-VNNI). The CPU
    pipeline runs it after bufferization and buffer deallocation: the
    deallocation analysis refuses ops of unknown memory effects, which
    `llvm.call_intrinsic` is, and `tlm.lookup` is pure.

    Before:
    ```mlir
    %w = tlm.lookup %table[%dwords] : vector<16xf32>, vector<16xi32>
    ```
    After:
    ```mlir
    %w = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%table, %dwords)
        : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
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
    block: cs336-ts decoded many times slower on 2 threads than on 1. This
    pass rewrites each `scf.parallel` that has an `scf.parallel` ancestor
    into a nest of `scf.for` (upstream's `parallelForToNestedFors`),
    leaving the outermost ones to become the parallel regions. One with
    reductions is left alone.

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

#endif // TLM_PASSES_CPU_PASSES_TD
