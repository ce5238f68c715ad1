//===- AttentionCore.h - the attention lowerings' shared steps --*- C++ -*-===//
//
// The scores and masking generics of tlm.attention's lowering
// (AttentionLowering.cpp), which its gradient (AttentionGradLowering.cpp)
// builds again: the same ops, so CSE merges the backward's recomputed
// probabilities with the forward's.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_ATTENTIONCORE_H
#define TLM_PASSES_CONVERSION_ATTENTIONCORE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::tlm {

/// The heads of the projections q (B, T, H·dk), k and v (B, T, KV·dk)
/// split to (B, T, n, dk), q and k rotated when `theta` is set (at
/// `positions`, or 0..T-1): what every causal attention lowering starts
/// from.
struct SplitHeads {
  Value q, k, v;
};
SplitHeads splitAndRotate(OpBuilder &b, Location loc, Value q, Value k,
                          Value v, int64_t heads, int64_t kvHeads, int64_t dk,
                          std::optional<double> theta,
                          Value positions = Value());

/// scores[batch..., i, j] = Σ_d q·k in f32, over `sizes` (batch..., Sq, Sk).
Value scoresOf(OpBuilder &b, Location loc, Value q, Value k, AffineMap qMap,
               AffineMap kMap, ArrayRef<OpFoldResult> sizes);

/// Scales the scores by 1/sqrt(headDim) and sets hidden ones to -inf: where
/// `mask` (scores-shaped) is zero, or, when `causal`, where key j lies after
/// query i + (Sk - Sq).
Value scaleAndMask(OpBuilder &b, Location loc, Value scores, int64_t headDim,
                   Value mask, bool causal);

/// The logsumexp of each row (the last dim) of f32 `scores`, masked ones
/// -inf: max + log Σ exp(x − max).
Value rowLogSumExp(OpBuilder &b, Location loc, Value scores);

/// exp(scores − lse) with `lse` of every row (rowLogSumExp's): the
/// probabilities, 0 where a score is -inf.
Value probsFromLse(OpBuilder &b, Location loc, Value scores, Value lse);

} // namespace mlir::tlm

#endif // TLM_PASSES_CONVERSION_ATTENTIONCORE_H
