//===- RowReduction.h - a row sum and its epilogue in one loop --*- C++ -*-===//
//
// tlm-vectorize-elementwise's form for the row statistics the lowering
// builds: RMSNorm's Σ x² and sqrt(Σ / d + eps), its backward's Σ dy·g·x̂,
// the cross-entropy's row max and Σ exp(x − max), attention's (see
// RowReduction.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_ROWREDUCTION_H
#define TLM_PASSES_CPU_ROWREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::tlm {

/// A sum or max over the innermost dim and the elementwise op that is its
/// only reader (null when the reduction has another reader or none).
struct RowReduction {
  linalg::GenericOp sum;
  linalg::GenericOp epilogue;
};

/// Why `op` is not a row reduction this form takes, or an empty string: f32
/// on tensors, loops (rows..., k) with k the only reduction and static, a
/// multiple of `lanes`; the output read by the rows, each input whole (the
/// identity map, at least one), by the rows (one scalar a row) or by k
/// alone (one vector for every row); the payload `f(inputs) + acc` or
/// `max(f(inputs), acc)` with f elementwise on f32 (no linalg.index) and acc
/// read nowhere else.
std::string rowReductionMismatch(linalg::GenericOp op, int64_t lanes);

/// `sum` (matched) with its epilogue: the one elementwise generic reading
/// its result, all of whose other operands are unread outputs; or none.
RowReduction withEpilogue(linalg::GenericOp sum);

/// Rewrites a matched row reduction and its epilogue as one scf.forall over
/// the rows: per row, `lanes` partial results carried over k in one vector,
/// combined across lanes with the output's value for the row, the
/// epilogue's payload on that scalar, one element stored. The result replaces the epilogue's (or, without
/// one, the sum's). The sum is reassociated (lanes of partial sums, then a
/// tree), so it may differ from the sequential one in the last bits.
void fuseRowReduction(RewriterBase &rewriter, RowReduction reduction,
                      int64_t lanes);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_ROWREDUCTION_H
