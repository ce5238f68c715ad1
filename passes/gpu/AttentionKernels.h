//===- AttentionKernels.h - what the attention kernels share ---*- C++ -*-===//
//
// tlm-gpu-decode-attention and tlm-gpu-prefill-attention build their kernels
// on tensors, before the conversion, from the prologue the conversion shares
// (AttentionParts.h): the kernels read the prologue's tensors through
// read-only `to_buffer`s placed right before them and write fresh buffers
// that `to_tensor` hands back, so bufferization sees no tensor op in
// between. Their scratch lives in dynamic shared memory, not workgroup
// attributions: buffer deallocation, which runs after them, would take an
// attribution for a buffer it must track.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_ATTENTIONKERNELS_H
#define TLM_PASSES_GPU_ATTENTIONKERNELS_H

#include "passes/common/AttentionParts.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <array>

namespace mlir::tlm {

/// Threads a block may have, and the shared memory a kernel may ask for
/// (227 KiB on sm_90, past 48 KiB by the opt-in the runtime makes).
constexpr int64_t kMaxBlockThreads = 1024;
constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// What the kernels read, as buffers, and the model's shape.
struct AttentionBuffers {
  Value q;            ///< (B, S, H, dk), rotated
  Value kPast, vPast; ///< (T, B, kvH, dk)
  Value kNew, vNew;   ///< (S, B, kvH, dk): row i at position past_b + i
  Value lengths;      ///< (B) each sequence's cached positions, or null
  Value past;         ///< T
  int64_t heads, group, headDim;
};

/// The buffers of `p`'s tensors, taken at `b`'s insertion point (right
/// before the kernels that read them).
AttentionBuffers attentionBuffers(OpBuilder &b, Location loc,
                                  const CachedAttentionParts &p);

/// Whether every tensor operand of `op` is f32 (the kernels' type).
bool isF32Attention(CachedAttentionOp op);

/// Sequence `seq`'s cached positions: lengths[seq] clamped to T, as the
/// conversion reads it (`ult` against the cache's rows), or T.
Value sequencePast(OpBuilder &b, Location loc, const AttentionBuffers &in,
                   Value seq);

/// Key or value `d` of position `j` of sequence `seq`, kv head `kvh`: the
/// cache below the sequence's past, new row `j - past` from it on.
Value keyOrValue(OpBuilder &b, Location loc, Value cache, Value fresh, Value j,
                 Value past, Value seq, Value kvh, Value d);

Value f32Const(OpBuilder &b, Location loc, double v);
Value minusInfinity(OpBuilder &b, Location loc);

/// A gpu.launch of `grid` x `block` with `sharedBytes` of dynamic shared
/// memory, the builder at the start of its body.
gpu::LaunchOp makeSharedLaunch(OpBuilder &b, Location loc,
                               std::array<Value, 3> grid,
                               std::array<Value, 3> block, int64_t sharedBytes);

/// An f32 view of `shape` at `offsetFloats` into the dynamic shared memory
/// of the launch being built (`shared`: gpu.dynamic_shared_memory).
Value dynamicSharedMemory(OpBuilder &b, Location loc);
Value sharedView(OpBuilder &b, Location loc, Value shared, int64_t offsetFloats,
                 ArrayRef<int64_t> shape);

/// `op`'s three results from `out`, the kernels' (B, S, H, dk) buffer: the
/// heads merged, and the new keys and values of the prologue `p`.
SmallVector<Value> attentionResults(OpBuilder &b, CachedAttentionOp op,
                                    const CachedAttentionParts &p, Value out);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_ATTENTIONKERNELS_H
