//===- Passes.td - GPU codegen -----------------------------*- tablegen -*-===//
//
// The GPU pipeline's own passes: device memory, loop mapping, hand-shaped
// projection and reduction kernels, kernel deduplication, native math.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_PASSES_TD
#define TLM_PASSES_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TlmGpuDeviceMemory : Pass<"tlm-gpu-device-memory", "::mlir::func::FuncOp"> {
  let summary = "Put a bufferized host function's buffers in GPU memory";
  let description = [{
    For the GPU pipeline, after bufferization and deallocation and before
    the loops are mapped: every `memref.alloc` becomes a `gpu.alloc` and
    every `memref.dealloc` a `gpu.dealloc` (the host function keeps the
    allocation order and lifetimes bufferization chose), and every
    `memref.copy` becomes a `linalg.copy`, so that it turns into a parallel
    loop and then a kernel like any other op. Fails on an `alloca` or a
    global: on the GPU path no op may leave data in host memory.

    Before:
    ```mlir
    %t = memref.alloc(%n) : memref<?x64xf32>
    memref.copy %a, %t : memref<?x64xf32> to memref<?x64xf32>
    memref.dealloc %t : memref<?x64xf32>
    ```
    After:
    ```mlir
    %t = gpu.alloc (%n) : memref<?x64xf32>
    linalg.copy ins(%a : memref<?x64xf32>) outs(%t : memref<?x64xf32>)
    gpu.dealloc %t : memref<?x64xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::linalg::LinalgDialect"
  ];
}

def TlmGpuDecodeAttention : Pass<"tlm-gpu-decode-attention", "::mlir::ModuleOp"> {
  let summary = "Decode's attention as flash-decoding kernels";
  let description = [{
    For the GPU pipeline, before `tlm-lower-to-linalg`: an f32
    `tlm.cached_attention` whose step has one new token (one query row a
    sequence) becomes two kernels, after the prologue the conversion shares
    (heads split, RoPE, the new rows in the cache layout). The cache is split
    into `chunk`-position pieces, one block per (piece, head, sequence): its
    warps take a position each (lanes split the head dim, a shuffle sum gives
    the score), then every thread takes a head dim and a share of the
    positions and sums `exp(score - max) · v`; the block leaves its max, its
    sum of exponentials and its partial output. The second kernel merges
    the pieces of each (head, sequence) with the usual rescaling, so no
    score tensor is written and the values are read coalesced.

    Where the number of new tokens is dynamic the kernels take the
    one-token case and a clone of the op (lowered by the conversion as
    before) takes the rest, under an `scf.if`; a step known to have more
    rows is left alone, as is any other element type.

    Before:
    ```mlir
    %o, %kn, %vn = tlm.cached_attention %q, %k, %v, %kp, %vp
        {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e4 : f64}
        : (...) -> (...)
    ```
    After (one-token case):
    ```mlir
    %qb = bufferization.to_buffer %q4 read_only : ...
    gpu.launch blocks(%s, %h, %b) in (%gx = %pieces, %gy = %c4, %gz = %n)
               threads(%l, %w, %z) in (%tx = %c32, %ty = %c4, %tz = %c1)
               workgroup(%p : memref<64xf32, #gpu.address_space<workgroup>>, ...) {...}
    gpu.launch blocks(%h, %b, %z) in (%gx = %c4, %gy = %n, %gz = %c1) ... {...}
    %o = bufferization.to_tensor %out restrict writable : ...
    ```
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", /*default=*/"64",
           "Cached positions per block of the first kernel">,
    Option<"warps", "warps", "int64_t", /*default=*/"4",
           "Warps per block of the first kernel">,
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TlmGpuPrefillAttention : Pass<"tlm-gpu-prefill-attention", "::mlir::ModuleOp"> {
  let summary = "Attention of many new tokens as one flash-attention kernel";
  let description = [{
    For the GPU pipeline, before `tlm-lower-to-linalg` and after
    `tlm-gpu-decode-attention` (which keeps the one-token steps): every f32
    `tlm.cached_attention` left becomes, after the prologue the conversion
    shares (heads split, RoPE, the new rows in the cache layout), one
    kernel instead of the conversion's score tensors. A block of 4 warps
    takes `rows` queries of one head of one sequence (warp w the rows
    w·rows/4..): it walks the keys its last query sees in tiles of 32,
    staging each tile's keys (rows padded to an odd number of floats, so
    lane l reading key l hits its own bank) and values in shared memory,
    from the cache
    below the sequence's past and from the new rows above it. Lane l
    scores key l against the warp's queries, the warp's max and sum of
    exponentials come from shuffles (the online softmax, rescaling what was
    summed when the max grows), the probabilities go to shared memory, and
    lane l sums `p · v` for head dims l, l + 32, ... Causal masking and the
    rows past S are guards; nothing the size of the scores is written.
    Other element types are left to the conversion.

    Before:
    ```mlir
    %o, %kn, %vn = tlm.cached_attention %q, %k, %v, %kp, %vp
        {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e4 : f64}
        : (...) -> (...)
    ```
    After (rows = 16, head dim 16):
    ```mlir
    %qb = bufferization.to_buffer %q4 read_only : ...
    gpu.launch blocks(%qblock, %h, %b) in (%gx = %qblocks, %gy = %c4, %gz = %n)
               threads(%l, %w, %z) in (%tx = %c32, %ty = %c4, %tz = %c1)
               dynamic_shared_memory_size %bytes {
      ... queries to shared memory ...
      scf.for %tile = %c0 to %tiles step %c1 iter_args(%m0 = %ninf, ...) {
        gpu.barrier
        ... 32 keys and values to shared memory ...
        gpu.barrier
        ... scores, gpu.shuffle xor (max, sum), exp, probabilities stored ...
        gpu.barrier
        ... p · v into the outputs ...
      }
      ... out[b, q, h, d] = output / sum ...
    }
    %o = bufferization.to_tensor %out restrict writable : ...
    ```
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"16",
           "Queries per block (a multiple of its 4 warps)">
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect", "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TlmGpuFuseElementwise : Pass<"tlm-gpu-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse chains of elementwise generics (one kernel each on the GPU)";
  let description = [{
    On tensors, before bufferization: an all-parallel `linalg.generic`
    whose result has one use, by another all-parallel generic, is fused
    into it (upstream's elementwise fusion with that control), so the
    chain becomes one kernel and its intermediate tensors are never
    written. Contractions and reductions are neither fused nor fused into:
    the GPU passes after bufferization recognize them by their shape.

    First, a residual add `r + P` of a projection P that starts at zero and
    that only the add reads becomes P accumulating into r (as in
    `tlm-fuse-projections{fuse-residual-adds}`): the projection kernels add
    their sums to what the buffer holds, and the add's kernel is gone.
    Then a `linalg.fill` that several ops write into (CSE merges
    identical fills) is repeated, on a `tensor.empty` of its own, for each
    writer but one: shared, bufferization would fill one buffer and copy it
    into the others, a kernel more per writer.

    Before:
    ```mlir
    %s = linalg.generic {iterator_types = ["parallel"]}
        ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {...}  // silu
    %y = linalg.generic {iterator_types = ["parallel"]}
        ins(%s, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {...}  // * b
    ```
    After: one generic over `%a` and `%b` computing `silu(a) * b`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def TlmGpuMapParallelLoops : Pass<"tlm-gpu-map-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "Tile each outermost scf.parallel into blocks and threads";
  let description = [{
    Gives every outermost `scf.parallel` of a host function a GPU mapping
    that `convert-parallel-loops-to-gpu` turns into a `gpu.launch`:
    dimensions before the last are collapsed into one, the last is tiled by
    `block-size` (or its static extent, if smaller; a guard masks the tail),
    the collapsed dimension runs on `block_x`, the last dimension's tiles on
    `block_y` and the lanes of a tile on `thread_x`, so neighbouring threads
    touch neighbouring elements of the innermost (contiguous) dimension.
    Loops nested inside (reductions lowered to `scf.for`) run within each
    thread. Fails if a memory access is left outside every parallel loop and
    every `gpu.launch`, since it would run on the host against device
    memory.

    Before:
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c256) step (%c1, %c1) {
      ...
    }
    ```
    After (block-size 128):
    ```mlir
    scf.parallel (%i, %jt) = (%c0, %c0) to (%n, %c256) step (%c1, %c128) {
      scf.parallel (%u, %jj) = (%c0, %c0) to (%c1, %c128) step (%c1, %c1) {
        ...
      } {mapping = [#gpu.loop_dim_map<processor = sequential, ...>,
                    #gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>,
                  #gpu.loop_dim_map<processor = block_y, ...>]}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"128",
           "Threads per block along the innermost dimension">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def TlmGpuNativeMath : Pass<"tlm-gpu-native-math"> {
  let summary = "Give math ops with an exact PTX instruction that instruction";
  let description = [{
    Inside GPU kernels, before `convert-gpu-to-nvvm`: `math.sqrt` becomes
    NVVM's round-to-nearest square root (`llvm.nvvm.sqrt.rn.f`/`.d`, PTX
    `sqrt.rn`), `math.fma` and `math.absf` the LLVM intrinsics (`fma.rn`,
    `abs`). Left to `convert-gpu-to-nvvm`, they would become libdevice calls,
    and libdevice's `sqrtf` is `sqrt.approx` unless the module asks for
    precise square roots. Ops without such an instruction (`sin`, `cos`,
    `exp`) are left for libdevice.

    Before:
    ```mlir
    %r = math.sqrt %x : f32
    ```
    After:
    ```mlir
    %r = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%x) : (f32) -> f32
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TlmGpuTileMatmuls : Pass<"tlm-gpu-tile-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Projections as register-blocked tile and GEMV GPU kernels";
  let description = [{
    On buffers, for the GPU pipeline (before the remaining ops become
    parallel loops): every projection `out[rows..., n] += x[rows..., k] ·
    w[n, k]` (the contraction tlm.linear lowers to) becomes a `gpu.launch`
    of `tile` x `tile` threads a block, each thread computing `thread-tile`
    x `thread-tile` outputs (rows ty + tile·i, columns tx + tile·j). For
    each `tile`-wide slice of k the block stages its rows of x and of w in
    workgroup memory (neighbouring threads read neighbouring k: coalesced),
    synchronizes, and every thread accumulates its outputs in registers
    from there with fused multiply-adds; w's tile is padded by one column so
    the threads of a half-warp hit different banks. Rows are dynamic and
    every edge is guarded. Other contractions are left alone.

    A decode step has one row per sequence. So for static n and k a GEMV
    kernel is launched too, and the row count gives each launch its grid:
    the GEMV's blocks at or below `gemv-rows` rows, none above (the runtime
    launches nothing for an empty grid), the tiles the other way round. The
    GEMV gives one warp per output column, as many threads a block as the
    tiles; the lanes read the weight row side by side, 16 bytes each
    (128-bit loads, when k is a multiple of 4 floats or 8 bf16/f16 and the
    buffers are unstrided, so every row is 16-byte aligned; else one value),
    keep one accumulator per row (4 floats with those loads), and sum
    across the warp with xor
    shuffles. Fewer columns than `gemv-min-warps` split k across a block's
    warps, whose sums meet in workgroup memory. Projections of one x in a
    row (Q, K and V; W1 and W3) share one GEMV launch, each warp selecting
    its projection's weight and output by its column, when their outputs
    are distinct fresh allocations none of them reads and nothing between
    them uses x or a member's weight or output or has other memory effects
    than allocating and filling fresh buffers.

    x and out must be f32; w may be f32, bf16 or f16, which both kernels
    widen to f32 as they load it (the tiles before staging it). Any other
    element type leaves the contraction to the parallel loops.

    With `tensor-cores=tf32`, the tiles are TF32 tensor-core tiles instead
    (where x and out have identity layouts, viewed as 2-D): blocks of 4
    warps, each block 64 x 64 outputs, each warp 32 x 32 of them as 2 x 4
    `nvgpu.mma.sync` fragments of 16 x 8 x 8. k goes in steps of 32; the
    block stages its rows of x and w in workgroup memory rounded to TF32
    (`nvvm.convert.float.to.tf32`, round to nearest; bf16 and f16 weights
    widen exactly), rows padded to 36 floats so a warp's fragment loads hit
    32 banks. The inputs are rounded to TF32's 10 mantissa bits; products
    and sums are f32. With `tensor-cores=bf16` the same tiles hold bf16
    (x and f32/f16 weights rounded to nearest even, bf16 weights as they
    are; rows of 40) and each warp issues `nvvm.mma.sync` m16n8k16 on
    pairs of them packed in i32 registers (nvgpu's lowering has no bf16);
    the sums are f32.

    The kernels add their sums to out, unless out is a `gpu.alloc` of the
    same block, used directly, zero-filled before the projection with no
    other use between: then the fill is erased and they store the sums.

    Before:
    ```mlir
    linalg.generic {... iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%x, %w : memref<?x?x64xf32>, memref<32x64xf32>) outs(%y : memref<?x?x32xf32>) {...}
    ```
    After (`gemv-rows=4`, `tile=16`, `thread-tile=4`):
    ```mlir
    %few = arith.cmpi ule, %m, %c4 : index
    %gemvBlocks = arith.select %few, %c4, %c0 : index
    gpu.launch blocks(...) in (%gx = %gemvBlocks, %gy = %c1, %gz = %c1)
               threads(%lane, %warp, %tz) in (%sx = %c32, %sy = %c8, %sz = %c1) {
      %acc:4 = scf.for %k = %start to %c64 step %c128 iter_args(...) {
        %w4 = vector.load %w[%col, %k] {alignment = 16 : i64} : memref<32x64xf32>, vector<4xf32>
        ... math.fma %x4, %w4, %acc ... (one per row, guarded by %m)
      }
      ... vector.reduction <add>, gpu.shuffle xor 16, 8, 4, 2, 1 ...
      ... lane 0: %y[...] = %y[...] + %total
    }
    %tileBlocks = arith.select %few, %c0, %rowBlocks : index
    gpu.launch blocks(...) in (%gx = %tileBlocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1)
               workgroup(%xs : memref<64x16xf32, #gpu.address_space<workgroup>>,
                         %ws : memref<64x17xf32, #gpu.address_space<workgroup>>) {
      %acc:16 = scf.for %k0 = %c0 to %c64 step %c16 iter_args(...) {
        ... 4 x memref.store ..., %xs[%ty + 16·s, %tx], 4 x ..., %ws[...]
        gpu.barrier
        ... 16 x math.fma over %xs[%ty + 16·i, %kk], %ws[%tx + 16·j, %kk] ...
        gpu.barrier
      }
      ... 16 x (guarded) %y[...] = %y[...] + %acc
    }
    ```
  }];
  let options = [
    Option<"tile", "tile", "int64_t", /*default=*/"16",
           "Threads per block edge of the tile kernel (tile x tile threads)">,
    Option<"threadTile", "thread-tile", "int64_t", /*default=*/"4",
           "Output rows and columns per thread of the tile kernel (a block "
           "covers tile x thread-tile of each)">,
    Option<"gemvRows", "gemv-rows", "int64_t", /*default=*/"4",
           "Most rows the GEMV kernel takes (decode; 0: tiles only)">,
    Option<"gemvMinWarps", "gemv-min-warps", "int64_t", /*default=*/"4096",
           "Warps a GEMV launch should have at least: fewer columns split k "
           "across a block's warps (an H200 holds 132 SMs x 64 warps)">,
    Option<"tensorCores", "tensor-cores", "std::string", /*default=*/"\"none\"",
           "Tiles on tensor cores: none, tf32 (mma.sync m16n8k8) or bf16 "
           "(m16n8k16), sm_80 and up">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::math::MathDialect", "::mlir::arith::ArithDialect",
    "::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

def TlmGpuBlockReductions : Pass<"tlm-gpu-block-reductions", "::mlir::func::FuncOp"> {
  let summary = "Row reductions as one GPU block per row";
  let description = [{
    On buffers, for the GPU pipeline: a `linalg.generic` whose last loop is
    its only reduction, whose output is indexed by the other loops (in any
    order), and whose body is `out = combine(out, f(inputs))` with `combine`
    one of `addf`, `maximumf`, `maxnumf` (RMSNorm's sum of squares,
    softmax's max and sum, attention's P·V) becomes a `gpu.launch` with one
    block per output element: the block's threads stride over the reduced
    dimension, each folding `f` into a private partial, and `gpu.all_reduce`
    combines the partials (warp shuffles and workgroup memory, lowered by
    `convert-gpu-to-nvvm`); thread 0 then folds the total into `out`.
    Reductions shorter than a warp (a static extent under 32, such as one
    head's dot product) are left to the per-thread loops of
    `tlm-gpu-map-parallel-loops`, and so are `thread-rows` outputs or more,
    which fill the GPU with one thread each (prefill's scores: a block per
    score would be millions of blocks). When the output count is dynamic,
    both forms are kept: the launch, with a grid of the output count below
    `thread-rows` and 0 above, and the generic as parallel loops whose first
    bound is 0 below and its extent above (the runtime launches nothing for
    an empty grid). The threads per block are `block-size`, or the next
    power of two of a smaller static extent.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d0, d1)],
                    iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : memref<?x?x768xf32>) outs(%ss : memref<?x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %out : f32
      linalg.yield %s : f32
    }
    ```
    After (dynamic rows: the block grid is the row count below
    `thread-rows`, else 0; the thread form follows as parallel loops):
    ```mlir
    %few = arith.cmpi ult, %rows, %c131072 : index
    %grid = arith.select %few, %rows, %c0 : index
    gpu.launch blocks(%b, %y, %z) in (%gx = %grid, ...) threads(%t, ...) in (%c256, %c1, %c1) {
      %partial = scf.for %r = %t to %c768 step %c256 iter_args(%p = %zero) -> f32 {
        %in = memref.load %x[...]
        %sq = arith.mulf %in, %in : f32
        %next = arith.addf %p, %sq : f32
        scf.yield %next : f32
      }
      %total = gpu.all_reduce add %partial uniform {} : (f32) -> f32
      scf.if %first { ... memref.store (arith.addf %old, %total), %ss[...] }
    }
    %upper = arith.select %few, %c0, %batch : index
    scf.parallel (%i, %j) = (%c0, %c0) to (%upper, %seq) step (%c1, %c1) {
      scf.for %d = %c0 to %c768 step %c1 { ... }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a power of two, at least 32)">,
    Option<"threadRows", "thread-rows", "int64_t", /*default=*/"131072",
           "Rows (output elements) from which one thread per row replaces "
           "the block per row (0: always blocks)">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

def TlmGpuDedupKernels : Pass<"tlm-gpu-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of each distinct outlined kernel";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per launch, and a model
    launches the same kernels once per layer. This pass compares the
    modules' contents (printed with local names, so only the module's own
    symbol differs), keeps the first of each set of identical modules,
    points every `gpu.launch_func` at it and erases the rest: less PTX to
    generate at compile time and fewer modules for the driver to load.

    Before:
    ```mlir
    gpu.launch_func @f_kernel::@f_kernel ...
    gpu.launch_func @f_kernel_0::@f_kernel ...
    gpu.module @f_kernel { gpu.func @f_kernel(...) kernel { BODY } }
    gpu.module @f_kernel_0 { gpu.func @f_kernel(...) kernel { BODY } }
    ```
    After:
    ```mlir
    gpu.launch_func @f_kernel::@f_kernel ...
    gpu.launch_func @f_kernel::@f_kernel ...
    gpu.module @f_kernel { gpu.func @f_kernel(...) kernel { BODY } }
    ```
  }];
}

#endif // TLM_PASSES_GPU_PASSES_TD
