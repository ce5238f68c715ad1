//===- PackedProjection.h - projections over packed panels of W -*- C++ -*-===//
//
// tlm-tile-matmuls' main form for the projections of a prompt: each panel
// of W is transposed once into a small buffer, then every full tile of rows
// runs an outer-product kernel against it (see PackedProjection.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_PACKEDPROJECTION_H
#define TLM_PASSES_CPU_PACKEDPROJECTION_H

#include "passes/common/Projection.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {

/// The register block of the packed kernel: `rows` rows of x against
/// `cols` columns of W (a multiple of `lanes`), `rows * cols / lanes`
/// vector accumulators. `bf16`: x and the packed W rounded to bf16 and
/// multiplied by AVX512-BF16's pairwise dot product (vdpbf16ps), the sums
/// f32 (tlm-tile-matmuls{bf16-dot}).
struct PackedShape {
  int64_t rows, cols, lanes;
  bool bf16 = false;
  /// q8_0 W's codes against x quantized per block of 32 to int8, four-byte
  /// dot products (vpdpbusd) summed in i32 per block, then scaled
  /// (tlm-tile-matmuls{int8-dot}).
  bool int8 = false;
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

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_PACKEDPROJECTION_H
