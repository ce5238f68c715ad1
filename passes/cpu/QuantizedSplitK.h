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
///   part[r.., c, l] += Σ_kb scale[c, kb] · Σ_j x[r.., kb, j, l] · code[c,
///   kb, j, l]
/// over the loops (r.., c, kb, l), k = kb·32 + j·lanes + l, kb the one
/// reduction: a block's j vectors are summed before its scale multiplies
/// them. For q4_0 the low and high nibbles of a byte multiply the two halves
/// of x's block (and j runs over 16 / lanes). With `chains` > 1 each step of
/// kb takes that many consecutive blocks u, each summed apart:
/// part[r.., c, u, l] over the loops (r.., c, kb, u, l),
/// k = (kb·chains + u)·32 + j·lanes + l.
/// `offsets`, for q4_0 only and optional: q4Offsets of this block's x.
/// With `prefetchBytes` > 0, the block first prefetches the codes of the
/// rows that many bytes of codes ahead of its own (memref.prefetch on the
/// codes' buffer): on a one-column GEMV streaming W from memory, the
/// hardware prefetcher alone kept too few lines in flight (q8_0 decoded
/// faster with it, q4_0 a little; f32 and bf16 rows, one stream each,
/// decoded slower with it: docs/cpu-codegen.md#prefetching-codes).
linalg::GenericOp quantizedPart(OpBuilder &b, linalg::LinalgOp op,
                                const ProjectionDims &p, int64_t lanes,
                                int64_t chains, Value part,
                                Value offsets = nullptr,
                                int64_t prefetchBytes = 0);

/// Whether the projection `op` reads its w from q4_0 codes.
bool readsQ4(linalg::LinalgOp op);

/// For x (r.., k) of a q4_0 projection: -8 · (x_lo + x_hi) for each lane
/// of each 32-weight block's two halves, (r.., k / 2). The same for every
/// column of w: made once per row, before the columns are blocked, it lets
/// quantizedPart multiply the nibbles as they are.
Value q4Offsets(OpBuilder &b, Location loc, Value x);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_QUANTIZEDSPLITK_H
