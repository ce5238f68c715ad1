//===- AttentionHeadLoop.h - the steps of attention's head loops -*- C++ -*-===//
//
// What the per-head attention lowerings (AttentionHeads.cpp, one (T, T)
// tile a head; AttentionBlocks.cpp, FlashAttention-2 blocks) build their
// loop bodies from: the loop over (batch, head), one head's slices, 2-D
// projections and elementwise ops marked for the CPU passes
// (kTileInLoopAttr).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_ATTENTIONHEADLOOP_H
#define TLM_PASSES_CONVERSION_ATTENTIONHEADLOOP_H

#include "passes/conversion/AttentionHeads.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tlm::heads {

/// Marks the op defining `v` for the CPU passes that skip ops in loops
/// (kTileInLoopAttr); `v` itself.
Value marked(OpBuilder &b, Value v);

/// x · Wᵀ for 2-D x and W, marked for the CPU's tiled matmuls.
Value projection2d(OpBuilder &b, Location loc, Value x, Value w);

/// acc + x · Wᵀ for 2-D x, W and acc, marked likewise.
Value accumulate2d(OpBuilder &b, Location loc, Value x, Value w, Value acc);

/// The (rows, cols) tensor `x` transposed, as a tensor of its own.
Value transpose2d(OpBuilder &b, Location loc, Value x);

/// Offsets, sizes and strides of a slice of one head.
struct HeadSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RankedTensorType type;
};

/// Head `h` of sequence `bi` in a (B, T, n, dk) tensor, as (T, dk).
HeadSlice headSlice(OpBuilder &b, Value bi, Value h, const HeadsLayout &l);

/// Rows [first, first + rows) of head `h` of sequence `bi` in a
/// (B, T, n, dk) tensor, as (rows, dk).
HeadSlice headRows(OpBuilder &b, Value bi, OpFoldResult first, int64_t rows,
                   Value h, const HeadsLayout &l);

/// Row `h` of sequence `bi` of a (B, H, T) tensor, as (T).
HeadSlice lseSlice(OpBuilder &b, Value bi, Value h, const HeadsLayout &l);

Value extractHead(OpBuilder &b, Location loc, Value x, const HeadSlice &s);
Value insertHead(OpBuilder &b, Location loc, Value part, Value into,
                 const HeadSlice &s);

/// `into`'s slice `s` plus `part`, put back.
Value addToHead(OpBuilder &b, Location loc, Value part, Value into,
                const HeadSlice &s);

/// Empty tensors for attention's output (q's shape) and its row
/// logsumexps (B, H, T): what the forward loops over heads fill.
SmallVector<Value> outputAndLse(OpBuilder &b, Location loc, Value q,
                                const HeadsLayout &l);

/// Zero-filled f32 tensors the shapes of `values`: the backward loops'
/// dQ, dK and dV before the heads add into them.
SmallVector<Value> zerosLike(OpBuilder &b, Location loc, ValueRange values);

using HeadBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value bi, Value h, Value kvh, ValueRange acc)>;

/// for bi < B, h < H: acc = body(bi, h, h / G, acc).
SmallVector<Value> forEachHead(OpBuilder &b, Location loc,
                               const HeadsLayout &l, ValueRange init,
                               HeadBody body);

/// attentionLseByHeads and attentionGradByHeads in blocks of `l.block`
/// queries and keys (AttentionBlocks.cpp); `l.block` divides `l.seq`.
std::pair<Value, Value> attentionLseByBlocks(OpBuilder &b, Location loc,
                                             Value q, Value k, Value v,
                                             const HeadsLayout &l);
SmallVector<Value> attentionGradByBlocks(OpBuilder &b, Location loc, Value q,
                                         Value k, Value v, Value out,
                                         Value lse, Value dO,
                                         const HeadsLayout &l);

} // namespace mlir::tlm::heads

#endif // TLM_PASSES_CONVERSION_ATTENTIONHEADLOOP_H
