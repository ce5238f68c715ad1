//===- Projection.h - matching tlm.linear's contractions --------*- C++ -*-===//
//
// The CPU and GPU matmul passes both rewrite the contractions
// `tlm-lower-to-linalg` makes for tlm.linear and the FFNs; this is the one
// matcher they share, and the folding of a residual add into the
// projection it adds, which both pipelines do.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_PROJECTION_H
#define TLM_PASSES_COMMON_PROJECTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {

/// (d0, d1, ...) -> (d_dims[0], d_dims[1], ...).
AffineMap dimsMapOf(MLIRContext *ctx, unsigned loops, ArrayRef<unsigned> dims);

/// The loop roles of a projection `out[rows..., n] += x[rows..., k] · w[n, k]`.
struct ProjectionDims {
  SmallVector<unsigned> rows; ///< outer to inner, all parallel
  unsigned n, k;
};

/// Marks an op the lowering built inside a loop of its own (training's
/// per-head attention loops, AttentionHeads.cpp): tlm-tile-matmuls tiles a
/// projection so marked, and tlm-vectorize-elementwise an elementwise op
/// or a transpose, as if it stood outside any loop (both leave other ops in
/// loops alone: those are tiles already). The pass that takes an op drops
/// its mark; tlm-vectorize-elementwise drops any left.
inline constexpr llvm::StringLiteral kTileInLoopAttr = "tlm.tile_in_loop";

/// Matches the contractions the lowering makes for tlm.linear: rows first,
/// then n, then the one reduction k innermost, f32, static n and k. Other
/// contractions (attention's, whose GQA maps use floordiv) are left alone.
/// Tensors or buffers alike: callers check which they handle.
FailureOr<ProjectionDims> matchProjection(linalg::LinalgOp op);

/// Whether `op`'s output is `linalg.fill 0` of a `tensor.empty`: its result
/// is the contraction alone, with nothing accumulated into it.
bool startsAtZero(linalg::LinalgOp op);

/// Folds `add = r + P` (elementwise, identity maps), where the projection P
/// starts at zero and only the add reads it, into P accumulating into r:
/// the add is erased and its uses take P. A sum the function returns stays
/// an add (accumulated in place into the residual, the returned buffer
/// would alias an argument and be copied out). True if it folded.
bool foldResidualAdd(linalg::GenericOp add, DominanceInfo &dom);

/// A projection's W read as the parts of a `tensor.concat` along its rows
/// (tlm-fuse-projections makes these), possibly through row slices of it
/// (tiling makes those): W's row r is row `r + Σ rowOffsets` of `concat`.
struct ConcatRows {
  tensor::ConcatOp concat;
  SmallVector<OpFoldResult> rowOffsets;
};

/// `w` as rows of a concatenation along dim 0, if it is one (or slices of
/// one that keep every column).
std::optional<ConcatRows> concatRows(Value w);

/// The RMSNorm scaling `y[rows..., k] = x[rows..., k] / rms[rows...] · g[k]`
/// as tlm-lower-to-linalg makes it (f32).
struct NormScale {
  linalg::GenericOp op;
  Value x, rms, gain;
};

/// `y` as a NormScale, if it is one.
std::optional<NormScale> matchNormScale(Value y);

/// W's rows as two slices, `[0, n - n % block)` and the rest, when the
/// projection's `n` is static, above `block` and not a multiple of it;
/// empty otherwise. (Built in front of `op`.)
SmallVector<Value> raggedRowSlices(RewriterBase &rewriter, linalg::LinalgOp op,
                                   const ProjectionDims &p, int64_t block);

/// `op` (a projection with `n` innermost in its output) as one projection
/// per part of W, `weights` in row order (row slices of W, or the inputs of
/// the concatenation W is), each computing its columns in its slice of the
/// output. Returns the parts; `op` is replaced.
SmallVector<linalg::LinalgOp> splitProjection(RewriterBase &rewriter,
                                              linalg::LinalgOp op,
                                              ValueRange weights);

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_PROJECTION_H
