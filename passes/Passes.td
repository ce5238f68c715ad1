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
  let options = [
    Option<"fuseAttention", "fuse-attention", "bool", /*default=*/"true",
           "Lower tlm.cached_attention (f32) to fused loop nests: whole "
           "blocks of `lanes` query rows per (batch, head) with an online "
           "softmax (Qᵀ and Oᵀ blocks, one row per vector lane, keys in "
           "blocks of `lanes`) when head_dim is a multiple of `lanes`; the "
           "other rows (every decode step) one at a time, key-major over a "
           "chunk of heads (scores of every head against each key in "
           "position order, softmax per head, values key by key), so the "
           "position-major cache is read start to end; no scores tensor of "
           "the sequence. Off: the scores / softmax / P·V generics above">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 lanes of the target's vectors: the fused attention's query "
           "rows per block (16: AVX-512, 8: AVX2)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Threads the fused attention's one-row form splits the heads "
           "for: chunks of the largest divisor of the heads up to an even "
           "share (12 heads on 2 threads: 2 chunks of 6)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect"
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

    Entries are also marked `alwaysinline` with `linkonce_odr` linkage: their
    wrappers (the C interface, the JIT's packed one) would otherwise call
    them with every descriptor field as an argument, over 1000 for a
    12-layer model, and instruction selection of that one call cost LLVM
    about 2 s per entry. Inlined into its wrapper, the entry's own copy is
    unused and dropped.

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

    With `residual-adds`, an elementwise add `r + P` of a projection P that
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
    Option<"projections", "projections", "bool", /*default=*/"true",
           "Fuse the projections of one input (the horizontal fusion)">,
    Option<"residualAdds", "residual-adds", "bool", /*default=*/"true",
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
    the FFNs: `out[rows..., n] += x[rows..., k] · w[n, k]` with dynamic rows,
    static `n` and `k` and f32 data. Other contractions are left alone.

    0. When `n` is not a whole number of packed panels (nor of one-row
       blocks), the projection is split in two over W's rows: the largest
       multiple of them, then the rest (50257 columns, GPT-2's vocabulary:
       50240 + 17 with 32-column panels), each writing its own columns of
       the output; every step below then sees static column tiles.
    1. With `threads > 1`, the `n` dim is split into chunks of whole
       column tiles by an `scf.forall` (an OpenMP loop later): `threads`
       chunks, or more where that makes them divide `n` (10000 columns of
       16 on 2 threads: 25 chunks of 400, rather than 5008 + 4992 with a
       ragged tail).
    2. The columns are tiled in panels of `col-panel` (inside each thread's
       chunk), so every row runs against one cache-resident panel of W
       before the next.
    3. The rows are tiled (1 per outer row dim, `row-tile` for the innermost)
       and the row loop is peeled, so the main loop only sees full,
       statically shaped row tiles.
    4. Every static block `out[r, c] += x[r, k] · w[c, k]` is rewritten in
       split-k form, `part[r, c, l] += x[r, kb, l] · w[c, kb, l]` with
       `k = kb·lanes + l`, then `out[r, c] += Σ_l part[r, c, l]`, and
       vectorized: the `kb` loop runs `rows·cols` independent
       `vector<lanes>` multiply-add chains (marked `contract`, so LLVM emits
       FMAs) on contiguous loads of x and w, the `part` block is hoisted
       into registers, and the horizontal sums happen once per block.
    5. Main part: `row-tile x col-tile` blocks (rows halved and columns
       doubled while `row-tile` rows of x would exceed `x-tile-bytes`, so
       the tile of x stays in L1: `k = 2048` runs 4 x 4). Remainder (fewer than
       `row-tile` rows, which is every decode step): one row at a time in
       `1 x gemv-col-tile` blocks, so every weight row streams once. With
       8 columns a block loads each vector of x once for 8 rows of W (8
       streams through W at once); with 1, W's rows are read one after the
       other, start to end: one sequential stream, which is what the
       hardware prefetchers keep up with when W comes from memory. A block
       whose k does not split into `lanes` is vectorized as it is; a ragged
       (dynamic) block stays scalar. No masks anywhere.
    6. When the output is `linalg.fill 0` of a `tensor.empty` and every
       block is a split-k one, the blocks sum into zeros and overwrite their
       outputs: the output is neither filled nor read (nor copied, which
       bufferization did when CSE had merged equal fills).

    With `pack` (the default), a projection whose `n` splits into panels of
    `pack-cols` (in every thread's chunk) and whose `k` splits into `lanes`
    takes the packed form instead of steps 2-5 (one batch row at a time, on
    rank-reduced slices):

    7. For each panel of `pack-cols` columns, if there is at least one full
       tile of `pack-rows` rows, W's panel is transposed into a
       `k x pack-cols` buffer (`lanes x lanes` vector transposes; one buffer
       per thread, carried across the panels). Every full row tile then
       keeps `pack-rows x pack-cols / lanes` accumulator vectors over k: per
       k it loads the buffer row's vectors and broadcasts one x value per
       row against them (an outer product: no horizontal sums, no split of
       k). The rows after the last full tile (all of them in decode, which
       never packs) run the one-row GEMV blocks of step 5 against W itself.
    8. With `fold-norms`, when x is an RMSNorm's scaling
       `x0[r, k] / rms[r] · g[k]` (as `tlm-lower-to-linalg` makes it) that
       only this projection reads, and the projection starts from zero, the
       scaling is folded: the panels are packed as `W[c, k] · g[k]`, each
       tile's sums are multiplied by their rows' `1 / rms`, and only the remaining
       rows are normalized (once, before the panel loop). The normalized x
       is never written. (`Σ x0·(g·W) · (1 / rms)` rounds differently from
       `Σ (x0 / rms · g)·W`: within the block tolerance.) With
       `tlm-fuse-projections`, Q/K/V and W1/W3 each read their norm alone.
    9. With `fuse-pairs`, a packed projection over the concatenation of two
       equal parts (W1 and W3 after `tlm-fuse-projections`) that starts from
       zero, whose result only two slices read (its two halves), which only
       one elementwise `linalg.generic` reads (SwiGLU's `silu(a) · b`:
       identity maps, f32 payload of elementwise ops, output not read),
       becomes one loop nest producing that op's result: each panel packs
       `pack-cols / 2` rows of the first part and the same rows of the
       second, each full tile's two sum vectors per row go through the
       op's payload as vector ops and one vector per row is stored; the
       rows after the last full tile run two GEMV projections per panel and
       the payload on their sums. The projection's output (twice the op's)
       is never written nor read back. With `threads > 1` the op's columns
       are split across an `scf.forall` in whole half panels.

    ```mlir
    %r:2 = scf.for %c = %c0 to %c128 step %c32
        iter_args(%o = %z, %buf = %empty) -> (tensor<?x128xf32>, tensor<64x32xf32>) {
      %t:2 = scf.if %has_full_tile -> (tensor<?x128xf32>, tensor<64x32xf32>) {
        %p = scf.for %h = %c0 to %c32 step %c16 iter_args(%b = %buf) {
          // %row = %c + %h
          scf.for %kb = %c0 to %c64 step %c16 iter_args(%b1 = %b) {
            %blk = vector.transfer_read %w[%row, %kb] : tensor<128x64xf32>, vector<16x16xf32>
            %tr = vector.transpose %blk, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
            ... vector.transfer_write %tr, %b1[%kb, %h] ...
          }
        }
        scf.for %i = %c0 to %full step %c8 iter_args(%o1 = %o) {
          %acc:16 = scf.for %k = %c0 to %c64 step %c1 iter_args(...) -> (vector<16xf32>, ...) {
            %w0 = vector.transfer_read %p[%k, %c0] : tensor<64x32xf32>, vector<16xf32>
            %xi = tensor.extract %x[%i, %k] : tensor<?x64xf32>
            %xv = vector.broadcast %xi : f32 to vector<16xf32>
            %a0 = vector.fma %xv, %w0, %acc0 : vector<16xf32>
            ...
          }
          ... vector.transfer_write %acc#0, %o1[%i, %c] ...
        }
      } else { scf.yield %o, %buf }
      // rows %full.. : the split-k GEMV blocks
    }
    ```

    Before:
    ```mlir
    %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                        affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>]
           ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
           outs(%z : tensor<?x128xf32>) -> tensor<?x128xf32>
    ```
    After (main part, shown with `row-tile=6 col-panel=0`; the peeled
    remainder is the same nest with `vector<1x8x16xf32>` blocks and a row
    loop of step 1):
    ```mlir
    %main = scf.for %i = %c0 to %aligned step %c6 iter_args(%o = %z) {
      %r = scf.for %j = %c0 to %c128 step %c4 iter_args(%o1 = %o6) {
        %xe = tensor.expand_shape %x6 [[0], [1, 2]] output_shape [6, 4, 16]
        %we = tensor.expand_shape %w4 [[0], [1, 2]] output_shape [4, 4, 16]
        %part = scf.for %kb = %c0 to %c4 step %c1 iter_args(%p = %zeros) -> (vector<6x4x16xf32>) {
          // transfer_reads of %xe[.., kb, ..] and %we[.., kb, ..],
          // arith.mulf / arith.addf fastmath<contract>
        }
        %acc = vector.transfer_read %o1[%c0, %j] : tensor<6x128xf32>, vector<6x4xf32>
        %sum = vector.multi_reduction <add>, %part, %acc [2] : vector<6x4x16xf32> to vector<6x4xf32>
        ...
      }
    }
    ```
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"8",
           "Rows per register block of the main part">,
    Option<"colTile", "col-tile", "int64_t", /*default=*/"2",
           "Output columns per register block of the main part">,
    Option<"xTileBytes", "x-tile-bytes", "int64_t", /*default=*/"32768",
           "Most bytes of x one row tile may span (row-tile x k floats): "
           "above it the rows halve and the columns double, so the tile "
           "stays in L1 (k = 2048 runs 4 x 4 blocks)">,
    Option<"colPanel", "col-panel", "int64_t", /*default=*/"128",
           "Columns per panel: the rows loop runs inside each panel of W so "
           "the panel stays in cache (the largest multiple of col-tile up to "
           "this that divides the columns; none: no panels)">,
    Option<"gemvColTile", "gemv-col-tile", "int64_t", /*default=*/"8",
           "Output columns per block of the one-row remainder (8: each "
           "load of x serves 8 rows of W, for weights in cache; 1: W read "
           "as one sequential stream, for weights from memory)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "Vector lanes along k (16 f32 = one AVX-512 register)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Split the output columns into this many scf.forall chunks">,
    Option<"vectorize", "vectorize", "bool", /*default=*/"true",
           "Vectorize the blocks (off: tiling only, for inspection)">,
    Option<"pack", "pack", "bool", /*default=*/"true",
           "Packed form for the full row tiles (off: split-k blocks)">,
    Option<"packRows", "pack-rows", "int64_t", /*default=*/"8",
           "Rows per tile of the packed kernel (x values broadcast per k)">,
    Option<"foldNorms", "fold-norms", "bool", /*default=*/"true",
           "Fold an RMSNorm scaling that only this projection reads into "
           "the packed form (the gain into the packed panels, the row's "
           "1/rms into the sums)">,
    Option<"packCols", "pack-cols", "int64_t", /*default=*/"32",
           "Columns per packed panel of W (a multiple of lanes)">,
    Option<"fusePairs", "fuse-pairs", "bool", /*default=*/"true",
           "Run the elementwise op that alone reads both halves of a "
           "two-part concatenated projection (SwiGLU's silu(a)·b) on the "
           "packed tiles' sums">
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::affine::AffineDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect"
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
    `lanes`, and vectorizes the static block. Without it these ops lower to
    scalar loops (rows are dynamic), with a scalar exp per element in SiLU.
    Ops already inside a loop (tiled by another pass), reductions and ops
    with a ragged innermost dim are left alone. An output the payload does
    not read (the lowering writes the residual add into one of its inputs)
    becomes a fresh `tensor.empty`, so bufferization does not copy the input
    first. With `threads > 1` the blocks are one `scf.forall`.

    Three shapes get forms of their own first:
    - A row sum (RMSNorm's Σ x²: only the innermost loop k reduces, static,
      a multiple of `lanes`; sums from a `linalg.fill`; payload `f(x) + acc`
      on f32) and the elementwise op that alone reads it become one
      `scf.forall` over the rows: `lanes` partial sums carried over k in a
      vector, added across lanes to the fill's value, the reader's payload
      on that scalar (three loop nests, or parallel regions, become one;
      the reassociated sum may differ from the sequential one in the last
      bits; see RowReduction.h).
    - A `linalg.transpose` that keeps the innermost dim in place (the new
      cache rows' batch/seq swap) is generalized and copied like the above.
    - RoPE's rotation as `tlm-lower-to-linalg` builds it (loops
      `(..., i, c)` with `c` the pair's half, x read as `x[..., i, 0]` and
      `x[..., i, 1]`, tables `cos/sin[..., i]`, payload
      `c == 0 ? x0·cos − x1·sin : x0·sin + x1·cos`) is tiled by its dynamic
      loops (batch, sequence) one at a time, its static ones (the heads)
      looped over inside the tile (one loop nest less for bufferization to
      analyse: it took ~45 ms more with the heads tiled as well), and each
      row is computed `lanes` elements at a time, in a loop over the row's
      blocks (one copy of the block's code, not one per block):
      `x · interleave(cos, cos) + swap(x) · interleave(−sin, sin)` with
      `swap` a shuffle of the pairs. The
      results are bit for bit the payload's (no fast-math flags, negation
      exact, addition commutative). Matched by its maps and payload; any
      other generic with a 2-wide innermost loop stays scalar.

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
           "Above 1, the blocks are one scf.forall (an OpenMP loop later) "
           "instead of nested scf.for loops">
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
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
    comparison: on small.json those queries were nine tenths of the
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

// The passes on parallel loops, then the GPU pipeline's.
include "ParallelPasses.td"
include "GpuPasses.td"

#endif // TLM_PASSES_TD
