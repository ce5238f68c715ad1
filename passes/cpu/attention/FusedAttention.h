//===- FusedAttention.h - the fused attention loop nests --------*- C++ -*-===//
//
// Shared by FuseAttention.cpp (the pass), FusedAttention.cpp (the op's
// loop nests), AttentionBlocks.cpp (a
// vector of query rows at a time, per (batch, head)) and AttentionRows.cpp
// (the other rows one at a time, key-major over chunks of heads).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_ATTENTION_FUSEDATTENTION_H
#define TLM_PASSES_CPU_ATTENTION_FUSEDATTENTION_H

#include "passes/common/Builders.h"

#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::tlm {

/// Causal attention of q (B, S, H, dk) over the cached keys/values
/// (T, B, kvH, dk) followed by the new ones (S, B, kvH, dk), query i seeing
/// new keys 0..i; kv head = h / group. Fused loop nests, f32, result
/// (B, S, H, dk): query rows `lanes` at a time with an online softmax, the
/// rest one at a time, key-major over chunks of heads sized for `threads`.
/// With `lengths` (B), sequence b sees its first lengths[b] cached keys
/// only. See FusedAttention.cpp.
Value fusedCachedAttention(OpBuilder &b, Location loc, Value q, Value kPast,
                           Value vPast, Value k, Value v, Value lengths,
                           int64_t group, int64_t lanes, int64_t threads);

/// The cached keys sequence `batchIndex` sees: lengths[batchIndex] as an
/// index, or `past` (every one) when `lengths` is null.
Value sequencePast(OpBuilder &b, Location loc, Value lengths,
                   Value batchIndex, Value past);

/// One key/value source: (keys, values) and how to index row `j` of them.
struct KeySource {
  Value keys, values;
  /// Indices of key `j` for batch `b` and kv head `kvh` (last index 0).
  std::function<SmallVector<Value>(Value j, Value b, Value kvh)> at;
};

/// What attentionQueryBlocks works on: one (batch, head) pair.
struct QueryBlocks {
  Value q;           ///< (B, S, H, dk)
  Value out;         ///< (1, full, 1, dk): this pair's output slice
  Value batch, head; ///< indices of the pair
  Value kvHead;      ///< the kv head it reads
  KeySource past, fresh;
  Value pastCount; ///< keys in the cache before this step
  Value full;      ///< query rows done here: a multiple of lanes
  Value scale;     ///< 1 / sqrt(dk), f32
  Value lowest;    ///< the finite "minus infinity" of the row form
  int64_t lanes;   ///< query rows per block: one f32 vector of them
};

/// Causal attention of query rows [0, full) (see AttentionBlocks.cpp);
/// returns `out` with those rows written. Needs dk % lanes == 0.
Value attentionQueryBlocks(OpBuilder &b, Location loc, const QueryBlocks &a);

/// What attentionRows works on: query rows [full, S) of every head.
struct AttentionRows {
  Value q;   ///< (B, S, H, dk)
  Value out; ///< (B, S, H, dk), rows [0, full) already written
  KeySource past, fresh;
  Value pastCount;   ///< keys in the cache before this step (the most)
  Value lengths;     ///< (B) each sequence's past keys, or null (pastCount)
  Value full;        ///< the first row done here
  Value scale;       ///< 1 / sqrt(dk), f32
  Value lowest;      ///< a finite "minus infinity", f32
  int64_t group;     ///< query heads per kv head
  int64_t headChunk; ///< heads that go together (divides H)
};

/// Causal attention of query rows [full, S), key-major over each chunk of
/// heads (see AttentionRows.cpp); returns `out` with those rows written.
Value attentionRows(OpBuilder &b, Location loc, const AttentionRows &a);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_ATTENTION_FUSEDATTENTION_H
