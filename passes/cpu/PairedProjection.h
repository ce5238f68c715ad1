//===- PairedProjection.h - W1/W3 with SwiGLU in the epilogue ---*- C++ -*-===//
//
// tlm-tile-matmuls{fuse-swiglu}: a packed projection over the concatenation
// of two parts whose halves only one elementwise op reads (SwiGLU's
// silu(x·W1ᵀ) · x·W3ᵀ after tlm-fuse-projections) computes that op on its
// tiles' sums (see PairedProjection.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_PAIREDPROJECTION_H
#define TLM_PASSES_CPU_PAIREDPROJECTION_H

#include "passes/cpu/PackedProjection.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tlm {

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
/// foldNormScale's form. When `chunk` (a multiple of half panels dividing
/// the consumer's columns) is less than all of them, the columns are split
/// in chunks across an scf.forall (one per thread).
void packPairedProjection(RewriterBase &rewriter, linalg::LinalgOp op,
                          const PairedConsumer &pair, PackedShape shape,
                          int64_t chunk, SmallVector<linalg::LinalgOp> &rests);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_PAIREDPROJECTION_H
