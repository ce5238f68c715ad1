//===- Tiling.h - tiling steps tlm-tile-matmuls composes --------*- C++ -*-===//
//
// Small steps the projection tiling (TileMatmuls.cpp) is built from: tile an
// op by static sizes, find the op tiling left behind, reshape a tensor's
// last dim into vectors, and tell which loops keep an accumulator block in
// registers.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_TILING_H
#define TLM_PASSES_CPU_TILING_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm::tiling {

/// `sizes` as index attributes.
SmallVector<OpFoldResult> tileSizes(OpBuilder &b, ArrayRef<int64_t> sizes);

/// Tiles `op` by `sizes` (0: not tiled) into scf.for loops, or an
/// scf.forall with `forall`, and replaces it by the result.
FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *op,
                                     ArrayRef<int64_t> sizes,
                                     bool forall = false);

/// Whether `loop`'s own body writes a vector into one of its tensor
/// iter_args at indices defined outside the loop: an accumulator block that
/// hoisting can keep in registers across the loop.
bool writesInvariantIterArgVector(scf::ForOp loop);

/// The single projection left in `region` by tiling, if any.
linalg::LinalgOp findTiled(Region &region);

/// The loop dims of `parts`, one after another (an indexing map's results
/// for dimsMapOf).
SmallVector<unsigned> joinDims(std::initializer_list<ArrayRef<unsigned>> parts);

/// `v` with its last dim split into (dim / lanes, lanes).
Value expandLastDim(OpBuilder &b, Location loc, Value v, int64_t lanes);

/// `v` with its last dim split into `factors` (their product is the dim).
Value splitLastDim(OpBuilder &b, Location loc, Value v,
                   ArrayRef<int64_t> factors);

/// `width` elements of the tensor `v` from `at` along its last dim (in
/// bounds: the callers read whole steps).
Value readVector(OpBuilder &b, Location loc, Value v, ValueRange at,
                 int64_t width);

/// readVector at row 0 of every leading dim, from `idx` of the last: a
/// block's one row of x.
Value readRowVector(OpBuilder &b, Location loc, Value v, Value idx,
                    int64_t width);

/// The one-element block `out` (all dims 1) set to the sum of the lanes of
/// `sum`, or with it added unless `overwrite`: a one-column GEMV block's end.
Value storeLaneSum(OpBuilder &b, Location loc, Value sum, Value out,
                   bool overwrite);

/// `v` (r.., any static length) sliced in its rows as `slice` slices x
/// (r.., k) (an extract_slice of x over all of k), or null when `slice` is
/// not one.
Value sliceRowsLike(RewriterBase &rewriter, Value v, Value slice, Value x);

/// How many consecutive k steps a split-k block with `accumulators` vector
/// accumulators should keep apart, so that at least `minChains` independent
/// FMA chains run (a power of two dividing `steps`, the block's k steps).
/// One chain waits an FMA's latency per step, which held a one-column GEMV
/// on bf16 below the memory's speed (docs/cpu-codegen.md#fma-chains).
int64_t accumulatorChains(int64_t accumulators, int64_t steps,
                          int64_t minChains);

/// Prefetches the `rows` rows of the 2-D tensor `matrix` that lie
/// `distance` bytes past row `row` (rounded up to whole rows; the last row
/// when that passes the end), one memref.prefetch per 64-byte line. A
/// read-only to_buffer gives the prefetches the tensor's buffer, which
/// bufferization folds into the tensor's own.
void prefetchRowsAhead(OpBuilder &b, Location loc, Value matrix, Value row,
                       int64_t rows, int64_t distance);

} // namespace mlir::tlm::tiling

#endif // TLM_PASSES_CPU_TILING_H
