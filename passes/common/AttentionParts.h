//===- AttentionParts.h - what the attention lowerings share ---*- C++ -*-===//
//
// RoPE tables and rotation, head splits and merges, the position-major layout
// of the KV cache, and the prologue of tlm.cached_attention: the conversion
// (AttentionLowering.cpp) and the CPU's fused form (cpu/attention/) start
// from the same values.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_ATTENTIONPARTS_H
#define TLM_PASSES_COMMON_ATTENTIONPARTS_H

#include "dialect/TlmDialect.h"

#include "mlir/IR/Builders.h"

#include <utility>

namespace mlir::tlm {

/// Cos and sin tables of shape `(tableDims..., d/2)` for the last dim `d` of
/// `x`: the angle of pair `i` at position `pos` is `pos · theta^(-2i/d)`,
/// computed in f64 and rounded once to `elem`. `tableDims` are the
/// positions' dims, or `(seq)` (dim `seqDim` of x) when the positions are
/// implicit (`offset..offset+seq-1`, offset 0 when null).
std::pair<Value, Value> ropeTables(OpBuilder &b, Location loc, Value x,
                                   int64_t seqDim, Value positions,
                                   Value offset, double theta, Type elem);

/// Rotates interleaved pairs of the last dim of `x`. Dims `0..seqDim` of `x`
/// carry positions (right-aligned with `positions` when given, which may
/// broadcast with size-1 dims); dims between `seqDim` and the last one (the
/// heads of a (B, S, H, d) tensor) share the rotation. `tables` are
/// ropeTables' (cos, sin) for x's positions.
Value applyRope(OpBuilder &b, Location loc, Value x, int64_t seqDim,
                Value positions, std::pair<Value, Value> tables);
/// applyRope with tables of its own.
Value applyRope(OpBuilder &b, Location loc, Value x, int64_t seqDim,
                Value positions, double theta, Value offset = Value());
/// RoPE on q and k, which share their positions: one pair of tables for
/// both.
std::pair<Value, Value> applyRopeQK(OpBuilder &b, Location loc, Value q,
                                    Value k, Value positions, double theta,
                                    Value offset = Value());

/// Splits the last dim of a (B, S, n·dk) tensor into (B, S, n, dk).
Value splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads,
                 int64_t dk);
/// Merges the last two dims of a 4-d tensor: (., ., n, dk) -> (., ., n·dk),
/// splitHeads' inverse (and the cache layout of position-major rows).
Value mergeHeads(OpBuilder &b, Location loc, Value x);
/// (B, S, n, dk) -> (S, B, n, dk): position-major, as the cache.
Value positionMajor(OpBuilder &b, Location loc, Value x);

/// The positions (B, S) of a step's new tokens when each sequence has its
/// own length: lengths[b] + i (in the lengths' integer type); q is
/// (B, S, ...).
Value newPositions(OpBuilder &b, Location loc, Value lengths, Value q);

/// What both forms of tlm.cached_attention compute first: the heads split,
/// the new queries and keys rotated at positions T + i, and the new keys and
/// values laid out as the cache.
struct CachedAttentionParts {
  Value q;            ///< (B, S, H, dk), rotated
  Value k, v;         ///< (B, S, kvH, dk), k rotated
  Value kPast, vPast; ///< (T, B, kvH, dk)
  Value past;         ///< T, the cached positions (index)
  Value lengths;      ///< (B), each sequence's cached positions, or null
                      ///< (then T for every sequence)
  Value kRows, vRows; ///< the new keys and values, (S, B, kvH, dk)
  Value kNew, vNew;   ///< the same in the cache layout, (S, B, kvH·dk)
  int64_t heads, kvHeads, headDim, group;
};
CachedAttentionParts splitCachedAttention(OpBuilder &b, CachedAttentionOp op);

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_ATTENTIONPARTS_H
