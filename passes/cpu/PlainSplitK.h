//===- PlainSplitK.h - split-k GEMV blocks on f32 / bf16 / f16 -*- C++ -*-===//
#ifndef TLM_PASSES_CPU_PLAINSPLITK_H
#define TLM_PASSES_CPU_PLAINSPLITK_H

#include "passes/common/Projection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::tlm {

/// tlm-tile-matmuls' split-k partial sums for a static block
/// `out[r.., c] += x[r.., k] · w[c, k]` with an f32 (or bf16 / f16) w: the
/// generic part[r.., c, l] += x[r.., kb, l] · w[c, kb, l] over the loops
/// (r.., c, kb, l), k = kb·lanes + l, kb the one reduction; with `chains`
/// > 1, part[r.., c, u, l] over (r.., c, kb, u, l),
/// k = (kb·chains + u)·lanes + l, each u an accumulator of its own.
linalg::GenericOp plainPart(OpBuilder &b, linalg::LinalgOp op,
                            const ProjectionDims &p, int64_t lanes,
                            int64_t chains, Value part);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_PLAINSPLITK_H
