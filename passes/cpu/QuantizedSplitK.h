//===- QuantizedSplitK.h - split-k GEMV blocks on q8_0 / q4_0 ---*- C++ -*-===//
#ifndef TLM_PASSES_CPU_QUANTIZEDSPLITK_H
#define TLM_PASSES_CPU_QUANTIZEDSPLITK_H

#include "passes/common/Projection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::tlm {

/// tlm-tile-matmuls' split-k partial sums for a static block
/// `out[r.., c] += x[r.., k] · w[c, k]` whose w is read from q8_0 / q4_0
/// codes (quantizedRows), and the loops it steps one at a time.
struct QuantizedPart {
  linalg::GenericOp op;
  SmallVector<int64_t> stepLoops;
};

/// The generic `part[r.., c, l] += Σ x · code · scale` over the loops
/// (r.., c, kb, j, l), k = kb·32 + j·lanes + l, reading the block's rows of
/// the codes in place, into `part` (r.., c, lanes); kb and j are its steps.
/// For q4_0 the low and high nibbles of a byte multiply the two halves of
/// x's block, so x enters twice. None when w is not quantized or `lanes`
/// does not divide the codes of a block.
std::optional<QuantizedPart> quantizedPart(OpBuilder &b, linalg::LinalgOp op,
                                           const ProjectionDims &p,
                                           int64_t lanes, Value part);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_QUANTIZEDSPLITK_H
