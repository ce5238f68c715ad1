//===- QuantizedSplitK.h - split-k GEMV blocks on q8_0 / q4_0 ---*- C++ -*-===//
#ifndef TLM_PASSES_CPU_QUANTIZEDSPLITK_H
#define TLM_PASSES_CPU_QUANTIZEDSPLITK_H

#include "passes/common/Projection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::tlm {

/// When the static block `op` (`out[r.., c] += x[r.., k] · w[c, k]`) reads
/// w from q8_0 / q4_0 codes (quantizedRows) and `lanes` divides a block's
/// codes: the vectors per block and row, j (32 / lanes for q8_0, 16 / lanes
/// for q4_0).
std::optional<int64_t> quantizedSteps(linalg::LinalgOp op, int64_t lanes);

/// tlm-tile-matmuls' split-k partial sums for such a block, reading its rows
/// of the codes in place: the generic
///   part[r.., c, j, l] += Σ_kb x[r.., kb, j, l] · code[c, kb, j, l] · scale[c,
///   kb]
/// over the loops (r.., c, kb, j, l), k = kb·32 + j·lanes + l, kb the one
/// reduction. Each j is an accumulator of its own, so a one-column block
/// still has j independent FMA chains. For q4_0 the low and high nibbles of
/// a byte multiply the two halves of x's block (x enters twice, and j runs
/// over 16 / lanes).
linalg::GenericOp quantizedPart(OpBuilder &b, linalg::LinalgOp op,
                                const ProjectionDims &p, int64_t lanes,
                                Value part);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_QUANTIZEDSPLITK_H
