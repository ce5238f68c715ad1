//===- AttentionHeads.h - attention as a loop over its heads ----*- C++ -*-===//
//
// The form of tlm.attention and tlm.attention_grad when the sequence length
// is static (training compiles for its batch and sequence): a loop over
// (batch, head) whose body works on one head's (T, d_k) slices with 2-D
// projections (marked kTileInLoopAttr, so the CPU's tiled matmuls take
// them) and one (T, T) tile of scores at a time, not a (B, H, T, T) tensor.
// The backward recomputes each head's probabilities from Q and K rather than
// keeping the forward's.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_ATTENTIONHEADS_H
#define TLM_PASSES_CONVERSION_ATTENTIONHEADS_H

#include "mlir/IR/Builders.h"

#include <optional>
#include <utility>

namespace mlir::tlm {

/// Q (B, T, H, dk), K and V (B, T, KV, dk), rotated already, all static.
struct HeadsLayout {
  int64_t batch, seq, heads, kvHeads, headDim;
  /// Queries and keys per block; `seq` for one (T, T) tile a head.
  int64_t block;
};

/// Whether the heads form applies: q (B, T, H, dk) with every size static.
/// Its block is the largest divisor of T up to `blockCap` (at least 8,
/// else T; 0: no blocks).
std::optional<HeadsLayout> staticHeads(Value q, Value k, int64_t blockCap);

/// softmax(Q Kᵀ / sqrt(dk) + causal mask) V per head: (B, T, H, dk), f32.
Value attentionByHeads(OpBuilder &b, Location loc, Value q, Value k, Value v,
                       const HeadsLayout &layout);

/// attentionByHeads' output with each row's logsumexp (B, H, T), the
/// probabilities computed as exp(S − lse).
std::pair<Value, Value> attentionLseByHeads(OpBuilder &b, Location loc,
                                            Value q, Value k, Value v,
                                            const HeadsLayout &layout);

/// dQ, dK, dV (the rotated Q's and K's gradients, not rotated back) of
/// attentionLseByHeads for the output gradient dO (B, T, H, dk), from its
/// output `out` (B, T, H, dk) and `lse`; a kv head's dK and dV sum over its
/// query heads.
SmallVector<Value> attentionGradByHeads(OpBuilder &b, Location loc, Value q,
                                        Value k, Value v, Value out, Value lse,
                                        Value dO, const HeadsLayout &layout);

} // namespace mlir::tlm

#endif // TLM_PASSES_CONVERSION_ATTENTIONHEADS_H
