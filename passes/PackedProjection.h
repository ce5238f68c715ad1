//===- PackedProjection.h - projections over packed panels of W -*- C++ -*-===//
//
// tlm-tile-matmuls' main form for the projections of a prompt: each panel
// of W is transposed once into a small buffer, then every full tile of rows
// runs an outer-product kernel against it (see PackedProjection.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_PACKEDPROJECTION_H
#define TLM_PASSES_PACKEDPROJECTION_H

#include "passes/Projection.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {

/// The register block of the packed kernel: `rows` rows of x against
/// `cols` columns of W (a multiple of `lanes`), `rows * cols / lanes`
/// vector accumulators.
struct PackedShape {
  int64_t rows, cols, lanes;
};

/// Why `op` (a matched projection on tensors) cannot take the packed form,
/// or an empty string when it can: n must split into panels of `cols` and
/// k into `lanes` x `lanes` transposes.
std::string packedMismatch(linalg::LinalgOp op, const ProjectionDims &p,
                           PackedShape shape);

/// `init += (norm.x / norm.rms · norm.gain) · wᵀ` as one generic with inputs
/// (x, rms, gain, w): `projection` (a matched projection of `norm`'s result)
/// with the RMSNorm scaling folded in, for packProjection.
linalg::GenericOp foldNormScale(RewriterBase &rewriter,
                                linalg::LinalgOp projection,
                                const ProjectionDims &p, const NormScale &norm);

/// Rewrites `op` (rows: unit dims, then one dynamic) into a loop over panels of
/// `shape.cols` columns: when there is at least one full tile of `shape.rows`
/// rows, the panel of W is packed (transposed to k x cols) and every full row
/// tile accumulates `rows x cols` outputs in registers over k; the remaining
/// rows (all of them in decode) stay a projection on W itself, returned in
/// `rest` for the caller's GEMV blocking. With `overwrite` the output is never
/// read: each tile starts from zero. `op` may also be foldNormScale's form
/// (needs `overwrite`): the panel is packed times the gain, each tile's sums
/// are divided by their rows' rms, and the remaining rows are normalized
/// before their projection; x itself is never normalized in memory.
LogicalResult packProjection(RewriterBase &rewriter, linalg::LinalgOp op,
                             const ProjectionDims &p, PackedShape shape,
                             bool overwrite, linalg::LinalgOp &rest);

/// A projection over tensor.concat(w1, w3) whose two halves only one
/// elementwise op reads (SwiGLU's silu(x·W1ᵀ) · x·W3ᵀ after
/// tlm-fuse-projections).
struct PairedConsumer {
  linalg::GenericOp consumer;
  Value w1, w3;
  /// For each consumer input, the half it reads (0: w1's, 1: w3's).
  SmallVector<int64_t> inputs;
  SmallVector<tensor::ExtractSliceOp, 2> slices;
};

/// Why `op` (a matched projection on tensors) has no paired consumer, or an
/// empty string, filling `out`: W a concatenation of two equal parts of
/// whole `halfPanel`s of rows, the result read only by two slices (its two
/// halves, rows from the first) that one elementwise generic (identity maps,
/// f32 payload, output not read) reads.
std::string pairedConsumerMismatch(linalg::LinalgOp op, const ProjectionDims &p,
                                   int64_t halfPanel, PairedConsumer &out);

/// Replaces `pair.consumer` (and `op`, which must start from zero, and the
/// slices) by the packed form computing the consumer in the epilogue: each
/// panel packs `shape.cols / 2` rows of w1 and the same rows of w3, each
/// full row tile's two sum vectors per row go through the consumer's
/// payload (as vector ops) and one vector per row is stored; the rows
/// after the last full tile run two GEMV projections per panel (returned in
/// `rests` for the caller's blocking) and the payload on their sums. The
/// projection's output (twice the consumer's) is never written. `op` may be
/// foldNormScale's form. With `threads > 1` the consumer's columns are
/// split across an scf.forall in whole half panels.
void packPairedProjection(RewriterBase &rewriter, linalg::LinalgOp op,
                          const PairedConsumer &pair, PackedShape shape,
                          int64_t threads,
                          SmallVector<linalg::LinalgOp> &rests);

} // namespace mlir::tlm

#endif // TLM_PASSES_PACKEDPROJECTION_H
